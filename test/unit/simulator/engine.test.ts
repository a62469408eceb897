import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario, parseScenario } from '../../../shared/simulator/scenario.ts';
import { nearestRank } from '../../../shared/simulator/stats.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { defaultPoolYaml } from './scenarios.ts';

const examples = path.resolve(import.meta.dirname, '../../../examples');
const records = new Map<string, Promise<SimulationRecord>>();

/** One run per example, shared by the tests that look at it. */
function run(name: string): Promise<SimulationRecord> {
  let record = records.get(name);
  if (record === undefined) {
    record = simulate(loadScenario(path.join(examples, `${name}.yaml`)));
    records.set(name, record);
  }
  return record;
}

const minutes = (record: SimulationRecord, atMs: number) => (atMs - record.scenario.startMs) / 60_000;
const family = (instanceType: string) => instanceType.split('.')[0] ?? '';
const last = <T>(list: readonly T[]): T | undefined => list[list.length - 1];

// Every example's three runs are compared in `npm run bench:sim`; here one example, the cheapest
// (a few seconds of simulation), run twice.
describe.each(['spot-storm'])('example %s', (name) => {
  it('gives the same record on every run', async () => {
    const first = await run(name);
    const again = await simulate(loadScenario(path.join(examples, `${name}.yaml`)));
    expect(again).toEqual(first);
    expect(first.samples.length).toBe(first.scenario.durationMs / 30_000 + 1);
    expect(
      first.decisions.every((d) => typeof d['atMs'] === 'number' && typeof d['message'] === 'string'),
    ).toBe(true);
    // Two whole simulated runs of an example: a cap for a stuck run on a busy machine, not a
    // speed check.
  }, 120_000);
});

/** A Deployment of one 1-cpu pod, the workload of the small interruption scenarios. */
const ONE_WEB_POD = `workloads:
  - kind: Deployment
    name: web
    replicas: 1
    template:
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
`;

