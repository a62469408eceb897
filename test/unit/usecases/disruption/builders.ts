import fc from 'fast-check';
import {
  allowedDisruptions,
  type BudgetCounts,
  type DisruptionBudget,
  type DisruptionReason,
  type FitScoring,
  type InstanceType,
  isReschedulable,
  Label,
  type NodeClaimPlan,
  type Pod,
  type PodBlocker,
  type PodDisruptionInfo,
  type SolveResult,
} from '../../../../shared/core/index.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  Condition,
  NodePoolDisruption,
} from '../../../../shared/ports/cluster.ts';
import { balancedDisruption } from '../../../../shared/usecases/disruption/balanced.ts';
import type {
  DisruptionCandidate,
  SimulateScheduling,
} from '../../../../shared/usecases/disruption/index.ts';
import { simulateWithout } from '../../../../shared/usecases/disruption/simulation.ts';
import {
  type ClusterState,
  type SchedulingInput,
  toSchedulingInput,
} from '../../../../shared/usecases/state/cluster-state.ts';
import { selectNodePools } from '../../../../shared/usecases/state/eligibility.ts';
import { pod as fixturePod, condition as statusCondition } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode as fixtureNode } from '../../../fixtures/nodes.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { readyNodeClass } from '../../memory/fixtures.ts';
import { nodeClass, nodePool, plan } from '../provisioning/builders.ts';

// Builders of the objects the disruption use cases read: NodePools, NodeClaims, Nodes, bound pods
// and candidates, one line per case.

export const T0 = Date.parse('2026-11-21T10:00:00Z');
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const iso = (ms: number): string => new Date(ms).toISOString();

/** A ClusterNodePool with the CRD's disruption defaults, changed by `disruption`. */
export function pool(
  name: string,
  disruption: Partial<NodePoolDisruption> = {},
  more: Partial<ClusterNodePool> = {},
): ClusterNodePool {
  const base = nodePool(name, {}, more);
  return { ...base, disruption: { ...base.disruption, ...disruption } };
}

export function condition(
  type: string,
  status: 'True' | 'False' = 'True',
  atMs = T0,
  reason = type,
): Condition {
  return statusCondition(type, { status, reason, lastTransitionTime: iso(atMs) });
}

/** Launched, Registered and Initialized at T0, as a NodeClaim with a running Node is. */
export const READY_CONDITIONS: readonly Condition[] = [
  condition('Launched'),
  condition('Registered'),
  condition('Initialized'),
];

export interface ClaimOptions {
  readonly pool?: string;
  readonly conditions?: readonly Condition[];
  readonly createdAtMs?: number;
  readonly deleting?: boolean;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly terminationGracePeriod?: string;
  /** `status.nodeName`; `null` leaves it out (the node is found by provider ID). @default node-<name> */
  readonly nodeName?: string | null;
  readonly imageId?: string;
  readonly lastPodEventMs?: number;
}

export function nodeClaim(name: string, o: ClaimOptions = {}): ClusterNodeClaim {
  return readNodeClaim(name, {
    uid: `uid-${name}`,
    nodePoolName: o.pool ?? 'default',
    labels: o.labels ?? {},
    annotations: o.annotations ?? {},
    finalizers: ['karpenter.sh/termination'],
    ...(o.terminationGracePeriod === undefined ? {} : { terminationGracePeriod: o.terminationGracePeriod }),
    createdAtMs: o.createdAtMs ?? T0,
    deleting: o.deleting ?? false,
    status: {
      providerId: providerIdOf(name),
      ...(o.nodeName === null ? {} : { nodeName: o.nodeName ?? `node-${name}` }),
      ...(o.imageId === undefined ? {} : { imageId: o.imageId }),
      conditions: o.conditions ?? READY_CONDITIONS,
      ...(o.lastPodEventMs === undefined ? {} : { lastPodEventMs: o.lastPodEventMs }),
    },
  });
}

