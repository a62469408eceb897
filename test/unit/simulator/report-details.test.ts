import { describe, expect, it } from 'vitest';
import { computeIdle, evictionRows, evictionSeries, poolRows } from '../../../shared/simulator/breakdown.ts';
import { budgetHolds, kindOf, NODE_HOLD_NOTE, nodeHolds } from '../../../shared/simulator/holds.ts';
import { CHART_IDS, EVICTION_COLOURS, renderHtmlReport } from '../../../shared/simulator/html-report.ts';
import { idleShare, type NodeUse, poolSamples } from '../../../shared/simulator/idle.ts';
import type { SimPoolSample, SimSample, SimulationRecord } from '../../../shared/simulator/record.ts';
import { formatClock, formatRunTime, spansDays } from '../../../shared/simulator/stats.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { emptyRecord, START_MS } from './records.ts';

// The report's idle capacity, NodePool breakdown, evictions and blocked disruptions, figured by
// hand on small records.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const GIB = 1024 ** 3;

const node = (
  nodePool: string,
  pricePerHour: number,
  allocatable: [number, number] | undefined,
  requested: [number, number],
): NodeUse => ({
  nodePool,
  pricePerHour,
  ...(allocatable === undefined
    ? {}
    : { allocatable: { cpuMillis: allocatable[0], memoryBytes: allocatable[1] } }),
  requested: { cpuMillis: requested[0], memoryBytes: requested[1] },
});

const sample = (atMs: number, costPerHour: number, idleCostPerHour: number): SimSample => ({
  atMs,
  nodes: 1,
  nodesByCapacityType: { 'on-demand': 1 },
  costPerHour,
  pendingPods: 0,
  runningPods: 1,
  idleCostPerHour,
});

/** A NodePool's sample with its nodes and costs (requests and allocatable left at 0). */
const poolSample = (nodes: number, costPerHour: number, idleCostPerHour: number): SimPoolSample => ({
  nodes,
  costPerHour,
  idleCostPerHour,
  cpuMillisRequested: 0,
  cpuMillisAllocatable: 0,
  memoryBytesRequested: 0,
  memoryBytesAllocatable: 0,
});

const record = (parts: Partial<SimulationRecord>, durationMs = 6 * HOUR): SimulationRecord => ({
  ...emptyRecord(),
  scenario: { name: 'small', region: 'us-east-1', startMs: START_MS, durationMs },
  ...parts,
});

