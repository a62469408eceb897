import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { defaultPoolYaml } from '../simulator/scenarios.ts';
import { flotilla } from './flotilla.ts';

// The simulated world around Flotilla, run as a user runs `flotilla simulate`: DaemonSets, nodes
// there at the start (Flotilla's and another autoscaler's), pod annotations, start-up taints that
// their agents remove late, and kube-scheduler's scoring.

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-world-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface WorldParts {
  /** Top-level fields before the manifests (nodes, daemonSets, kubeScheduler, …). */
  readonly top?: string;
  /** Requirement items of the NodePool `default`, YAML flow style. */
  readonly requirements: readonly string[];
  /** Lines under the NodePool's `spec.template.spec` besides its requirements, indented 10. */
  readonly templateSpec?: string;
  /** The NodePool's `spec.disruption`, flow style. @default consolidation off */
  readonly disruption?: string;
  readonly workloads?: string;
  readonly duration?: string;
}

const world = (p: WorldParts) => `name: world
duration: ${p.duration ?? '10m'}
bootDelay: 30s
${p.top ?? ''}${defaultPoolYaml(
  p.requirements,
  `      disruption: ${p.disruption ?? '{ consolidateAfter: Never }'}\n`,
  p.templateSpec,
)}${p.workloads ?? ''}`;

/** A Deployment of `replicas` pods of `cpu`, with template metadata and spec lines as given. */
const deployment = (
  name: string,
  replicas: number,
  cpu: string,
  extra: { metadata?: string; spec?: string } = {},
) =>
  `  - kind: Deployment
    name: ${name}
    replicas: ${replicas}
    template:
      metadata: { labels: { app: ${name} }${extra.metadata ?? ''} }
      spec:
${extra.spec ?? ''}        containers:
          - name: c
            resources: { requests: { cpu: ${cpu} } }
`;

const M6I = [
  '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
];
const EAGER = '{ consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s }';

interface Run {
  readonly out: string;
  readonly record: SimulationRecord;
}

let runs = 0;
/** `flotilla simulate` on `scenario` (with `args`), its summary and its record. */
async function simulate(scenario: string, ...args: string[]): Promise<Run> {
  runs += 1;
  const file = path.join(tmp, `scenario-${runs}.yaml`);
  const out = path.join(tmp, `out-${runs}`);
  fs.writeFileSync(file, scenario);
  const run = await flotilla(['simulate', file, '--out', out, ...args]);
  expect(run.err).not.toContain('Error');
  expect(run.code).toBe(0);
  const record = JSON.parse(fs.readFileSync(path.join(out, 'record.json'), 'utf8')) as SimulationRecord;
  return { out: run.out, record };
}

const lastSample = (r: SimulationRecord) => r.samples[r.samples.length - 1];
const evictedOrDisrupted = (r: SimulationRecord) =>
  r.decisions.filter((d) => d['decision'] === 'disrupt' || d['decision'] === 'drain');

