import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { type SimulationWorld, simulate } from '../../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../../shared/simulator/scenario.ts';
import { explainNode, type NodeExplanation } from '../../../../shared/usecases/explain/node.ts';
import { explainPod, type PodExplanation } from '../../../../shared/usecases/explain/pod.ts';
import { NODE_REASONS, POD_REASONS } from '../../../../shared/usecases/explain/reasons.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { defaultPoolYaml } from '../../simulator/scenarios.ts';

// `flotilla explain` over the in-memory cluster twin as a simulator run leaves it: the same
// provisioner and disruption steps as on a real cluster, each reason by its code and fixed text.

const silent = makeLogger({}, { level: 'error', sink: () => {} });

/** Runs `text` and hands the world at its end to `ask`. */
async function atEndOf<T>(text: string, ask: (world: SimulationWorld) => Promise<T>): Promise<T> {
  let answer: T | undefined;
  await simulate(parseScenario(text), {
    atEnd: async (world) => {
      answer = await ask(world);
    },
  });
  if (answer === undefined) throw new Error('the run ended without its world');
  return answer;
}

const ports = (world: SimulationWorld) => ({
  cluster: world.cluster,
  cloud: world.cloud,
  logger: silent,
  metrics: quietMetrics,
  nowMs: world.nowMs,
});

const deployment = (name: string, replicas: number, cpu: string, more = '') => `  - kind: Deployment
    name: ${name}
    replicas: ${replicas}
${more}    template:
      metadata: { labels: { app: ${name} } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "${cpu}" } }
`;

const scenario = (spec: string, workloads: string, annotations?: string) => `name: explain
duration: 4m
bootDelay: 30s
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  spec,
  '',
  'al2023@latest',
  annotations,
)}workloads:
${workloads}`;

type Pods = { pending: PodExplanation[]; bound: PodExplanation[]; nodes: NodeExplanation[] };

/** Every pod and node of the world, explained. */
async function explainAll(world: SimulationWorld): Promise<Pods> {
  const p = ports(world);
  const pending = (await world.cluster.provisionablePods()).items;
  const bound = (await world.cluster.boundPods()).items;
  const nodes = (await world.cluster.nodeInfos()).items;
  return {
    pending: await Promise.all(pending.map((pod) => explainPod(p, pod))),
    bound: await Promise.all(bound.map((b) => explainPod(p, b.pod))),
    nodes: await Promise.all(nodes.map((n) => explainNode(p, n.name))),
  };
}

const codes = (e: PodExplanation | NodeExplanation) =>
  e.kind === 'notFound' ? [] : e.reasons.map((r) => r.code);