describe('idle capacity', () => {
  it.each([
    ['memory the busier', node('a', 0.2, [4000, 16 * GIB], [1000, 12 * GIB]), 0.25],
    ['cpu the busier', node('a', 0.1, [2000, 8 * GIB], [500, 1 * GIB]), 0.75],
    ['full on cpu, memory left', node('a', 0.1, [2000, 8 * GIB], [2000, 1 * GIB]), 0],
    ['requests past allocatable', node('a', 0.1, [2000, 8 * GIB], [3000, 0]), 0],
    ['nothing requested', node('a', 0.1, [2000, 8 * GIB], [0, 0]), 1],
    ['not registered yet', node('a', 0.1, undefined, [0, 0]), 1],
  ])('a node with %s is idle for %s of its price', (_, use, share) => {
    expect(idleShare(use)).toBeCloseTo(share, 10);
  });

  it('sums each NodePool: price × idle share per node, requested and allocatable of registered nodes', () => {
    const pools = poolSamples([
      node('a', 0.2, [4000, 16 * GIB], [1000, 12 * GIB]), // idle 0.25 × 0.20 = 0.05
      node('a', 0.1, [2000, 8 * GIB], [2000, 1 * GIB]), // full on cpu: 0
      node('b', 0.4, undefined, [0, 0]), // booting: all 0.40
      node('b', 0.3, [4000, 16 * GIB], [0, 0]), // empty: all 0.30
    ]);
    expect(pools).toEqual({
      a: {
        nodes: 2,
        costPerHour: 0.3,
        idleCostPerHour: 0.05,
        cpuMillisRequested: 3000,
        cpuMillisAllocatable: 6000,
        memoryBytesRequested: 13 * GIB,
        memoryBytesAllocatable: 24 * GIB,
      },
      b: {
        nodes: 2,
        costPerHour: 0.7,
        idleCostPerHour: 0.7,
        cpuMillisRequested: 0,
        cpuMillisAllocatable: 4000,
        memoryBytesRequested: 0,
        memoryBytesAllocatable: 16 * GIB,
      },
    });
  });

  it('averages idle $/hour over the samples, finds its peak, its share of the spend and its dollars', () => {
    const r = record(
      {
        samples: [
          sample(START_MS, 0.4, 0.1),
          sample(START_MS + 20 * MINUTE, 0.6, 0.3),
          sample(START_MS + 40 * MINUTE, 0.4, 0.2),
        ],
      },
      HOUR,
    );
    const idle = computeIdle(r);
    expect(idle?.avgPerHour).toBeCloseTo(0.2, 10);
    expect(idle?.maxPerHour).toBe(0.3);
    expect(idle?.maxAtMs).toBe(START_MS + 20 * MINUTE);
    expect(idle?.share).toBeCloseTo(0.6 / 1.4, 10);
    // 0.1, 0.3 and 0.2 $/hour for 20 minutes each.
    expect(idle?.totalUsd).toBeCloseTo(0.2, 10);
    expect(renderSummary(r)).toContain(
      'Idle capacity ($/hour of the nodes no pod requests): avg $0.2000  peak $0.3000 at 00:20  idle share 43% of the spend, $0.2000 over the run\n',
    );
    const chart = /<svg id="chart-idle"[\s\S]*?<\/svg>/.exec(renderHtmlReport(r))?.[0] ?? '';
    expect(chart).toContain('<title>Idle capacity over time ($/hour of the nodes no pod requests)</title>');
    expect(chart).toContain('>$0.30<');
  });

  it('says nothing of idle capacity for a record whose samples have no idle figures', () => {
    const { idleCostPerHour: _, ...bare } = sample(START_MS, 0.4, 0);
    const r = record({ samples: [bare] });
    expect(computeIdle(r)).toBeUndefined();
    expect(renderHtmlReport(r)).not.toContain(CHART_IDS.idle);
  });
});

/** A disruption pass every minute from `fromMin` to `toMin` (excluded) with these fields. */
const passes = (fromMin: number, toMin: number, fields: Record<string, unknown>) =>
  Array.from({ length: toMin - fromMin }, (_, i) => ({
    atMs: START_MS + (fromMin + i) * MINUTE,
    message: 'disruption pass',
    decision: 'disruptionPass',
    reason: 'blocked',
    budgetBlocked: [],
    ...fields,
  }));

