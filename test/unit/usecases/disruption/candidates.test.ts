import { describe, expect, it } from 'vitest';
import { DISRUPTED_TAINT, type PdbLimit } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import {
  buildCandidates,
  type CandidateInput,
  pdbLimits,
} from '../../../../shared/usecases/disruption/candidates.ts';
import { byConsolidationOrder } from '../../../../shared/usecases/disruption/consolidation.ts';
import {
  boundPod,
  type ClaimOptions,
  clusterNode,
  condition,
  daemonPod,
  type NodeOptions,
  nodeClaim,
  pool,
  providerIdOf,
  T0,
} from './builders.ts';

const POOLS: ReadonlyMap<string, ClusterNodePool> = new Map([
  ['default', pool('default')],
  ['gpu', pool('gpu')],
]);

function input(
  nodeClaims: readonly ClusterNodeClaim[],
  nodes: readonly ClusterNode[],
  more: Partial<CandidateInput> = {},
): CandidateInput {
  return {
    nodeClaims,
    nodes,
    nodePools: POOLS,
    pdbs: [],
    inCommand: new Set(),
    nominated: new Set(),
    priceOf: () => undefined,
    nowMs: T0,
    ...more,
  };
}

interface Case {
  readonly claim?: ClaimOptions;
  readonly node?: NodeOptions | null;
  readonly inCommand?: boolean;
  readonly nominated?: boolean;
  readonly candidate: boolean;
  readonly excluded?: string;
  readonly counts?: { nodes: number; disrupting: number };
}

describe('buildCandidates: one NodeClaim', () => {
  it.each<[string, Case]>([
    ['an initialized NodeClaim with its Node', { candidate: true, counts: { nodes: 1, disrupting: 0 } }],
    [
      'a Node found by provider ID',
      {
        claim: { nodeName: null },
        node: { providerId: providerIdOf('c') },
        candidate: true,
        counts: { nodes: 1, disrupting: 0 },
      },
    ],
    ['no Node', { node: null, candidate: false, counts: { nodes: 0, disrupting: 0 } }],
    [
      'not initialized',
      {
        claim: {
          conditions: [condition('Launched'), condition('Registered'), condition('Initialized', 'False')],
        },
        candidate: false,
        counts: { nodes: 0, disrupting: 0 },
      },
    ],
    [
      'launched only',
      {
        claim: { conditions: [condition('Launched')] },
        candidate: false,
        counts: { nodes: 0, disrupting: 0 },
      },
    ],
    ['an unknown NodePool', { claim: { pool: 'gone' }, node: { pool: 'gone' }, candidate: false }],
    [
      'a deleting NodeClaim',
      { claim: { deleting: true }, candidate: false, counts: { nodes: 1, disrupting: 1 } },
    ],
    ['a deleting Node', { node: { deleting: true }, candidate: false, counts: { nodes: 1, disrupting: 1 } }],
    ['a NodeClaim in a command', { inCommand: true, candidate: false, counts: { nodes: 1, disrupting: 1 } }],
    ['a NotReady Node', { node: { ready: false }, candidate: false, counts: { nodes: 1, disrupting: 1 } }],
    [
      'a Node without the karpenter.sh/nodepool label',
      { node: { pool: null }, candidate: false, counts: { nodes: 1, disrupting: 0 } },
    ],
    [
      'a Node with the karpenter.sh/disrupted taint',
      { node: { taints: [DISRUPTED_TAINT] }, candidate: false, counts: { nodes: 1, disrupting: 0 } },
    ],
    [
      'a Node with another taint of that key and effect NoExecute',
      {
        node: { taints: [{ key: DISRUPTED_TAINT.key, effect: 'NoExecute' }] },
        candidate: true,
        counts: { nodes: 1, disrupting: 0 },
      },
    ],
    [
      'a Node annotated karpenter.sh/do-not-disrupt=true',
      {
        node: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } },
        candidate: false,
        excluded: 'node has karpenter.sh/do-not-disrupt',
        counts: { nodes: 1, disrupting: 0 },
      },
    ],
    [
      'a Node annotated karpenter.sh/do-not-disrupt=false',
      { node: { annotations: { 'karpenter.sh/do-not-disrupt': 'false' } }, candidate: true },
    ],
    [
      'a Node with pods that cannot be read, however empty it looks',
      {
        node: {
          unreadablePods: [
            'pod "apps/pinned": spec.containers[0].resources.requests.cpu: "lots" is not a Kubernetes quantity',
            'pod "apps/other": spec: missing',
          ],
        },
        candidate: false,
        excluded:
          'a pod on it cannot be read: pod "apps/pinned": spec.containers[0].resources.requests.cpu: "lots" is not a Kubernetes quantity (and 1 more)',
        counts: { nodes: 1, disrupting: 0 },
      },
    ],
    [
      'a nominated Node',
      {
        nominated: true,
        candidate: false,
        excluded: 'node is nominated for pending pods',
        counts: { nodes: 1, disrupting: 0 },
      },
    ],
  ])('%s', (_, c) => {
    const claim = nodeClaim('c', c.claim ?? {});
    const nodes = c.node === null ? [] : [clusterNode('node-c', c.node ?? {})];
    const set = buildCandidates(
      input([claim], nodes, {
        inCommand: new Set(c.inCommand ? ['c'] : []),
        nominated: new Set(c.nominated ? ['node-c'] : []),
      }),
    );
    expect(set.candidates.map((x) => x.nodeClaim.name)).toEqual(c.candidate ? ['c'] : []);
    expect(set.excluded.map((x) => ({ nodeClaim: x.nodeClaim.name, node: x.node.name, why: x.why }))).toEqual(
      c.excluded === undefined ? [] : [{ nodeClaim: 'c', node: 'node-c', why: c.excluded }],
    );
    if (c.counts !== undefined) expect(set.counts.get(claim.nodePoolName ?? '')).toEqual(c.counts);
    else if (claim.nodePoolName === 'gone') expect([...set.counts.keys()]).toEqual([]);
  });
});