describe('the example scenarios', () => {
  it('steady-web: every pod runs, on spot and on-demand nodes, and the interrupted pods run again', async () => {
    const r = await run('steady-web');
    expect(r.unschedulable).toEqual([]);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 14 });
    expect(new Set(r.launches.map((l) => l.capacityType))).toEqual(new Set(['spot', 'on-demand']));
    expect(new Set(r.launches.map((l) => l.instanceType)).size).toBeGreaterThan(1);
    for (const l of r.launches) expect(l.capacityType).toBe(l.nodePool === 'spot' ? 'spot' : 'on-demand');
    expect(r.interruptions).toHaveLength(1);
    expect(r.interruptions[0]).toMatchObject({ kind: 'spot-interruption', handled: true });
    // The interrupted node, nodes the scale-downs at 28m and 30m left empty, and nodes
    // consolidation removed or replaced after them.
    expect(r.terminations.filter((t) => t.reason !== 'empty' && t.reason !== 'underutilized')).toEqual([
      expect.objectContaining({ reason: 'interruption', nodeClaim: r.interruptions[0]?.nodeClaim }),
    ]);
    // The drain evicts the pods at the warning; their replacements launch while it goes on, and
    // the termination terminates the instance before EC2 reclaims it two minutes later.
    const interruptedAt = r.interruptions[0]?.atMs ?? 0;
    const terminatedAt = r.terminations[0]?.atMs ?? 0;
    expect(terminatedAt).toBeLessThan(interruptedAt + 120_000);
    expect(
      r.launches.some((l) => l.nodePool === 'spot' && l.atMs >= interruptedAt && l.atMs < terminatedAt),
    ).toBe(true);
    const claim = r.interruptions[0]?.nodeClaim;
    const about = r.decisions.filter(
      (d) => d['nodeClaim'] === claim && (d['atMs'] as number) >= interruptedAt,
    );
    expect(about.map((d) => d['message'])).toEqual(
      expect.arrayContaining([
        'spot interruption warning',
        'interruption handled',
        'tainted node',
        'drain step',
        'instance terminated',
        'node finalized',
        'deleted nodeclaim',
      ]),
    );
    expect(about.find((d) => d['message'] === 'interruption handled')).toMatchObject({
      decision: 'handleInterruption',
      interruption: 'spotInterruption',
      action: 'cordonAndDrain',
      reason: 'SpotInterrupted',
    });
    expect(about.find((d) => d['message'] === 'drain step')).toMatchObject({
      decision: 'drain',
      action: 'evict',
      reason: 'SpotInterruption',
    });
    expect(r.decisions.some((d) => d['message'] === 'instance reclaimed')).toBe(false);
    // Every pod waited for a node to boot (45s), none much longer.
    expect(nearestRank(r.podWaitsMs, 50)).toBeGreaterThanOrEqual(45_000);
    expect(nearestRank(r.podWaitsMs, 95)).toBeLessThan(120_000);
    const messages = new Set(r.decisions.map((d) => d['message']));
    for (const m of ['launch decided', 'registered nodeclaim', 'initialized nodeclaim']) {
      expect(messages).toContain(m);
    }
    // The first test to read steady-web runs it (about 20 s of simulation): a cap for a stuck run
    // on a busy machine, not a speed check.
  }, 120_000);

  it('steady-web: each launch decision names the instance and the $/hour the report counts', async () => {
    const r = await run('steady-web');
    const key = (nodeClaim: unknown, instanceType: unknown, price: unknown) =>
      `${String(nodeClaim)} ${String(instanceType)} ${String(price)}`;
    const decided = r.decisions
      .filter((d) => d['decision'] === 'launch' && d['outcome'] === 'launched')
      .map((d) => key(d['nodeClaim'], d['instanceType'], d['pricePerHour']));
    expect(decided.sort()).toEqual(
      r.launches.map((l) => key(l.nodeClaim, l.instanceType, l.pricePerHour)).sort(),
    );
  });

  it('gpu-jobs: GPU jobs land on GPU instance types, the CPU service never does', async () => {
    const r = await run('gpu-jobs');
    const gpu = r.launches.filter((l) => l.nodePool === 'gpu');
    const general = r.launches.filter((l) => l.nodePool === 'general');
    expect(gpu.length).toBeGreaterThan(0);
    for (const l of gpu) expect(['g5', 'g6', 'p4d']).toContain(family(l.instanceType));
    expect(general.length).toBeGreaterThan(0);
    for (const l of general) expect(family(l.instanceType)).toMatch(/^[cm]\d/);
    // 3 service replicas, 4 fine-tuning and 12 inference pods: the GPU limit leaves room for a
    // 1-GPU node per inference pod, so they get one at once and consolidation has none to move.
    const moved = r.decisions
      .filter(
        (d) => d['decision'] === 'disrupt' && d['outcome'] === 'started' && d['reason'] === 'Underutilized',
      )
      .reduce((n, d) => n + Number(d['podsMoved']), 0);
    expect(moved).toBe(0);
    expect(gpu.filter((l) => l.instanceType === 'g6.xlarge')).toHaveLength(6);
    // Every pod ran once.
    expect(r.podWaitsMs.length).toBe(19);
    expect(r.unschedulable).toEqual([]);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 3 });
  });

  it('spot-storm: six interruptions handled, and nothing launched where EC2 has no spot capacity', async () => {
    const r = await run('spot-storm');
    expect(r.interruptions).toHaveLength(6);
    expect(r.interruptions.every((i) => i.handled)).toBe(true);
    expect(r.terminations.filter((t) => t.reason === 'interruption')).toHaveLength(6);
    // Every interrupted NodeClaim was drained: tainted, its pods evicted, then finalized.
    for (const i of r.interruptions) {
      const lines = r.decisions.filter((d) => d['nodeClaim'] === i.nodeClaim).map((d) => d['message']);
      expect(lines).toEqual(
        expect.arrayContaining(['interruption handled', 'tainted node', 'drain step', 'deleted nodeclaim']),
      );
    }
    expect(r.decisions.filter((d) => d['message'] === 'interruption handled')).toHaveLength(6);
    const during = r.launches.filter((l) => minutes(r, l.atMs) >= 8 && minutes(r, l.atMs) < 25);
    expect(during.length).toBeGreaterThanOrEqual(6);
    for (const l of during) expect(l.capacityType === 'spot' && family(l.instanceType) === 'c6i').toBe(false);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 24 });
  });

  it('batch-burst: all 200 job pods run, none on m6i spot while it has no capacity', async () => {
    const r = await run('batch-burst');
    // 200 job pods and 4 general ones, and once more each pod a drain evicted: kube-scheduler
    // spreads the job pods, so consolidation moves some off the nodes the waves leave underused.
    const evicted = r.decisions
      .filter((d) => d['decision'] === 'drain' && d['action'] === 'evict')
      .reduce((sum, d) => sum + Number(d['evicted']), 0);
    expect(r.podWaitsMs).toHaveLength(204 + evicted);
    expect(r.unschedulable).toEqual([]);
    for (const l of r.launches.filter((x) => minutes(r, x.atMs) < 20)) {
      expect(l.capacityType === 'spot' && family(l.instanceType) === 'm6i').toBe(false);
    }
    expect(r.launches.filter((l) => l.nodePool === 'batch').length).toBeGreaterThan(0);
    expect(Math.max(...r.samples.map((s) => s.runningPods))).toBe(84);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 4 });
  });
});

