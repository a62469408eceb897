import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MEMORY_AL2023_AMIS, memoryAl2023Release } from '../../../shared/adapters/memory/index.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario, parseScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { small, web } from './scenarios.ts';

// The disruption controller in the simulator: on its schedule, against NodePool and EC2NodeClass
// edits and AMI releases over time.

const examples = path.resolve(import.meta.dirname, '../../../examples');
const MINUTE = 60_000;

const at = (record: SimulationRecord, atMs: unknown) => ((atMs as number) - record.scenario.startMs) / MINUTE;
const disrupts = (record: SimulationRecord) =>
  record.decisions.filter((d) => d['decision'] === 'disrupt' && d['message'] === 'disruption command');
/** NodeClaims whose instance still runs at the end. */
const running = (record: SimulationRecord) => {
  const gone = new Set(record.terminations.map((t) => t.nodeClaim));
  return record.launches.filter((l) => !gone.has(l.nodeClaim));
};

describe('the drift-rollout example', () => {
  const record = simulate(loadScenario(path.join(examples, 'drift-rollout.yaml')));
  const oldAmi = memoryAl2023Release('v20251201')[0]?.id;
  const newAmi = memoryAl2023Release('v20260115')[0]?.id;

  it('replaces every node of the old AMI, one at a time, with the pods kept running', async () => {
    const r = await record;
    const before = r.launches.filter((l) => at(r, l.atMs) < 10);
    expect(before.length).toBeGreaterThanOrEqual(4);
    expect(before.every((l) => l.imageId === oldAmi)).toBe(true);
    // Every one of them drifted and went for that reason; none of the old AMI is left.
    const drifted = r.decisions.filter((d) => d['decision'] === 'drifted').map((d) => d['nodeClaim']);
    expect(new Set(drifted)).toEqual(new Set(before.map((l) => l.nodeClaim)));
    expect(
      r.disruptions
        .filter((d) => d.reason === 'Drifted')
        .map((d) => d.nodeClaim)
        .sort(),
    ).toEqual(before.map((l) => l.nodeClaim).sort());
    expect(running(r).length).toBeGreaterThan(0);
    expect(running(r).every((l) => l.imageId === newAmi)).toBe(true);
    expect(r.terminations.filter((t) => t.reason === 'drifted')).toHaveLength(before.length);
    // The budget (nodes: "1") lets one replacement run at a time next to the six nodes.
    expect(Math.max(...r.samples.map((s) => s.nodes))).toBe(before.length + 1);
    // Every pod runs from its first minute until the scale-down, and none waits.
    for (const s of r.samples.filter((x) => at(r, x.atMs) >= 2 && at(r, x.atMs) < 40)) {
      expect(s).toMatchObject({ runningPods: 12, pendingPods: 0 });
    }
    expect(r.unschedulable).toEqual([]);
    // Each command's replacement launched before its candidate was deleted.
    const started = disrupts(r).filter((d) => d['outcome'] === 'started');
    expect(started).toHaveLength(before.length);
    for (const d of started) {
      const [replacement] = d['replacements'] as { nodeClaim: string }[];
      const [candidate] = d['candidates'] as { nodeClaim: string }[];
      const launched = r.launches.find((l) => l.nodeClaim === replacement?.nodeClaim);
      const deleted = r.disruptions.find((x) => x.nodeClaim === candidate?.nodeClaim);
      expect(launched?.atMs).toBeLessThan(deleted?.atMs ?? 0);
    }
  });

  it('removes the nodes the scale-down left empty, and reports disruptions by reason', async () => {
    const r = await record;
    const empty = r.disruptions.filter((d) => d.reason === 'Empty');
    expect(empty.length).toBeGreaterThan(0);
    expect(empty.every((d) => at(r, d.atMs) >= 42)).toBe(true);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ runningPods: 3, pendingPods: 0 });
    expect(renderSummary(r)).toMatch(
      new RegExp(
        `Disruptions: ${r.disruptions.length} \\(Empty ${empty.length}, Drifted ${r.disruptions.length - empty.length}\\)`,
      ),
    );
  });
});