describe('blocked disruptions', () => {
  it('reports a budget that held consolidation for 8 hours in one line, with its passes and span', () => {
    const r = record(
      {
        decisions: [
          ...passes(0, 240, { budgetBlocked: ['default/Underutilized'] }),
          // A pass that found the lease held looked at nothing: it does not break the hold.
          ...passes(240, 241, { reason: 'lease held' }),
          ...passes(241, 481, { budgetBlocked: ['default/Underutilized'] }),
          ...passes(481, 540, { reason: 'nothing to do' }),
        ].sort((a, b) => a.atMs - b.atMs),
      },
      9 * HOUR,
    );
    expect(budgetHolds(r)).toEqual([
      {
        key: 'default/Underutilized',
        nodePool: 'default',
        reason: 'Underutilized',
        passes: 480,
        heldMs: 481 * MINUTE,
        firstAtMs: START_MS,
        untilMs: START_MS + 481 * MINUTE,
        atEnd: false,
      },
    ]);
    const text = renderSummary(r);
    expect(text).toContain(
      'Disruptions blocked:\n  budget default/Underutilized held Underutilized disruptions for 8h01m over 480 passes (00:00 to 08:01)\n',
    );
    expect(text.match(/default\/Underutilized/g)).toHaveLength(1);
    expect(renderHtmlReport(r)).toContain(
      '<h3>Budgets that allowed no disruption</h3>\n<table>\n<tr><th>NodePool/reason</th><th>held for</th><th>passes</th><th>from</th><th>until</th></tr>\n<tr><td>default/Underutilized</td><td>8h01m</td><td>480</td><td>00:00</td><td>08:01</td></tr>',
    );
  });

  it('adds up a budget held in several stretches, and one still holding at the end', () => {
    const r = record(
      {
        decisions: [
          ...passes(0, 30, { budgetBlocked: ['gpu/Drifted'] }),
          ...passes(30, 60, { reason: 'nothing to do' }),
          ...passes(60, 90, { budgetBlocked: ['gpu/Drifted'] }),
        ],
      },
      2 * HOUR,
    );
    expect(budgetHolds(r)).toMatchObject([
      { key: 'gpu/Drifted', passes: 60, heldMs: 30 * MINUTE + 60 * MINUTE, atEnd: true },
    ]);
    expect(renderSummary(r)).toContain(
      '  budget gpu/Drifted held Drifted disruptions for 1h30m over 60 passes (00:00 to the end)\n',
    );
  });

  it('groups held nodes by kind of reason: do-not-disrupt node and pod, PDB, not cheaper', () => {
    const keep = (atMin: number, nodeClaim: string, reason: string) => ({
      atMs: START_MS + atMin * MINUTE,
      decision: 'unconsolidatable',
      reason,
      nodeClaim,
      node: `node-${nodeClaim}`,
      nodePool: 'default',
    });
    const r = record({
      launches: ['n1', 'n2', 'n3', 'n4', 'n5'].map((nodeClaim) => ({
        atMs: START_MS,
        nodeClaim,
        nodePool: 'default',
        instanceType: 'm6i.xlarge',
        capacityType: 'on-demand' as const,
        zone: 'us-east-1a',
        pricePerHour: 0.192,
      })),
      // n1: a PDB from 1h until its reason changes at 3h, then not cheaper until terminated at 4h.
      // n2: a do-not-disrupt pod from 2h to the end (6h). n4: not cheaper from 5h until a command takes it at 5h30.
      // n3: the node's own annotation, named by the passes of the first hour.
      decisions: [
        ...passes(0, 60, {
          excluded: [{ nodeClaim: 'n3', node: 'node-n3', why: 'node has karpenter.sh/do-not-disrupt' }],
        }),
        keep(60, 'n1', 'pdb apps/web prevents pod evictions'),
        keep(120, 'n2', 'pod apps/batch-0 has karpenter.sh/do-not-disrupt'),
        keep(180, 'n1', "can't replace with a cheaper node"),
        keep(300, 'n4', 'replacements cost $0.3840/h, more than 100% of $0.1920/h'),
        {
          atMs: START_MS + 330 * MINUTE,
          decision: 'disrupt',
          outcome: 'started',
          method: 'single-node',
          candidates: [{ nodeClaim: 'n4' }],
        },
        ...passes(60, 61, {}),
      ],
      terminations: [
        { atMs: START_MS + 240 * MINUTE, nodeClaim: 'n1', instanceType: 'm6i.xlarge', reason: 'terminated' },
      ],
    });
    expect(nodeHolds(r)).toEqual([
      {
        kind: 'a pod has karpenter.sh/do-not-disrupt',
        example: 'pod apps/batch-0 has karpenter.sh/do-not-disrupt',
        nodeClaims: ['n2'],
        nodePools: ['default'],
        heldMs: 4 * HOUR,
        longestMs: 4 * HOUR,
      },
      {
        kind: 'a PodDisruptionBudget allows no eviction',
        example: 'pdb apps/web prevents pod evictions',
        nodeClaims: ['n1'],
        nodePools: ['default'],
        heldMs: 2 * HOUR,
        longestMs: 2 * HOUR,
      },
      {
        kind: 'no cheaper replacement',
        example: "can't replace with a cheaper node",
        nodeClaims: ['n1', 'n4'],
        nodePools: ['default'],
        heldMs: 90 * MINUTE,
        longestMs: HOUR,
      },
      {
        kind: 'node has karpenter.sh/do-not-disrupt',
        example: 'node has karpenter.sh/do-not-disrupt',
        nodeClaims: ['n3'],
        nodePools: ['default'],
        heldMs: HOUR,
        longestMs: HOUR,
      },
    ]);
    const text = renderSummary(r);
    expect(text).toContain(
      [
        '  1 node held: a pod has karpenter.sh/do-not-disrupt, 4h00m of node time, longest 4h00m, e.g. "pod apps/batch-0 has karpenter.sh/do-not-disrupt"',
        '  1 node held: a PodDisruptionBudget allows no eviction, 2h00m of node time, longest 2h00m, e.g. "pdb apps/web prevents pod evictions"',
        '  2 nodes held: no cheaper replacement, 1h30m of node time, longest 1h00m, e.g. "can\'t replace with a cheaper node"',
        '  1 node held: node has karpenter.sh/do-not-disrupt, 1h00m of node time, longest 1h00m',
        `  ${NODE_HOLD_NOTE}`,
      ].join('\n'),
    );
  });
});