describe('explain over the simulator world', () => {
  it('a pod past the NodePool limits, a pod no instance type fits, and a bound pod', async () => {
    const all = await atEndOf(
      scenario('      limits: { cpu: "8" }\n', deployment('web', 3, '3') + deployment('huge', 1, '500')),
      explainAll,
    );
    const byApp = (app: string) => all.pending.filter((e) => e.pod.includes(`/${app}-`));
    const [limited] = byApp('web');
    expect(byApp('web')).toHaveLength(1);
    expect(codes(limited as PodExplanation)).toEqual(['nodePoolLimits']);
    expect(limited).toMatchObject({
      kind: 'pod',
      nodePools: [{ nodePool: 'default', code: 'nodePoolLimits', headline: POD_REASONS.nodePoolLimits }],
      failedScheduling: expect.stringMatching(/^nodePool default: limits cpu 8 /),
    });
    const [huge] = byApp('huge');
    expect(codes(huge as PodExplanation)).toEqual(['noInstanceTypeFits']);
    if (huge?.kind !== 'pod') throw new Error('huge is not explained');
    // The closest misses: what the pod asks for, and the largest of the NodePool's class.
    expect(huge.nodePools[0]?.detail).toMatch(
      /^no instance type has 500 cpu; the pod requests cpu 500, the closest are m6i\.xlarge \(cpu \d+m\)$/,
    );
    expect(all.bound).toHaveLength(2);
    for (const b of all.bound) {
      expect(codes(b)).toEqual(['bound']);
      expect(b).toMatchObject({ node: expect.any(String) });
    }
  }, 60_000);

  it('a node held by a PodDisruptionBudget, and by a budget of 0 nodes', async () => {
    const pdb = await atEndOf(
      scenario(
        '      disruption: { consolidateAfter: 0s }\n',
        deployment('keep', 1, '1', '    disruptionBudget: { maxUnavailable: 0 }\n'),
      ),
      explainAll,
    );
    expect(pdb.nodes).toHaveLength(1);
    expect(pdb.nodes[0]).toMatchObject({
      kind: 'node',
      verdict: 'stays',
      nodePool: 'default',
      reasons: [
        {
          code: 'pdb',
          headline: NODE_REASONS.pdb,
          detail: 'pdb default/keep prevents pod evictions',
        },
      ],
    });

    // Empty nodes a budget of "0" keeps: the budget, its reason and how many it allows.
    const held = await atEndOf(
      scenario(
        '      disruption: { consolidateAfter: 0s, budgets: [{ nodes: "0" }] }\n',
        deployment('gone', 1, '1', '    scale: [{ at: 2m, replicas: 0 }]\n'),
      ),
      explainAll,
    );
    expect(held.nodes).toHaveLength(1);
    expect(held.nodes[0]).toMatchObject({
      verdict: 'stays',
      reasons: [
        {
          code: 'budget',
          detail: expect.stringMatching(
            /budgets\[0\] \(nodes "0"\) allows 0 Empty disruptions now, always active/,
          ),
        },
      ],
      budgets: [{ reason: 'Empty', index: 0, allowed: 0 }],
    });
  }, 60_000);

  it('what disruption does next with an empty node, and a name that is neither pod nor node', async () => {
    const next = await atEndOf(
      scenario(
        '      disruption: { consolidateAfter: 10m }\n',
        deployment('gone', 1, '1', '    scale: [{ at: 2m, replicas: 0 }]\n'),
      ),
      async (world) => ({
        nodes: (await explainAll(world)).nodes,
        missingPod: await explainPod(ports(world), { namespace: 'default', name: 'nope' }),
        missingNode: await explainNode(ports(world), 'nope'),
      }),
    );
    expect(next.nodes[0]).toMatchObject({
      verdict: 'stays',
      reasons: [
        {
          code: 'consolidateAfter',
          detail: expect.stringMatching(/^consolidateAfter 10m: \d+m\d+s left, at /),
        },
      ],
    });
    expect(next.missingPod).toMatchObject({ kind: 'notFound', pod: 'default/nope' });
    expect(next.missingNode).toMatchObject({ kind: 'notFound', node: 'nope' });
  }, 60_000);

  it('what disruption does next: once consolidateAfter has passed, emptiness deletes the node its pod left', async () => {
    const later = await atEndOf(
      scenario(
        '      disruption: { consolidateAfter: 10m }\n',
        deployment('web', 2, '3', '    scale: [{ at: 2m, replicas: 1 }]\n'),
      ),
      async (world) => {
        // Asked as of 15 minutes after the run: nothing changed meanwhile, consolidateAfter passed.
        const p = { ...ports(world), nowMs: world.nowMs + 15 * 60_000 };
        const nodes = (await world.cluster.nodes()).items;
        return Promise.all(
          nodes.map(async (n) => ({ pods: n.pods.length, e: await explainNode(p, n.name) })),
        );
      },
    );
    expect(later.map((l) => l.pods).sort()).toEqual([0, 1]);
    const empty = later.find((l) => l.pods === 0)?.e;
    expect(empty).toMatchObject({
      verdict: 'disrupts',
      reasons: [
        {
          code: 'wouldDisrupt',
          headline: NODE_REASONS.wouldDisrupt,
          detail: expect.stringMatching(
            /^emptiness \(Empty\) would delete nodeClaims default-\S+: \$0\.\d{4}\/h → \$0\.0000\/h$/,
          ),
        },
      ],
      next: { method: 'emptiness', reason: 'Empty', action: 'delete' },
    });
  }, 60_000);
  it('a pod Flotilla launches for: the cheapest instance types that fit, the capacity type and zones', async () => {
    const explained = await atEndOf(scenario('', deployment('web', 1, '1')), async (world) => {
      // A pod applied as the run ends, which kube-scheduler found no room for.
      world.cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'late', namespace: 'default', uid: 'late-uid' },
        spec: { containers: [{ name: 'c', resources: { requests: { cpu: '3500m' } } }] },
      });
      world.cluster.markPodUnschedulable('default', 'late', '0/1 nodes are available: 1 Insufficient cpu.');
      return explainPod(ports(world), { namespace: 'default', name: 'late' });
    });
    expect(explained).toMatchObject({
      kind: 'pod',
      reasons: [
        {
          code: 'wouldLaunch',
          detail: expect.stringMatching(
            /^nodePool default: m6i\.xlarge at \$0\.\d{4}\/h, the cheapest of 1 instance types that fit the pod and the NodePool requirements, on-demand in us-east-1a, us-east-1b, us-east-1c$/,
          ),
        },
      ],
      launch: { nodePool: 'default', capacityType: 'on-demand', candidates: 1, pods: ['default/late'] },
    });
  }, 60_000);
});