export const providerIdOf = (claimName: string): string => `aws:///us-east-1a/i-${claimName}`;

export interface NodeOptions {
  /** The `karpenter.sh/nodepool` label; `null` leaves it out. @default default */
  readonly pool?: string | null;
  readonly pods?: readonly Pod[];
  readonly annotations?: Record<string, string>;
  readonly taints?: ClusterNode['taints'];
  readonly ready?: boolean;
  readonly deleting?: boolean;
  readonly providerId?: string;
  /** Problems of pods bound to the node that could not be read. */
  readonly unreadablePods?: readonly string[];
}

/** An initialized Node `name` of 4 CPUs and 16 GiB, Ready, of NodePool `default` unless `o` says otherwise. */
export function clusterNode(name: string, o: NodeOptions = {}): ClusterNode {
  const poolName = o.pool === undefined ? 'default' : o.pool;
  return fixtureNode(name, {
    labels: {
      [Label.hostname]: name,
      ...(poolName === null ? {} : { [Label.nodePool]: poolName }),
    },
    ...(poolName === null ? {} : { nodePoolName: poolName }),
    ...(o.taints === undefined ? {} : { taints: o.taints }),
    allocatable: { cpu: 4000, memory: 16 * 1024 ** 3, pods: 110 },
    pods: o.pods ?? [],
    annotations: o.annotations ?? {},
    ready: o.ready ?? true,
    deleting: o.deleting ?? false,
    ...(o.providerId === undefined ? {} : { providerId: o.providerId }),
    ...(o.unreadablePods === undefined ? {} : { unreadablePods: o.unreadablePods }),
  });
}

/** A pod bound to a node, in namespace `apps`. */
export function boundPod(name: string, disruption?: PodDisruptionInfo, extra: Partial<Pod> = {}): Pod {
  return fixturePod(name, {
    labels: { app: name },
    ...(disruption === undefined ? {} : { disruption }),
    ...extra,
  });
}

export const daemonPod = (name: string): Pod => boundPod(name, undefined, { daemonSetName: name });

export interface CandidateOptions extends ClaimOptions {
  readonly nodePool?: ClusterNodePool;
  readonly pods?: readonly Pod[];
  readonly blockers?: readonly PodBlocker[];
}

/** A candidate built directly (buildCandidates has its own tests); reschedulable pods filtered. */
export function candidate(name: string, o: CandidateOptions = {}): DisruptionCandidate {
  const nodePoolValue = o.nodePool ?? pool(o.pool ?? 'default');
  const claim = nodeClaim(name, { ...o, pool: nodePoolValue.pool.name });
  const node = clusterNode(`node-${name}`, { pool: nodePoolValue.pool.name, pods: o.pods ?? [] });
  const reschedulablePods = node.pods.filter(isReschedulable);
  return {
    nodeClaim: claim,
    node,
    nodePool: nodePoolValue,
    disruptionCost: balancedDisruption(reschedulablePods),
    reschedulablePods,
    blockers: o.blockers ?? [],
  };
}

/** What a consolidatable candidate runs on and costs. */
export interface ConsolidatableOptions {
  /** @default NodePool `default` with the CRD's disruption defaults */
  readonly nodePool?: ClusterNodePool;
  /** Its instance type label. */
  readonly instanceType: string;
  /** Its capacity type label. @default 'on-demand' */
  readonly capacityType?: string;
  readonly pods: readonly Pod[];
  /** What it costs, $/h. */
  readonly price: number;
}

/** A Consolidatable candidate (Ready, Consolidatable since T0) of `o.instanceType` running `o.pods`. */
export function consolidatable(name: string, o: ConsolidatableOptions): DisruptionCandidate {
  return {
    ...candidate(name, {
      ...(o.nodePool === undefined ? {} : { nodePool: o.nodePool }),
      conditions: [...READY_CONDITIONS, condition('Consolidatable')],
      labels: { [Label.capacityType]: o.capacityType ?? 'on-demand', [Label.instanceType]: o.instanceType },
      pods: o.pods,
    }),
    pricePerHour: o.price,
  };
}