describe('the disruption controller in the simulator', () => {
  it('removes the empty nodes of a scale to zero once consolidateAfter has passed', async () => {
    const r = await simulate(
      parseScenario(
        small({
          disruption: `      disruption:
        consolidationPolicy: WhenEmpty
        consolidateAfter: 3m
`,
          workloads: web(3, '    scale: [{ at: 5m, replicas: 0 }]\n'),
          duration: '15m',
        }),
      ),
    );
    expect(r.launches).toHaveLength(3);
    expect(r.disruptions.map((d) => d.reason)).toEqual(['Empty', 'Empty', 'Empty']);
    // The pods go at 5m (and their kubelets let go within the grace period): not before 8m.
    for (const d of r.disruptions) expect(at(r, d.atMs)).toBeGreaterThanOrEqual(8);
    expect(r.terminations.map((t) => t.reason)).toEqual(['empty', 'empty', 'empty']);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ nodes: 0, costPerHour: 0 });
  });

  it('keeps drifted nodes while a budget of nodes "0" is active, and replaces them once it ends', async () => {
    // The NodePool's budget is edited at 2m to block disruptions from midnight for 20 minutes; the
    // AMI changes at 5m.
    const r = await simulate(
      parseScenario(
        small({
          workloads: web(2),
          events: `events:
  - kind: UpdateNodePool
    at: 2m
    name: default
    spec:
      disruption:
        budgets:
          - { nodes: "0", schedule: "0 0 * * *", duration: 20m }
  - kind: UpdateEC2NodeClass
    at: 5m
    name: default
    spec:
      amiSelectorTerms: [{ alias: al2023@v20260115 }]
`,
          duration: '35m',
        }),
      ),
    );
    const drifted = r.decisions.filter((d) => d['decision'] === 'drifted');
    expect(drifted).toHaveLength(2);
    expect(drifted.every((d) => at(r, d['atMs']) < 7)).toBe(true);
    const blocked = r.decisions.filter(
      (d) =>
        d['decision'] === 'disruptionPass' &&
        (d['budgetBlocked'] as string[]).includes('default/Drifted') &&
        at(r, d['atMs']) < 20,
    );
    expect(blocked.length).toBeGreaterThan(10);
    const started = disrupts(r).filter((d) => d['outcome'] === 'started');
    expect(started).toHaveLength(2);
    expect(started.every((d) => at(r, d['atMs']) >= 20)).toBe(true);
    expect(r.disruptions.map((d) => d.reason)).toEqual(['Drifted', 'Drifted']);
    expect(running(r).map((l) => l.imageId)).toEqual([
      memoryAl2023Release('v20260115')[0]?.id,
      memoryAl2023Release('v20260115')[0]?.id,
    ]);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ runningPods: 2, pendingPods: 0 });
  });

  it('replaces nodes a changed NodePool requirement no longer allows', async () => {
    const r = await simulate(
      parseScenario(
        small({
          workloads: web(2),
          events: `events:
  - kind: UpdateNodePool
    at: 5m
    name: default
    spec:
      template:
        spec:
          requirements:
            - { key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i] }
            - { key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }
`,
        }),
      ),
    );
    const reasons = r.decisions.filter((d) => d['decision'] === 'drifted').map((d) => d['reason']);
    expect(reasons).toEqual(['RequirementsDrifted', 'RequirementsDrifted']);
    expect(r.disruptions.map((d) => d.reason)).toEqual(['Drifted', 'Drifted']);
    expect(running(r).map((l) => l.instanceType.split('.')[0])).toEqual(['r6i', 'r6i']);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ runningPods: 2, pendingPods: 0 });
  });

  it('undoes a drift command whose replacement cannot launch: the nodes and their pods stay, and are replaced once capacity returns', async () => {
    // No capacity anywhere from 4m to 12m; the NodePool drifts at 5m.
    const r = await simulate(
      parseScenario(
        small({
          workloads: web(2),
          events: `events:
  - { kind: InsufficientCapacity, from: 4m, until: 12m }
  - kind: UpdateNodePool
    at: 5m
    name: default
    spec:
      template:
        spec:
          requirements:
            - { key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i] }
            - { key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }
`,
          duration: '25m',
        }),
      ),
    );
    const commands = disrupts(r);
    const failed = commands.filter((d) => d['outcome'] === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    // Each was started while there was no capacity (the last one fails at the pass after 12m).
    expect(failed.every((d) => at(r, d['atMs']) < 13)).toBe(true);
    expect(String(failed[0]?.['why'])).toMatch(/is gone/);
    // Nothing was deleted while replacements could not launch; every pod kept running throughout.
    expect(r.disruptions.every((d) => at(r, d.atMs) >= 12)).toBe(true);
    for (const sample of r.samples.filter((x) => at(r, x.atMs) >= 2)) {
      expect(sample).toMatchObject({ runningPods: 2, pendingPods: 0 });
    }
    // Once capacity is back, both nodes are replaced (by r6i nodes: what the NodePool allows now);
    // consolidation may then pack the two pods tighter.
    expect(r.disruptions.filter((d) => d.reason === 'Drifted')).toHaveLength(2);
    expect(r.disruptions.every((d) => d.reason === 'Drifted' || d.reason === 'Underutilized')).toBe(true);
    expect(running(r).length).toBeGreaterThan(0);
    expect(running(r).every((l) => l.instanceType.startsWith('r6i.'))).toBe(true);
  });

  it('picks up a new release of al2023@latest at the EC2NodeClass refresh and replaces the nodes', async () => {
    const r = await simulate(
      parseScenario(
        small({
          workloads: web(1),
          events: 'events:\n  - { kind: AMIRelease, at: 5m, version: v20260201 }\n',
        }),
      ),
    );
    const [first] = r.launches;
    expect(first?.imageId).toBe(MEMORY_AL2023_AMIS[0]?.id);
    const resolved = r.decisions.filter((d) => d['decision'] === 'resolveNodeClass' && at(r, d['atMs']) >= 5);
    expect(resolved.map((d) => (d['amis'] as string[])[0])).toEqual([
      memoryAl2023Release('v20260201')[0]?.id,
    ]);
    // Within the 60 s refresh period, and the next disruption pass finds the node drifted.
    expect(at(r, resolved[0]?.['atMs'])).toBeLessThanOrEqual(6);
    expect(r.disruptions).toEqual([
      expect.objectContaining({ nodeClaim: first?.nodeClaim, reason: 'Drifted' }),
    ]);
    expect(running(r).map((l) => l.imageId)).toEqual([memoryAl2023Release('v20260201')[0]?.id]);
  });
});