/** A pod applied as the run ends, which kube-scheduler found no room for. */
function latePod(world: SimulationWorld, name: string, cpu: string, spec: Record<string, unknown> = {}) {
  world.cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `${name}-uid` },
    spec: { ...spec, containers: [{ name: 'c', resources: { requests: { cpu } } }] },
  });
  world.cluster.markPodUnschedulable('default', name, '0/1 nodes are available: 1 Insufficient cpu.');
}

/** Pods of 1 cpu applied as the run ends (latePod), by name with their spec, each explained. */
async function explainLate(world: SimulationWorld, pods: Record<string, Record<string, unknown>>) {
  const out: Record<string, PodExplanation> = {};
  for (const [name, spec] of Object.entries(pods)) latePod(world, name, '1', spec);
  for (const name of Object.keys(pods)) {
    out[name] = await explainPod(ports(world), { namespace: 'default', name });
  }
  return out;
}

/** The NodePool of this file with a taint on its nodes and `requirement` (a YAML item), no workloads. */
const taintedScenario = (requirement = '') =>
  scenario('', '').replace(
    'workloads:\n',
    `${requirement}          taints: [{ key: dedicated, value: batch, effect: NoSchedule }]\nworkloads: []\n`,
  );
const TOLERATES = {
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' }],
};

describe('explain over the simulator world: the reasons of a pod no NodePool takes', () => {
  it('a NodePool taint the pod does not tolerate, and a requirement the NodePool excludes', async () => {
    const explained = await atEndOf(taintedScenario(), (world) =>
      explainLate(world, {
        plain: {},
        picky: { ...TOLERATES, nodeSelector: { 'karpenter.k8s.aws/instance-family': 'c7g' } },
      }),
    );
    // Neither matches the only NodePool: the headline is that no NodePool does, and the NodePool's
    // verdict says why.
    expect(explained['plain']).toMatchObject({
      kind: 'pod',
      reasons: [{ code: 'noNodePool', headline: POD_REASONS.noNodePool }],
      nodePools: [
        {
          nodePool: 'default',
          code: 'taintNotTolerated',
          headline: POD_REASONS.taintNotTolerated,
          detail: 'taint dedicated=batch:NoSchedule not tolerated',
          podMatches: false,
        },
      ],
    });
    expect(explained['picky']).toMatchObject({
      kind: 'pod',
      reasons: [{ code: 'noNodePool', headline: POD_REASONS.noNodePool }],
      nodePools: [
        {
          nodePool: 'default',
          code: 'requirements',
          headline: POD_REASONS.requirements,
          detail: expect.stringMatching(/^pod requires karpenter\.k8s\.aws\/instance-family In \[c7g\]/),
          podMatches: false,
        },
      ],
    });
    // The FailedScheduling message the provisioner records says the same.
    const picky = explained['picky'];
    if (picky?.kind !== 'pod') throw new Error('picky is not explained');
    expect(picky.failedScheduling).toContain(picky.nodePools[0]?.detail ?? '-');
  }, 60_000);
});

describe('explain over the simulator world: a NodeClaim on its way', () => {
  it('a pod nominated to the NodeClaim, and the NodeClaim not initialized', async () => {
    // Nodes boot in 10 minutes and the run ends after 2: the NodeClaim for web has no Node yet.
    const booting = scenario('', deployment('web', 1, '1'))
      .replace('duration: 4m', 'duration: 2m')
      .replace('bootDelay: 30s', 'bootDelay: 10m');
    const explained = await atEndOf(booting, async (world) => {
      latePod(world, 'late', '1');
      const [claim] = (await world.cluster.nodeClaims()).items;
      if (claim === undefined) throw new Error('no NodeClaim was launched');
      return {
        claim: claim.name,
        pod: await explainPod(ports(world), { namespace: 'default', name: 'late' }),
        node: await explainNode(ports(world), claim.name),
      };
    });
    expect(explained.pod).toMatchObject({
      kind: 'pod',
      reasons: [
        {
          code: 'nominated',
          headline: POD_REASONS.nominated,
          detail: `nodeClaim ${explained.claim} has room for it once its node joins`,
        },
      ],
      nodeClaim: explained.claim,
    });
    expect(explained.node).toMatchObject({
      kind: 'node',
      verdict: 'stays',
      reasons: [
        {
          code: 'notInitialized',
          headline: NODE_REASONS.notInitialized,
          detail: `nodeClaim ${explained.claim} has no Node yet`,
        },
      ],
    });
  }, 60_000);
});