/** A replacement the simulation plans. */
export const replacement = (name: string, nodePoolName = 'default'): NodeClaimPlan =>
  plan({ name, nodePoolName });

/**
 * A simulation that places the pods of every candidate on `replacements`, except on the nodes
 * named in `unschedulableOn`, whose pods stay unschedulable. Records each call's candidates.
 */
export function simulation(
  o: { readonly replacements?: readonly NodeClaimPlan[]; readonly unschedulableOn?: readonly string[] } = {},
): SimulateScheduling & { readonly calls: string[][] } {
  const calls: string[][] = [];
  const unschedulableOn = new Set(o.unschedulableOn ?? []);
  const simulate = (candidates: readonly DisruptionCandidate[]): SolveResult => {
    calls.push(candidates.map((c) => c.nodeClaim.name));
    const stuck = candidates.filter((c) => unschedulableOn.has(c.nodeClaim.name));
    return {
      nodeClaims: stuck.length > 0 ? [] : (o.replacements ?? []),
      placements: [],
      unschedulable: stuck.flatMap((c) =>
        c.reschedulablePods.map((p) => ({
          pod: { uid: p.uid, namespace: p.namespace, name: p.name },
          reasons: [],
          message: 'no NodePool fits',
        })),
      ),
    };
  };
  return Object.assign(simulate, { calls });
}

// --- arbitraries for the method properties -------------------------------------------------

const BUDGET_NODES = ['0', '1', '2', '3', '5', '10%', '34%', '50%', '100%', 'lots'] as const;
const REASONS: readonly DisruptionReason[] = ['Empty', 'Drifted', 'Underutilized'];

/** A NodePool's `spec.disruption.budgets`: counts, percentages, reasons, a malformed entry. */
export const budgetsArb: fc.Arbitrary<DisruptionBudget[]> = fc.array(
  fc.record(
    {
      nodes: fc.constantFrom(...BUDGET_NODES),
      reasons: fc.subarray([...REASONS], { minLength: 1 }),
    },
    { requiredKeys: ['nodes'] },
  ),
  { maxLength: 3 },
);

/** What a generated candidate looks like; `candidateFrom` turns it into one. */
export interface CandidateShape {
  readonly createdMinute: number;
  readonly pods: number;
  readonly driftedMinute: number;
  readonly blocked: boolean;
  readonly terminationGracePeriod: boolean;
  readonly unschedulable: boolean;
}

export const candidateShapeArb: fc.Arbitrary<CandidateShape> = fc.record({
  createdMinute: fc.integer({ min: 0, max: 20 }),
  pods: fc.integer({ min: 0, max: 2 }),
  driftedMinute: fc.integer({ min: 0, max: 20 }),
  blocked: fc.boolean(),
  terminationGracePeriod: fc.boolean(),
  unschedulable: fc.boolean(),
});

export interface PoolShape {
  readonly budgets: DisruptionBudget[];
  readonly candidates: CandidateShape[];
  /** Nodes of the pool that are not candidates (they count for percentages). */
  readonly others: number;
  readonly disrupting: number;
}

/** One to three NodePools (`p0`…), each with budgets and candidates. */
export const poolsArb: fc.Arbitrary<PoolShape[]> = fc.array(
  fc.record({
    budgets: budgetsArb,
    candidates: fc.array(candidateShapeArb, { maxLength: 6 }),
    others: fc.integer({ min: 0, max: 6 }),
    disrupting: fc.integer({ min: 0, max: 4 }),
  }),
  { minLength: 1, maxLength: 3 },
);