describe('DaemonSets', () => {
  const c6i = [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [c6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [large, xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ];
  const workloads = `workloads:\n${deployment('api', 1, '1500m')}`;
  /** `agent` runs everywhere; `ca-agent` only on the Cluster Autoscaler's nodes. */
  const daemonSets = `nodes:
  - { name: ca, instanceType: m6i.large, labels: { group: ca }, taints: [{ key: dedicated, value: ca, effect: NoSchedule }] }
daemonSets:
  - name: agent
    template:
      spec:
        tolerations: [{ operator: Exists }]
        containers: [{ name: a, resources: { requests: { cpu: 600m, memory: 256Mi } } }]
  - name: ca-agent
    template:
      spec:
        nodeSelector: { group: ca }
        tolerations: [{ key: dedicated, operator: Exists }]
        containers: [{ name: a, resources: { requests: { cpu: 100m } } }]
`;

  it('runs their pods on every node they select, and their overhead picks a larger node', async () => {
    const [bare, withDaemons] = await Promise.all([
      simulate(world({ requirements: c6i, workloads })),
      simulate(world({ top: daemonSets, requirements: c6i, workloads })),
    ]);
    expect(bare.record.launches.map((l) => l.instanceType)).toEqual(['c6i.large']);
    // 1500m and the agent's 600m do not fit c6i.large's 1930m allocatable.
    expect(withDaemons.record.launches.map((l) => l.instanceType)).toEqual(['c6i.xlarge']);
    expect(withDaemons.out).toMatch(/^ {2}c6i\.xlarge +1 +0 +1 +\$0\.1700$/m);
    // api, agent on the new node and on ca, ca-agent on ca only.
    expect(lastSample(withDaemons.record)).toMatchObject({ runningPods: 4, pendingPods: 0 });
    expect(withDaemons.record.unschedulable).toEqual([]);
  }, 120_000);
});

describe("kube-scheduler's queue", () => {
  it('takes the pod of the higher PriorityClass first, a pod naming none at the global default', async () => {
    // Room on the other autoscaler's node for one of the two; no NodePool takes pods for it. By
    // name and age, api would go first.
    const onCa = { spec: '        nodeSelector: { group: ca }\n' };
    const important = {
      spec: `${onCa.spec}        priorityClassName: important\n`,
    };
    const { record } = await simulate(
      world({
        top: `priorityClasses:
  - { name: important, value: 1000 }
  - { name: background, value: -5, globalDefault: true }
nodes:
  - { name: ca, instanceType: m6i.large, labels: { group: ca } }
`,
        requirements: M6I,
        workloads: `workloads:\n${deployment('api', 1, '1500m', onCa)}${deployment('worker', 1, '1500m', important)}`,
        duration: '2m',
      }),
    );
    expect(record.unschedulable.map((p) => p.name)).toEqual(['api-00001']);
    expect(lastSample(record)).toMatchObject({ runningPods: 1, pendingPods: 1 });
    expect(record.launches).toEqual([]);
  }, 60_000);
});

describe('nodes there at the start', () => {
  it("consolidates its own empty node and never touches another autoscaler's", async () => {
    const { out, record } = await simulate(
      world({
        top: `nodes:
  - { name: ca, instanceType: m6i.xlarge, labels: { group: ca } }
  - { name: mine, nodePool: default, instanceType: m6i.xlarge }
`,
        requirements: M6I,
        disruption: EAGER,
        workloads: `workloads:\n${deployment('web', 1, '500m', { spec: '        nodeSelector: { group: ca }\n' })}`,
      }),
      '--explain',
      'node',
      'ca',
    );
    // Flotilla's node was empty: removed as Karpenter removes empty nodes.
    expect(record.disruptions.map((d) => [d.nodeClaim, d.reason])).toEqual([['mine', 'Empty']]);
    expect(record.terminations.map((t) => [t.nodeClaim, t.reason])).toEqual([['mine', 'empty']]);
    expect(record.launches).toEqual([]);
    // The foreign node, underused all along, is never a candidate, drained or terminated.
    for (const d of evictedOrDisrupted(record)) expect(JSON.stringify(d)).not.toMatch(/"ca"/);
    expect(out).toContain(
      "nodes at the start: 1 of Flotilla's NodePools (in the costs), 1 foreign (another autoscaler's: never disrupted or terminated, not in the costs)",
    );
    expect(out).toContain('node ca stays');
    expect(out).toContain('no NodeClaim owns the node; Flotilla does not disrupt it');
    expect(lastSample(record)).toMatchObject({ runningPods: 1, pendingPods: 0 });
  }, 120_000);
});

describe('pod annotations', () => {
  it('a pod annotated karpenter.sh/do-not-disrupt holds its node while the other node is consolidated', async () => {
    const scenario = (annotation: string) =>
      world({
        top: `nodes:
  - { name: mine, count: 2, nodePool: default, instanceType: m6i.xlarge }
`,
        requirements: M6I,
        disruption: EAGER,
        workloads: `workloads:\n${deployment('keep', 1, '500m', { metadata: annotation })}${deployment('other', 1, '500m')}`,
      });
    const [held, free] = await Promise.all([
      simulate(scenario(", annotations: { karpenter.sh/do-not-disrupt: 'true' }")),
      simulate(scenario('')),
    ]);
    // kube-scheduler spread the two pods over the two nodes; only other's node goes.
    const disrupted = held.record.disruptions.map((d) => d.nodeClaim);
    expect(disrupted).toHaveLength(1);
    expect(held.record.terminations).toHaveLength(1);
    expect(held.out).toMatch(/node held: .*do-not-disrupt/);
    expect(lastSample(held.record)).toMatchObject({ runningPods: 2, pendingPods: 0 });

    // Without the annotation both nodes are candidates.
    expect(free.record.terminations).toHaveLength(2);
    expect(free.out).not.toMatch(/do-not-disrupt/);
  }, 120_000);
});

describe('start-up taints', () => {
  it("keeps pods off a node until the taint's agent removes it, after its delay", async () => {
    const scenario = (removal: string) =>
      world({
        top: removal,
        requirements: M6I,
        templateSpec: '          startupTaints: [{ key: example.com/agent-not-ready, effect: NoSchedule }]\n',
        workloads: `workloads:\n${deployment('web', 1, '500m')}`,
      });
    const [prompt, late] = await Promise.all([
      simulate(scenario('')),
      simulate(scenario('startupTaintRemoval:\n  - { key: example.com/agent-not-ready, after: 3m }\n')),
    ]);
    const [promptWait] = prompt.record.podWaitsMs;
    const [lateWait] = late.record.podWaitsMs;
    // Boot (30s) and registration either way; three minutes more while the taint stays.
    expect(promptWait).toBeLessThan(90_000);
    expect(lateWait).toBeGreaterThanOrEqual(30_000 + 180_000);
    expect(lateWait).toBeLessThan(30_000 + 180_000 + 60_000);
    // The node was not taken for unusable: nothing else launched meanwhile.
    expect(late.record.launches).toHaveLength(1);
  }, 120_000);
});

describe("kube-scheduler's scoring", () => {
  const scenario = (strategy: string) =>
    world({
      top: `kubeScheduler: { scoringStrategy: ${strategy} }
nodes:
  - { name: mine, count: 2, nodePool: default, instanceType: m6i.xlarge }
`,
      requirements: M6I,
      disruption: '{ consolidationPolicy: WhenEmpty, consolidateAfter: 0s }',
      workloads: `workloads:\n${deployment('web', 4, '500m')}`,
    });

  it('spreads pods over the nodes by default (LeastAllocated), where packing (MostAllocated) empties one', async () => {
    const [spread, packed] = await Promise.all([
      simulate(scenario('LeastAllocated')),
      simulate(scenario('MostAllocated')),
    ]);
    // Two pods on each node: neither is empty.
    expect(spread.record.terminations).toEqual([]);
    expect(spread.out).toContain('Nodes terminated: none');
    // All four on one node: the other is empty and goes.
    expect(packed.record.disruptions.map((d) => d.reason)).toEqual(['Empty']);
    expect(packed.out).toContain('Nodes terminated: 1 (empty 1)');
    for (const r of [spread, packed])
      expect(lastSample(r.record)).toMatchObject({ runningPods: 4, pendingPods: 0 });
  }, 120_000);
});

describe("consolidation told kube-scheduler's scoring", () => {
  // MostAllocated binds the large pod and the two small ones to Flotilla's node (its ip-… name
  // first, then the fullest), the pinned ones to z-b and z-c (another autoscaler's): 2 and 2.5
  // CPUs are left there. Packed, the small pods fill z-b and the large one takes z-c; spread
  // (LeastAllocated), the small pods would leave no node with 2.5 CPUs, so a replay that expects
  // spreading refuses to delete Flotilla's node.
  const pinned = (slot: string) => `        nodeSelector: { example.com/slot: ${slot} }\n`;
  const scenario = (more = '') =>
    world({
      top: `kubeScheduler: { scoringStrategy: MostAllocated }
${more}nodes:
  - { name: a-node, nodePool: default, instanceType: m6i.xlarge }
  - { name: z-b, instanceType: m6i.xlarge, labels: { example.com/slot: b } }
  - { name: z-c, instanceType: m6i.xlarge, labels: { example.com/slot: c } }
`,
      requirements: M6I,
      disruption: EAGER,
      workloads: `workloads:
${deployment('a-large', 1, '2500m')}${deployment('a-small', 2, '500m')}${deployment('z-busy-b', 1, '1920m', { spec: pinned('b') })}${deployment('z-busy-c', 1, '1420m', { spec: pinned('c') })}`,
    });

  it('deletes a node whose pods fit elsewhere only when kube-scheduler packs them, as it does here', async () => {
    const run = await simulate(scenario());
    expect(run.record.disruptions.map((d) => d.reason)).toEqual(['Underutilized']);
    expect(run.record.terminations).toHaveLength(1);
    expect(run.record.launches).toEqual([]);
    expect(lastSample(run.record)).toMatchObject({ runningPods: 5, pendingPods: 0 });
  }, 120_000);

  it('tells a shadow the same, unless its settings say otherwise', async () => {
    // The live side disrupts nothing; the shadow beside it proposes what it would do.
    const beside = (shadowSettings: string) =>
      simulate(scenario(`settings: { disruption: false }\nshadow: { settings: { ${shadowSettings} } }\n`));
    const [told, spreading] = await Promise.all([beside(''), beside('kubeSchedulerScoring: LeastAllocated')]);
    expect(told.record.disruptions).toEqual([]);
    expect(told.record.shadow?.flotilla.commandsProposed).toBe(1);
    expect(spreading.record.shadow?.flotilla.commandsProposed).toBe(0);
  }, 120_000);

  it('explains the node with the scoring the simulator tells it', async () => {
    // The live side disrupts nothing, so the node is still there to explain at the end.
    const explain = (settings: string) =>
      simulate(scenario(`settings: { disruption: false${settings} }\n`), '--explain', 'node', 'a-node');
    const [packing, spreading] = await Promise.all([
      explain(''),
      explain(', kubeSchedulerScoring: LeastAllocated'),
    ]);
    const text = (run: Run) => run.out.slice(run.out.indexOf('\nnode '));
    expect(text(packing)).toMatch(/disruption acts on the node next: .*\(Underutilized\) would delete/);
    expect(text(spreading)).not.toMatch(/disruption acts on the node next/);
    expect(text(spreading)).toContain(
      'kube-scheduler, binding pods to the nodes with the most room, could leave it without a node',
    );
  }, 120_000);
});

describe('the new fields are checked like the others', () => {
  const refuse = async (name: string, scenario: string) => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, scenario);
    const run = await flotilla(['simulate', file, '--out', path.join(tmp, 'bad-out')]);
    expect(run.code).toBe(2);
    expect(run.out).toBe('');
    return run.err
      .trim()
      .split('\n')
      .map((l) => l.slice(l.indexOf(name)));
  };

  it('refuses unknown fields and values out of their set, each at its line and column', async () => {
    const lines = await refuse(
      'schema.yaml',
      world({
        top: `kubeScheduler: { scoringStrategy: Spread }
daemonSets:
  - name: agent
    template: { spec: { containers: [{ name: a }] }, metdata: {} }
`,
        requirements: M6I,
        workloads: `workloads:\n${deployment('web', 1, '500m', { metadata: ', annotations: { a: 1 }' })}`,
      }),
    );
    expect(lines).toEqual([
      'schema.yaml:4:18: kubeScheduler.scoringStrategy: must be one of "LeastAllocated", "MostAllocated", got "Spread"',
      'schema.yaml:7:54: daemonSets[0].template.metdata: unknown field "metdata"; did you mean "metadata"?',
      'schema.yaml:34:56: workloads[0].template.metadata.annotations.a: must be a string, got 1',
    ]);
  }, 60_000);

  it('refuses pods naming a PriorityClass there is not, and PriorityClasses a cluster refuses', async () => {
    const lines = await refuse(
      'priority.yaml',
      world({
        top: `priorityClasses:
  - { name: batch, value: 10, globalDefault: true }
  - { name: system-batch, value: 20 }
  - { name: late, value: 30, globalDefault: true }
daemonSets:
  - name: agent
    template:
      spec:
        priorityClassName: system-node-critical
        containers: [{ name: a }]
`,
        requirements: M6I,
        workloads: `workloads:\n${deployment('web', 1, '500m', { spec: '        priorityClassName: hihg\n' })}${deployment('db', 1, '500m', { spec: '        priority: 7\n' })}`,
      }),
    );
    expect(lines).toEqual([
      'priority.yaml:6:7: priorityClasses[1].name: "system-" is reserved for the built-in PriorityClasses (system-node-critical and system-cluster-critical exist already)',
      'priority.yaml:7:30: priorityClasses[2].globalDefault: PriorityClass "batch" is the global default already; only one may be',
      'priority.yaml:42:9: workloads[0].template.spec.priorityClassName: pods of this template are refused at admission: no PriorityClass with name hihg was found (the cluster has batch, late, system-cluster-critical, system-node-critical)',
      'priority.yaml:52:9: workloads[1].template.spec.priority: pods of this template are refused at admission: the integer value of priority (7) must not be provided in pod spec; admission computed 10 from the default',
    ]);
  }, 60_000);

  it('refuses nodes and taint delays that name what the scenario does not have', async () => {
    const lines = await refuse(
      'refs.yaml',
      world({
        top: `startupTaintRemoval:
  - { key: example.com/none, after: 1m }
nodes:
  - { nodePool: spot, instanceType: m6i.xlarge }
  - { name: ca, instanceType: m6i.huge, zone: us-east-1z }
  - { nodePool: default, instanceType: c6i.large }
  - { nodePool: default, instanceType: m6i.large, labels: { a: b } }
`,
        requirements: M6I,
      }),
    );
    expect(lines).toEqual([
      'refs.yaml:5:7: startupTaintRemoval[0].key: no NodePool has a start-up taint with key "example.com/none" (spec.template.spec.startupTaints)',
      'refs.yaml:7:7: nodes[0].nodePool: no NodePool named "spot" in nodePools (default)',
      'refs.yaml:8:17: nodes[1].instanceType: the bundled instance catalog has no instance type "m6i.huge" in us-east-1',
      'refs.yaml:8:41: nodes[1].zone: zone "us-east-1z" is not one of the scenario\'s zones (us-east-1a, us-east-1b, us-east-1c)',
      'refs.yaml:9:26: nodes[2].instanceType: NodePool "default"\'s requirements do not allow on-demand c6i.large in us-east-1a',
      'refs.yaml:10:51: nodes[3].labels: a node of NodePool "default" takes its labels from the NodePool\'s template; leave labels out, or leave out nodePool for a node Flotilla did not launch',
    ]);
  }, 60_000);
});