describe('a steady load', () => {
  it('makes no disruption decision in two hours of constant load (no churn)', async () => {
    const r = await simulate(parseScenario(small({ workloads: web(4), duration: '2h' })));
    expect(r.launches.length).toBeGreaterThan(0);
    expect(disrupts(r)).toEqual([]);
    expect(r.decisions.filter((d) => d['decision'] === 'drifted')).toEqual([]);
    expect(r.disruptions).toEqual([]);
    const passes = r.decisions.filter((d) => d['decision'] === 'disruptionPass');
    expect(passes.length).toBeGreaterThan(100);
    expect(passes.every((d) => d['commands'] === 0)).toBe(true);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ runningPods: 4, pendingPods: 0 });
  });
});

describe('the steady-web example', () => {
  it('disrupts nothing while demand only grows, and afterwards only what the scale-downs left empty or underused', async () => {
    const r = await simulate(loadScenario(path.join(examples, 'steady-web.yaml')));
    const commands = disrupts(r);
    // web scales down first at 28m: nothing before.
    expect(commands.filter((d) => at(r, d['atMs']) < 28)).toEqual([]);
    expect(commands.some((d) => d['reason'] === 'Empty')).toBe(true);
    expect(commands.every((d) => d['reason'] === 'Empty' || d['reason'] === 'Underutilized')).toBe(true);
    // Every consolidation command saved money.
    for (const d of commands.filter((c) => c['reason'] === 'Underutilized')) {
      expect(Number(d['pricePerHourAfter'])).toBeLessThan(Number(d['pricePerHourBefore']));
    }
    expect(r.decisions.filter((d) => d['decision'] === 'drifted')).toEqual([]);
    expect(r.unschedulable).toEqual([]);
  });
});

describe('expiration', () => {
  const expiring = (extra = '') => `          expireAfter: 10m
${extra}`;
  const expirations = (r: SimulationRecord) =>
    r.decisions.filter((d) => d['decision'] === 'disrupt' && d['method'] === 'expiration');

  it('replaces a node past expireAfter, the replacement created before it goes', async () => {
    const r = await simulate(
      parseScenario(small({ disruption: expiring(), workloads: web(1), duration: '16m' })),
    );
    const [line, ...more] = expirations(r);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ reason: 'Expired', action: 'replace', outcome: 'deleted' });
    expect(line).not.toHaveProperty('podsWithoutReplacement');
    expect(at(r, line?.['atMs'])).toBeGreaterThanOrEqual(10);
    expect(r.launches).toHaveLength(2);
    expect(r.unschedulable).toEqual([]);
  });

  it('deletes it all the same when its NodePool cannot launch a replacement, and says why', async () => {
    // The pod needs the label tier=a, which its NodePool's nodes carry until 9m and again from 13m;
    // drift, which would replace the node at 9m, is held by the budget.
    const events = `events:
  - kind: UpdateNodePool
    at: 9m
    name: default
    spec: { template: { metadata: { labels: { tier: b } } } }
  - kind: UpdateNodePool
    at: 13m
    name: default
    spec: { template: { metadata: { labels: { tier: a } } } }
`;
    const text = small({
      disruption: `${expiring()}      disruption:
        consolidateAfter: 0s
        budgets: [{ nodes: "0", reasons: [Drifted] }]
`,
      workloads: web(1),
      events,
      duration: '20m',
    })
      .replace(
        '      template:\n        spec:',
        '      template:\n        metadata: { labels: { tier: a } }\n        spec:',
      )
      .replace(
        '      spec:\n        containers:',
        '      spec:\n        nodeSelector: { tier: a }\n        containers:',
      );
    expect(text).toContain('nodeSelector: { tier: a }');
    expect(text).toContain('metadata: { labels: { tier: a } }');
    const r = await simulate(parseScenario(text));
    const [line, ...more] = expirations(r);
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      reason: 'Expired',
      action: 'delete',
      outcome: 'deleted',
      podsWithoutReplacement: 1,
      replacements: [],
    });
    expect(String(line?.['why'])).toMatch(
      /^no replacement for 1 pod, which waits for the provisioner \(default\/web-.*tier/,
    );
    // Forceful: the node goes at 10m; once the NodePool sets tier=a again the pod gets a node.
    expect(at(r, line?.['atMs'])).toBeLessThan(13);
    expect(r.launches).toHaveLength(2);
    expect(at(r, r.launches[1]?.atMs)).toBeGreaterThanOrEqual(13);
    expect(r.unschedulable).toEqual([]);
    expect(r.samples[r.samples.length - 1]).toMatchObject({ runningPods: 1, pendingPods: 0 });
  });
});