/** The candidates of the generated pools, Consolidatable and Drifted, and each pool's counts. */
export function worldFrom(shapes: readonly PoolShape[]): {
  readonly candidates: DisruptionCandidate[];
  readonly pools: ClusterNodePool[];
  readonly counts: Map<string, BudgetCounts>;
  readonly unschedulableOn: string[];
} {
  const candidates: DisruptionCandidate[] = [];
  const pools: ClusterNodePool[] = [];
  const counts = new Map<string, BudgetCounts>();
  const unschedulableOn: string[] = [];
  shapes.forEach((shape, p) => {
    const nodePoolValue = pool(`p${p}`, { budgets: shape.budgets });
    pools.push(nodePoolValue);
    const others = shape.others;
    counts.set(nodePoolValue.pool.name, {
      nodes: shape.candidates.length + others,
      disrupting: Math.min(shape.disrupting, others),
    });
    shape.candidates.forEach((c, i) => {
      const name = `p${p}-c${i}`;
      if (c.unschedulable) unschedulableOn.push(name);
      candidates.push(
        candidate(name, {
          nodePool: nodePoolValue,
          createdAtMs: T0 + c.createdMinute * MINUTE,
          conditions: [
            ...READY_CONDITIONS,
            condition('Consolidatable'),
            condition('Drifted', 'True', T0 + c.driftedMinute * MINUTE, 'NodePoolDrifted'),
          ],
          pods: Array.from({ length: c.pods }, (_, k) => boundPod(`${name}-pod-${k}`)),
          blockers: c.blocked
            ? [{ pod: `apps/${name}-pod-0`, kind: 'pdb' as const, why: 'pdb apps/x prevents pod evictions' }]
            : [],
          ...(c.terminationGracePeriod ? { terminationGracePeriod: '1h' } : {}),
        }),
      );
    });
  });
  return { candidates, pools, counts, unschedulableOn };
}

/** `allowed` per NodePool for `reason`, as the controller computes it from budgets and counts. */
export function allowedFor(
  pools: readonly ClusterNodePool[],
  counts: ReadonlyMap<string, BudgetCounts>,
  reason: DisruptionReason,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pools) {
    const c = counts.get(p.pool.name);
    if (c === undefined) continue;
    out.set(p.pool.name, allowedDisruptions(p.disruption.budgets, reason, c, T0).allowed);
  }
  return out;
}

/** What can be on a node, as far as do-not-disrupt goes. */
export type PodKind =
  | 'plain'
  | 'doNotDisrupt'
  | 'daemonDoNotDisrupt'
  | 'mirrorDoNotDisrupt'
  | 'expiredDoNotDisrupt';

export function podOfKind(kind: PodKind, name: string): Pod {
  switch (kind) {
    case 'plain':
      return boundPod(name);
    case 'doNotDisrupt':
      return boundPod(name, { doNotDisrupt: 'true' });
    case 'daemonDoNotDisrupt':
      return boundPod(name, { doNotDisrupt: 'true' }, { daemonSetName: name });
    case 'mirrorDoNotDisrupt':
      return boundPod(name, { doNotDisrupt: 'true', mirror: true });
    case 'expiredDoNotDisrupt':
      return boundPod(name, { doNotDisrupt: '5m', startedAtMs: T0 - 60 * MINUTE });
  }
}

export interface NodeShape {
  readonly pool: 0 | 1;
  readonly pods: PodKind[];
  readonly consolidatable: boolean;
  readonly drifted: boolean;
  readonly terminationGracePeriod: boolean;
  readonly createdMinute: number;
}

export const nodeShapesArb: fc.Arbitrary<NodeShape[]> = fc.array(
  fc.record({
    pool: fc.constantFrom(0 as const, 1 as const),
    pods: fc.array(
      fc.constantFrom<PodKind>(
        'plain',
        'doNotDisrupt',
        'daemonDoNotDisrupt',
        'mirrorDoNotDisrupt',
        'expiredDoNotDisrupt',
      ),
      { maxLength: 3 },
    ),
    consolidatable: fc.boolean(),
    drifted: fc.boolean(),
    terminationGracePeriod: fc.boolean(),
    createdMinute: fc.integer({ min: 0, max: 30 }),
  }),
  { minLength: 1, maxLength: 8 },
);