describe('the kinds of reasons nodes are held for', () => {
  it.each([
    ['node has karpenter.sh/do-not-disrupt', 'node has karpenter.sh/do-not-disrupt'],
    [
      'pod a/b has karpenter.sh/do-not-disrupt until 2026-01-01T01:00:00.000Z',
      'a pod has karpenter.sh/do-not-disrupt',
    ],
    ['pdb apps/web prevents pod evictions', 'a PodDisruptionBudget allows no eviction'],
    [
      'pod a/b matches 2 PodDisruptionBudgets (x, y); eviction supports one',
      'a PodDisruptionBudget allows no eviction',
    ],
    ['a replacement would be no cheaper than the candidate of its type', 'no cheaper replacement'],
    ['replacements cost $0.3840/h, more than 90% of $0.1920/h', 'no cheaper replacement'],
    ['pending pods would need 3 new nodes', 'its pods would have no place or need new nodes'],
    ['6 pods would have no place', 'its pods would have no place or need new nodes'],
    [
      'spot-to-spot consolidation is off (spotToSpotConsolidation): spot nodes are only deleted',
      'spot-to-spot consolidation is off',
    ],
    ['something new', 'something new'],
  ])('"%s" is of kind "%s"', (why, kind) => {
    expect(kindOf(why)).toBe(kind);
  });
});