describe('the engine', () => {
  const small = (workloads: string, events = '') => `name: small
duration: 10m
bootDelay: 30s
${defaultPoolYaml([
  '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
])}${workloads}${events}`;

  it('leaves pods no NodePool can host pending, with the reasons per NodePool', async () => {
    const r = await simulate(
      parseScenario(
        small(`workloads:
  - kind: Deployment
    name: huge
    replicas: 2
    template:
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "500" } }
`),
      ),
    );
    expect(r.launches).toEqual([]);
    expect(r.unschedulable.map((u) => u.name)).toEqual(['huge-00001', 'huge-00002']);
    expect(r.unschedulable[0]?.reasons.join(' ')).toMatch(/nodePool default/);
    expect(last(r.samples)).toMatchObject({ pendingPods: 2, runningPods: 0, nodes: 0 });
    expect(renderSummary(r)).toMatch(/Pods left unschedulable: 2[\s\S]*default\/huge-00001/);
  });

  it('counts an interruption as not handled while its pods cannot run again', async () => {
    const text = small(
      ONE_WEB_POD,
      `events:
  - kind: SpotInterruption
    at: 4m
  - kind: InsufficientCapacity
    from: 3m
    capacityType: spot
`,
    ).replace('values: [on-demand]', 'values: [spot]');
    const r = await simulate(parseScenario(text));
    expect(r.interruptions).toEqual([expect.objectContaining({ kind: 'spot-interruption', handled: false })]);
    expect(r.launches).toHaveLength(1);
    expect(r.unschedulable).toEqual([
      {
        namespace: 'default',
        name: 'web-00002',
        reasons: [expect.stringMatching(/^nodePool default: no instance type with an available offering/)],
      },
    ]);
  });

  /** Four replicas on one spot m6i.2xlarge, sampled every second; `events` as written. */
  const onSpot = (budget: string, events: string) =>
    small(
      `workloads:
  - kind: Deployment
    name: web
    replicas: 4
${budget}    template:
      metadata: { labels: { app: web } }
      spec:
        terminationGracePeriodSeconds: 10
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
`,
      events,
    )
      .replace('bootDelay: 30s', 'bootDelay: 30s\nsampleInterval: 1s')
      .replace('values: [on-demand]', 'values: [spot]')
      .replace(
        'values: [m6i] }',
        'values: [m6i] }\n            - { key: karpenter.k8s.aws/instance-size, operator: In, values: [2xlarge] }',
      );

  it('drains an interrupted node within its pods disruption budget while replacements start', async () => {
    const r = await simulate(
      parseScenario(
        onSpot(
          '    disruptionBudget: { minAvailable: 3 }\n',
          'events:\n  - kind: SpotInterruption\n    at: 4m\n',
        ),
      ),
    );
    expect(r.interruptions).toEqual([expect.objectContaining({ handled: true })]);
    const interruptedAt = r.interruptions[0]?.atMs ?? 0;
    const terminatedAt = r.terminations[0]?.atMs ?? 0;
    expect(r.terminations).toEqual([expect.objectContaining({ reason: 'interruption' })]);
    const drain = r.samples.filter((s) => s.atMs >= interruptedAt && s.atMs <= terminatedAt);
    expect(drain.length).toBeGreaterThan(10);
    for (const s of drain) expect(s.runningPods).toBeGreaterThanOrEqual(3);
    // The budget held evictions back until replacements ran on the new node.
    const steps = r.decisions.filter((d) => d['message'] === 'drain step');
    expect(steps.some((d) => (d['blocked'] as number) > 0)).toBe(true);
    expect(steps.reduce((n, d) => n + (d['evicted'] as number), 0)).toBe(4);
    expect(r.launches).toHaveLength(2);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 4, nodes: 1 });
  });

  it('lets EC2 reclaim the instance two minutes after the warning when the budget blocks the drain', async () => {
    const r = await simulate(
      parseScenario(
        onSpot(
          '    disruptionBudget: { minAvailable: 4 }\n',
          'events:\n  - kind: SpotInterruption\n    at: 4m\n',
        ),
      ),
    );
    const interruptedAt = r.interruptions[0]?.atMs ?? 0;
    expect(r.decisions.find((d) => d['message'] === 'instance reclaimed')).toMatchObject({
      source: 'simulator',
      atMs: interruptedAt + 120_000,
      podsLeft: 4,
    });
    const steps = r.decisions.filter((d) => d['message'] === 'drain step');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.every((d) => d['evicted'] === 0 && d['blocked'] === 4)).toBe(true);
    expect(r.decisions.some((d) => d['message'] === 'instance terminated')).toBe(false);
    expect(r.terminations).toEqual([
      expect.objectContaining({ reason: 'interruption', atMs: interruptedAt + 120_000 }),
    ]);
    // The NodeClaim is finalized once its instance is gone; the pods then run again elsewhere.
    expect(r.decisions.filter((d) => d['message'] === 'deleted nodeclaim')).toHaveLength(1);
    expect(r.interruptions).toEqual([expect.objectContaining({ handled: true })]);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 4, nodes: 1 });
  });

  it('evicts every pod of an interrupted node at once without a budget', async () => {
    const r = await simulate(parseScenario(onSpot('', 'events:\n  - kind: SpotInterruption\n    at: 4m\n')));
    const interruptedAt = r.interruptions[0]?.atMs ?? 0;
    const steps = r.decisions.filter((d) => d['message'] === 'drain step');
    expect(steps).toEqual([expect.objectContaining({ evicted: 4, blocked: 0, atMs: interruptedAt })]);
    expect(r.samples.find((s) => s.atMs === interruptedAt + 1000)).toMatchObject({ runningPods: 0 });
  });

  it('only records an Event for a rebalance recommendation', async () => {
    const r = await simulate(
      parseScenario(onSpot('', 'events:\n  - kind: RebalanceRecommendation\n    at: 4m\n')),
    );
    expect(r.decisions.find((d) => d['message'] === 'interruption handled')).toMatchObject({
      interruption: 'rebalanceRecommendation',
      action: 'event',
      reason: 'SpotRebalanceRecommendation',
      atMs: r.scenario.startMs + 4 * 60_000,
    });
    expect(r.decisions.some((d) => d['message'] === 'tainted node' || d['message'] === 'drain step')).toBe(
      false,
    );
    expect(r.interruptions).toEqual([]);
    expect(r.terminations).toEqual([]);
    expect(r.launches).toHaveLength(1);
    expect(last(r.samples)).toMatchObject({ pendingPods: 0, runningPods: 4, nodes: 1 });
  });

  it('logs an interruption with no spot instance to take as skipped', async () => {
    const r = await simulate(
      parseScenario(small(ONE_WEB_POD, 'events:\n  - kind: SpotInterruption\n    at: 5m\n')),
    );
    expect(r.interruptions).toEqual([]);
    expect(r.decisions.find((d) => d['message'] === 'interruption skipped')).toMatchObject({
      source: 'simulator',
      atMs: r.scenario.startMs + 5 * 60_000,
    });
    expect(r.launches).toEqual([expect.objectContaining({ capacityType: 'on-demand', nodePool: 'default' })]);
    expect(r.podWaitsMs).toEqual([expect.any(Number)]);
  });
});

describe('the basic summary', () => {
  it('names launches by type and capacity type, cost, waits and interruptions', async () => {
    const r = await run('steady-web');
    const text = renderSummary(r);
    expect(text).toMatch(/^Flotilla simulation "steady-web"/);
    expect(text).toMatch(new RegExp(`Nodes launched: ${r.launches.length} \\(`));
    expect(text).toMatch(/c6gd\.2xlarge +0 +\d+ +\d+/);
    expect(text).toMatch(/Interruptions: 1 \(1 handled, 0 not handled\)/);
    expect(text).toMatch(/Pod wait \(\d+ pods, creation to binding\): p50 [\d.]+s/);
  });
});