describe('buildCandidates: what a candidate carries', () => {
  const web = boundPod('web');
  const db = boundPod('db', { deletionCost: 2 ** 27 });
  const pdbs: PdbLimit[] = [
    { namespace: 'apps', name: 'web-pdb', selector: { matchLabels: { app: 'web' } }, disruptionsAllowed: 0 },
  ];

  it('its pods, cost, blockers, price and NodePool', () => {
    const node = clusterNode('node-c', {
      pods: [web, db, daemonPod('agent'), boundPod('etcd', { mirror: true })],
    });
    const set = buildCandidates(
      input([nodeClaim('c')], [node], { pdbs, priceOf: (claim) => (claim.name === 'c' ? 0.096 : undefined) }),
    );
    expect(set.candidates).toHaveLength(1);
    const c = set.candidates[0];
    expect(c?.reschedulablePods).toEqual([web, db]);
    // Karpenter v1.14: 1 for the node, plus the eviction costs of web and db.
    expect(c?.disruptionCost).toBe(4);
    expect(c?.blockers).toEqual([
      { pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' },
    ]);
    expect(c?.pricePerHour).toBe(0.096);
    expect(c?.nodePool).toBe(POOLS.get('default'));
    expect(c?.node).toBe(node);
  });

  it('no price when the catalog does not know it', () => {
    const set = buildCandidates(input([nodeClaim('c')], [clusterNode('node-c')]));
    expect(set.candidates[0]).not.toHaveProperty('pricePerHour');
  });

  it("judges do-not-disrupt durations at nowMs, from the pod's start", () => {
    const pod = boundPod('batch', { doNotDisrupt: '1h', startedAtMs: T0 });
    const node = clusterNode('node-c', { pods: [pod] });
    const during = buildCandidates(input([nodeClaim('c')], [node], { nowMs: T0 + 59 * 60_000 }));
    const after = buildCandidates(input([nodeClaim('c')], [node], { nowMs: T0 + 60 * 60_000 }));
    expect(during.candidates[0]?.blockers.map((b) => b.pod)).toEqual(['apps/batch']);
    expect(after.candidates[0]?.blockers).toEqual([]);
  });
});

describe('pdbLimits: the cluster budgets as the blockers read them', () => {
  const budget = (policy?: 'IfHealthyBudget' | 'AlwaysAllow') => ({
    namespace: 'apps',
    name: 'web-pdb',
    selector: { matchLabels: { app: 'web' } },
    maxUnavailable: 1,
    disruptionsAllowed: 0,
    currentHealthy: 2,
    desiredHealthy: 2,
    expectedPods: 3,
    ...(policy === undefined ? {} : { unhealthyPodEvictionPolicy: policy }),
  });
  const unready = boundPod('web', { notReady: true });
  const node = clusterNode('node-c', { pods: [unready] });
  const blockersWith = (policy?: 'IfHealthyBudget' | 'AlwaysAllow') =>
    buildCandidates(input([nodeClaim('c')], [node], { pdbs: pdbLimits([budget(policy)]) })).candidates[0]
      ?.blockers;

  it('lets a not-Ready pod go under an AlwaysAllow budget at 0, and only then', () => {
    expect(pdbLimits([budget('AlwaysAllow')])).toEqual([
      {
        namespace: 'apps',
        name: 'web-pdb',
        selector: { matchLabels: { app: 'web' } },
        disruptionsAllowed: 0,
        alwaysAllowUnhealthy: true,
      },
    ]);
    expect(blockersWith('AlwaysAllow')).toEqual([]);
    expect(blockersWith('IfHealthyBudget')).toEqual([
      { pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' },
    ]);
    expect(blockersWith()).toHaveLength(1);
  });
});

describe("buildCandidates: Balanced's totals and the candidates' order", () => {
  it('totals every priced node of the NodePool, candidate or not, each at 1 plus its pods', () => {
    const claims = [
      nodeClaim('a'),
      nodeClaim('protected'),
      nodeClaim('unpriced'),
      nodeClaim('going', { deleting: true }),
      nodeClaim('g', { pool: 'gpu' }),
    ];
    const nodes = [
      clusterNode('node-a', { pods: [boundPod('a1'), boundPod('a2'), daemonPod('agent')] }),
      clusterNode('node-protected', {
        pods: [boundPod('p1')],
        annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
      }),
      clusterNode('node-unpriced', { pods: [boundPod('u1')] }),
      clusterNode('node-going', { pods: [boundPod('x1')] }),
      clusterNode('node-g', { pool: 'gpu' }),
    ];
    const prices: Record<string, number> = { a: 0.2, protected: 0.1, going: 0.4, g: 1 };
    const set = buildCandidates(input(claims, nodes, { priceOf: (c) => prices[c.name] }));
    expect(set.candidates.map((c) => c.nodeClaim.name).sort()).toEqual(['a', 'g', 'unpriced']);
    expect(set.poolTotals.get('default')?.pricePerHour).toBeCloseTo(0.3, 10);
    // a: 1 + 2 pods; protected: 1 + 1 pod.
    expect(set.poolTotals.get('default')?.disruptionCost).toBe(5);
    expect(set.poolTotals.get('gpu')).toEqual({ pricePerHour: 1, disruptionCost: 1 });
  });

  it('orders without a lifetime factor, as Karpenter v1.14: a node near expiry costs as much to disrupt as a young one', () => {
    const pods = [boundPod('p1'), boundPod('p2')];
    const claims = [
      nodeClaim('a-young', { createdAtMs: T0 }),
      nodeClaim('b-old', { createdAtMs: T0 - 540 * 3_600_000 }),
      nodeClaim('c-pricier', { createdAtMs: T0 }),
    ];
    const nodes = [
      clusterNode('node-a-young', { pods }),
      clusterNode('node-b-old', { pods }),
      clusterNode('node-c-pricier', { pods }),
    ];
    const prices: Record<string, number> = { 'a-young': 0.1, 'b-old': 0.1, 'c-pricier': 0.2 };
    const set = buildCandidates(input(claims, nodes, { priceOf: (c) => prices[c.name] }));
    const cost = new Map(set.candidates.map((c) => [c.nodeClaim.name, c.disruptionCost]));
    // 540 of its 720 hours gone changes nothing: 1 for the node and 1 per pod.
    expect(cost.get('a-young')).toBe(3);
    expect(cost.get('b-old')).toBe(3);
    // Price over disruption cost, then the name: the old node no longer jumps the queue.
    expect([...set.candidates].sort(byConsolidationOrder).map((c) => c.nodeClaim.name)).toEqual([
      'c-pricier',
      'a-young',
      'b-old',
    ]);
  });
});

describe('buildCandidates: budget counts per NodePool', () => {
  it('counts initialized nodes, and those of them deleting, in a command or NotReady as disrupting', () => {
    const claims = [
      nodeClaim('ok-1'),
      nodeClaim('ok-2'),
      nodeClaim('deleting', { deleting: true }),
      nodeClaim('commanded'),
      nodeClaim('not-ready'),
      nodeClaim('starting', { conditions: [condition('Launched')] }),
      nodeClaim('no-node'),
      nodeClaim('gpu-1', { pool: 'gpu' }),
      nodeClaim('gpu-node-deleting', { pool: 'gpu' }),
      nodeClaim('orphan', { pool: 'gone' }),
    ];
    const nodes = [
      clusterNode('node-ok-1'),
      clusterNode('node-ok-2'),
      clusterNode('node-deleting'),
      clusterNode('node-commanded'),
      clusterNode('node-not-ready', { ready: false }),
      clusterNode('node-starting', { ready: false }),
      clusterNode('node-gpu-1', { pool: 'gpu' }),
      clusterNode('node-gpu-node-deleting', { pool: 'gpu', deleting: true }),
      clusterNode('node-orphan', { pool: 'gone' }),
    ];
    const set = buildCandidates(input(claims, nodes, { inCommand: new Set(['commanded']) }));
    expect(Object.fromEntries(set.counts)).toEqual({
      default: { nodes: 5, disrupting: 3 },
      gpu: { nodes: 2, disrupting: 1 },
    });
    expect(set.candidates.map((c) => c.nodeClaim.name)).toEqual(['ok-1', 'ok-2', 'gpu-1']);
  });

  it('a NodePool whose NodeClaims are all excluded still has counts', () => {
    const set = buildCandidates(
      input(
        [nodeClaim('a')],
        [clusterNode('node-a', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } })],
      ),
    );
    expect(set.candidates).toEqual([]);
    expect(set.counts.get('default')).toEqual({ nodes: 1, disrupting: 0 });
  });
});