describe('evictions and NodePools', () => {
  const drain = (atMin: number, nodeClaim: string, reason: string, fields: Record<string, unknown>) => ({
    atMs: START_MS + atMin * MINUTE,
    decision: 'drain',
    reason,
    nodeClaim,
    nodePool: nodeClaim.split('-')[0],
    ...fields,
  });
  const launchDecision = (nodeClaim: string, outcome: string, podCount: number) => ({
    atMs: START_MS,
    decision: 'launch',
    reason: 'provisioning',
    outcome,
    nodePool: nodeClaim.split('-')[0],
    nodeClaim,
    podCount,
  });
  const launch = (nodeClaim: string, pricePerHour: number) => ({
    atMs: START_MS,
    nodeClaim,
    nodePool: nodeClaim.split('-')[0] ?? '',
    instanceType: 'm6i.xlarge',
    capacityType: 'on-demand' as const,
    zone: 'us-east-1a',
    pricePerHour,
  });
  const r = record(
    {
      launches: [launch('web-1', 0.2), launch('web-2', 0.2), launch('gpu-1', 1)],
      samples: [0, 1].map((i) => ({
        ...sample(START_MS + i * 30 * MINUTE, i === 0 ? 1.4 : 1.2, i === 0 ? 0.5 : 0.1),
        nodePools: {
          web: poolSample(2 - i, 0.4 - 0.2 * i, 0.3 - 0.2 * i),
          gpu: poolSample(1, 1, 0.2 - 0.2 * i),
        },
      })),
      disruptions: [{ atMs: START_MS + 20 * MINUTE, nodeClaim: 'web-2', reason: 'Underutilized' }],
      unschedulable: [
        {
          namespace: 'a',
          name: 'big',
          reasons: [
            'nodePool web: no instance type has 512 cpu; nodePool gpu skipped: NodePool is not Ready',
          ],
        },
        { namespace: 'a', name: 'capped', reasons: ['nodePool batch: limits exceeded (cpu)'] },
        { namespace: 'a', name: 'odd', reasons: ['no NodePool matches'] },
      ],
      interruptions: [
        {
          atMs: START_MS + 40 * MINUTE,
          kind: 'spot-interruption',
          instanceId: 'i-9',
          nodeClaim: 'gpu-1',
          handled: true,
        },
      ],
      decisions: [
        launchDecision('web-1', 'launched', 5),
        launchDecision('web-2', 'insufficientCapacity', 3),
        launchDecision('web-2', 'launched', 3),
        launchDecision('gpu-1', 'launched', 1),
        {
          atMs: START_MS + 20 * MINUTE,
          decision: 'disrupt',
          outcome: 'started',
          method: 'single-node',
          candidates: [{ nodeClaim: 'web-2' }],
        },
        drain(21, 'web-2', 'Underutilized', { action: 'evict', evicted: 2, blocked: 1 }),
        drain(22, 'web-2', 'Underutilized', { action: 'evict', evicted: 1, blocked: 0 }),
        drain(41, 'gpu-1', 'SpotInterruption', { action: 'evict', evicted: 0, blocked: 0 }),
        drain(43, 'gpu-1', 'SpotInterruption', { action: 'forceDelete', podCount: 1 }),
      ],
    },
    HOUR,
  );

  it('counts evicted pods by reason and method, with nodes and first and last times', () => {
    expect(evictionRows(r)).toEqual([
      {
        reason: 'Underutilized',
        method: 'single-node',
        evicted: 3,
        forceDeleted: 0,
        nodes: 1,
        firstAtMs: START_MS + 21 * MINUTE,
        lastAtMs: START_MS + 22 * MINUTE,
      },
      {
        reason: 'SpotInterruption',
        method: '-',
        evicted: 0,
        forceDeleted: 1,
        nodes: 1,
        firstAtMs: START_MS + 43 * MINUTE,
        lastAtMs: START_MS + 43 * MINUTE,
      },
    ]);
    // Samples at 0 and 30 minutes: the Underutilized evictions are in the second.
    expect(evictionSeries(r)).toEqual([
      { reason: 'SpotInterruption', values: [0, 0] },
      { reason: 'Underutilized', values: [0, 3] },
    ]);
    expect(renderSummary(r)).toContain(
      [
        'Evictions: 4 pods (Underutilized 3, SpotInterruption 1)',
        '  reason                 method  evicted  force-deleted  nodes  first   last',
        '  Underutilized     single-node        3              0      1  00:21  00:22',
        '  SpotInterruption            -        0              1      1  00:43  00:43',
      ].join('\n'),
    );
    const html = renderHtmlReport(r);
    const chart = /<svg id="chart-evictions"[\s\S]*?<\/svg>/.exec(html)?.[0] ?? '';
    expect(chart).toContain('<title>Pods evicted over time, by reason</title>');
    // One line per reason, in name order, each in its colour and used nowhere else on the page.
    expect(chart).toContain(`stroke="${EVICTION_COLOURS[0]}"`);
    expect(chart).toContain(`stroke="${EVICTION_COLOURS[1]}"`);
    const outside = html.replace(/<svg id="chart-[\s\S]*?<\/svg>/g, '');
    for (const colour of EVICTION_COLOURS) expect(outside).not.toContain(colour);
    expect(html).toContain('<h2>Pods evicted: 4</h2>');
  });

  it('breaks the run down per NodePool: launches, failures, pods, nodes, cost, idle cost, disruptions', () => {
    expect(poolRows(r)).toEqual([
      {
        nodePool: 'batch',
        launches: 0,
        failedLaunches: 0,
        podsLaunchedFor: 0,
        podsLeftPending: 1,
        peakNodes: 0,
        avgCostPerHour: 0,
        peakCostPerHour: 0,
        avgIdleCostPerHour: 0,
        disruptions: [],
      },
      {
        nodePool: 'gpu',
        launches: 1,
        failedLaunches: 0,
        podsLaunchedFor: 1,
        podsLeftPending: 1,
        peakNodes: 1,
        avgCostPerHour: 1,
        peakCostPerHour: 1,
        avgIdleCostPerHour: 0.1,
        disruptions: [{ reason: 'Interrupted', count: 1 }],
      },
      {
        nodePool: 'web',
        launches: 2,
        failedLaunches: 1,
        podsLaunchedFor: 8,
        podsLeftPending: 1,
        peakNodes: 2,
        avgCostPerHour: expect.closeTo(0.3, 10),
        peakCostPerHour: 0.4,
        avgIdleCostPerHour: expect.closeTo(0.2, 10),
        disruptions: [{ reason: 'Underutilized', count: 1 }],
      },
    ]);
    expect(renderSummary(r)).toContain(
      [
        'NodePools: 3',
        '  nodepool  launches  failed  pods launched for  pods left pending  peak nodes  avg $/hour  peak $/hour  idle $/hour        disrupted',
        '  batch            0       0                  0                  1           0     $0.0000      $0.0000      $0.0000             none',
        '  gpu              1       0                  1                  1           1       $1.00        $1.00      $0.1000    Interrupted 1',
        '  web              2       1                  8                  1           2     $0.3000      $0.4000      $0.2000  Underutilized 1',
      ].join('\n'),
    );
    expect(renderHtmlReport(r)).toContain(
      '<tr><td>web</td><td>2</td><td>1</td><td>8</td><td>1</td><td>2</td><td>$0.3000</td><td>$0.4000</td><td>$0.2000</td><td>Underutilized 1</td></tr>',
    );
  });
});

describe('times in UTC', () => {
  it('shows times of day, with the date when the run spans days', () => {
    const oneDay = record({}, 6 * HOUR);
    const twoDays = record({}, 30 * HOUR);
    expect(spansDays(oneDay)).toBe(false);
    expect(spansDays(twoDays)).toBe(true);
    expect(formatRunTime(oneDay, START_MS + 90 * MINUTE)).toBe('01:30');
    expect(formatRunTime(twoDays, START_MS + 26 * HOUR)).toBe('2025-03-04 02:00');
    expect(formatClock(START_MS + 61_000, { seconds: true })).toBe('00:01:01');
  });

  it('puts UTC times on the chart axis, the date under the first tick of each day', () => {
    const r = record(
      { samples: [0, 10, 20, 30].map((h) => sample(START_MS + h * HOUR, 0.1, 0.05)) },
      30 * HOUR,
    );
    const nodes = /<svg id="chart-nodes"[\s\S]*?<\/svg>/.exec(renderHtmlReport(r))?.[0] ?? '';
    expect(nodes).toContain('>time (UTC, hh:mm)<');
    // Ticks every 3 hours over 30 hours: 00:00 … 21:00, then 00:00 … 06:00 of the next day.
    expect(nodes.match(/>2025-03-03</g)).toHaveLength(1);
    expect(nodes.match(/>2025-03-04</g)).toHaveLength(1);
    expect(nodes.match(/>00:00</g)).toHaveLength(2);
    expect(nodes).toContain('>21:00<');
  });
});