describe('explain over the simulator world: a WhenEmpty NodePool', () => {
  it('a node with pods stays: the NodePool consolidates only empty nodes', async () => {
    const all = await atEndOf(
      scenario(
        '      disruption: { consolidationPolicy: WhenEmpty, consolidateAfter: 0s }\n',
        deployment('web', 1, '1'),
      ),
      explainAll,
    );
    expect(all.nodes).toHaveLength(1);
    expect(all.nodes[0]).toMatchObject({
      kind: 'node',
      verdict: 'stays',
      nodePool: 'default',
      reasons: [
        {
          code: 'whenEmptyWithPods',
          headline: NODE_REASONS.whenEmptyWithPods,
          detail: 'nodePool default consolidates only empty nodes; 1 pods run here',
        },
      ],
    });
  }, 60_000);
});

describe('explain over the simulator world: a NodePool with no instance type to launch', () => {
  it('is the reason of the pods it would take, and not of those it would not', async () => {
    // A tainted NodePool whose requirements leave no offering: no instance type is in that zone.
    const explained = await atEndOf(
      taintedScenario(
        '            - { key: topology.kubernetes.io/zone, operator: In, values: [nowhere-1z] }\n',
      ),
      (world) => explainLate(world, { plain: {}, batch: TOLERATES }),
    );
    const verdict = {
      nodePool: 'default',
      code: 'noInstanceTypeFits',
      detail: expect.stringMatching(
        /^no instance type with an available offering matches the nodePool requirements \(/,
      ),
    };
    expect(explained['batch']).toMatchObject({
      reasons: [{ code: 'noInstanceTypeFits', headline: POD_REASONS.noInstanceTypeFits }],
      nodePools: [{ ...verdict, podMatches: true }],
    });
    // The NodePool says it first, but the pod does not tolerate its taint anyway.
    expect(explained['plain']).toMatchObject({
      reasons: [{ code: 'noNodePool', headline: POD_REASONS.noNodePool }],
      nodePools: [{ ...verdict, podMatches: false }],
    });
  }, 60_000);
});

describe('explain over the simulator world: a NodePool a schedule’s window holds at 0 CPUs', () => {
  it('a node the window takes is disrupted next by the schedule method, whatever consolidation says', async () => {
    // The window opens at 01:00 UTC; the run ends at 00:04 with one node, which WhenEmpty keeps.
    const windowAt = Date.parse('2026-01-01T01:00:30Z');
    const annotation = `{ flotilla.io/schedules: '[{"name":"night","start":"0 1 * * *","end":"0 2 * * *","timeZone":"UTC","limits":{"cpu":"0"}}]' }`;
    const text = scenario(
      '      disruption: { consolidationPolicy: WhenEmpty, consolidateAfter: 0s }\n',
      deployment('web', 1, '1'),
      annotation,
    );
    const [now, open] = await atEndOf(text, async (world) => {
      const [node] = (await world.cluster.nodeInfos()).items;
      const name = node?.name ?? '';
      return [
        await explainNode(ports(world), name),
        await explainNode({ ...ports(world), nowMs: windowAt }, name),
      ];
    });
    expect(now).toMatchObject({ verdict: 'stays', reasons: [{ code: 'whenEmptyWithPods' }] });
    expect(open).toMatchObject({
      kind: 'node',
      verdict: 'disrupts',
      reasons: [
        {
          code: 'wouldDisrupt',
          detail: expect.stringMatching(
            /^schedule \(Scheduled\) would delete nodeClaims default-[0-9a-f]+: /,
          ),
        },
      ],
      next: { method: 'schedule', reason: 'Scheduled', action: 'delete' },
    });
  }, 60_000);
});