/** NodeClaims and Nodes of the generated shapes, in NodePools `p0` and `p1`. */
export function clusterFrom(
  shapes: readonly NodeShape[],
  budgets: readonly [DisruptionBudget[], DisruptionBudget[]],
): {
  readonly nodeClaims: ClusterNodeClaim[];
  readonly nodes: ClusterNode[];
  readonly nodePools: Map<string, ClusterNodePool>;
} {
  const nodePools = new Map(
    budgets.map((b, i) => [`p${i}`, pool(`p${i}`, { budgets: b })] as [string, ClusterNodePool]),
  );
  const nodeClaims = shapes.map((s, i) =>
    nodeClaim(`c${i}`, {
      pool: `p${s.pool}`,
      createdAtMs: T0 + s.createdMinute * MINUTE,
      conditions: [
        ...READY_CONDITIONS,
        ...(s.consolidatable ? [condition('Consolidatable')] : []),
        ...(s.drifted ? [condition('Drifted', 'True', T0, 'NodePoolDrifted')] : []),
      ],
      ...(s.terminationGracePeriod ? { terminationGracePeriod: '30m' } : {}),
    }),
  );
  const nodes = shapes.map((s, i) =>
    clusterNode(`node-c${i}`, {
      pool: `p${s.pool}`,
      pods: s.pods.map((k, j) => podOfKind(k, `c${i}-${k}-${j}`)),
    }),
  );
  return { nodeClaims, nodes, nodePools };
}

/** A reschedulable pod on the node says karpenter.sh/do-not-disrupt "true". */
export function hasDoNotDisruptPod(node: ClusterNode): boolean {
  return node.pods.some((p) => isReschedulable(p) && p.disruption?.doNotDisrupt === 'true');
}

/** The scheduling input of a cluster with these NodePools (class `default`) and instance types, and no pods. */
export function schedulingInputOf(
  pools: readonly ClusterNodePool[],
  types: readonly InstanceType[],
): SchedulingInput {
  const state: ClusterState = {
    pendingPods: [],
    nodes: [],
    nodeClaims: [],
    nodePools: pools,
    nodeClasses: [nodeClass],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  const selection = selectNodePools(state.nodePools, state.nodeClasses);
  return toSchedulingInput(state, selection, new Map([['default', types]]), { nowMs: T0 });
}

/**
 * The real disruption simulation (simulateWithout) of a cluster of `nodes`, each given 4 CPUs and
 * 16 GiB, with `nodeClaims` and `pending` pods, NodePool `default` launching `types` (the small
 * test types by default).
 */
export function simulatedCluster(o: {
  readonly nodes: readonly ClusterNode[];
  readonly nodeClaims: readonly ClusterNodeClaim[];
  readonly pending?: readonly Pod[];
  readonly types?: readonly InstanceType[];
  /** The cluster's kube-scheduler strategy (the stack's `kubeSchedulerScoring`). @default LeastAllocated */
  readonly scoring?: FitScoring;
}): SimulateScheduling {
  const state: ClusterState = {
    pendingPods: o.pending ?? [],
    nodes: o.nodes.map((n) => ({ ...n, allocatable: { cpu: 4000, memory: 16 * 1024 ** 3, pods: 110 } })),
    nodeClaims: o.nodeClaims,
    nodePools: [nodePool('default')],
    nodeClasses: [readyNodeClass(new Date(T0))],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  const input = toSchedulingInput(
    state,
    selectNodePools(state.nodePools, state.nodeClasses),
    new Map([['default', o.types ?? SMALL_TYPES]]),
    { nowMs: T0, ...(o.scoring === undefined ? {} : { solveOptions: { kubeSchedulerScoring: o.scoring } }) },
  );
  return (candidates, options) => simulateWithout(input, state, state.nodeClaims, candidates, options);
}
