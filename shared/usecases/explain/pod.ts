import {
  computePodRequests,
  formatQuantity,
  type InstanceType,
  Label,
  type LaunchCandidate,
  type NodeClaimPlan,
  type Offering,
  type Pod,
  Requirements,
  type ResourceList,
  solve,
} from '../../core/index.ts';
import { computeAllocatable } from '../../core/instance-type.ts';
import type { FitScoring } from '../../core/resource-fit-score.ts';
import type { Cloud } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodePool } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { MetricsSink } from '../decisions/decision.ts';
import { reconcileLaunchBackoff } from '../runaway-guard/index.ts';
import { hostablePendingPods } from '../runaway-guard/taints.ts';
import {
  buildSchedulingInput,
  poolInstanceTypes,
  readClusterObjects,
  type SchedulingInput,
  STATIC_NODEPOOL_REASON,
  withPendingPods,
} from '../state/cluster-state.ts';
import { NO_NODEPOOL_DEFINED, type SkippedNodePool, unschedulableMessage } from '../state/eligibility.ts';
import { expectedCapacityType } from '../state/new-nodeclaim.ts';
import { ignoringWrites, readOnlyCluster } from './read-only.ts';
import { ASSUMED_MARK, type PodReasonCode, podReason, type Reason } from './reasons.ts';

// `flotilla explain pod`: why a pod waits, NodePool by NodePool, or what Flotilla launches for it,
// from the provisioner's own steps on the cluster as it is (read once, written never): the
// cluster state read, the runaway guard's judgement (its writes ignored), the NodePool choice,
// the scheduler, and the FailedScheduling message the provisioner would record.

export interface ExplainPorts {
  /** Read through a read-only view: nothing is ever written. */
  readonly cluster: Cluster;
  readonly cloud: Pick<Cloud, 'instanceTypes'>;
  /** Where the controllers' own log lines go (explain passes a silent logger). */
  readonly logger: Logger;
  /** Where the metrics of the controllers' decisions go (explain measures nothing: dropMetrics). */
  readonly metrics: MetricsSink;
  readonly nowMs: number;
  /**
   * The stack's `repackConsolidation`, which changes what disruption takes next (explain node).
   * @default false
   */
  readonly repackConsolidation?: boolean;
  /** The stack's `runawayGuard`: false, no NodePool is judged paused. @default true */
  readonly runawayGuard?: boolean;
  /** The stack's `maxCostPerHour`, the cluster's dollar limit. @default none */
  readonly maxCostPerHour?: number;
  /**
   * The stack's `kubeSchedulerScoring`, what disruption's replay of moved pods expects (explain
   * node). @default LeastAllocated
   */
  readonly kubeSchedulerScoring?: FitScoring;
}

/** A launch the provisioner would make for the pod. */
export interface ExplainedLaunch {
  readonly nodePool: string;
  readonly nodeClass: string;
  /**
   * Cheapest first, at most 10, with the price of the cheapest allowed offering, `priceAssumed`
   * when the catalog only assumes that price (an allowed offering at it is assumed).
   */
  readonly instanceTypes: readonly {
    readonly name: string;
    readonly priceUsdPerHour: number;
    readonly priceAssumed?: true;
  }[];
  readonly candidates: number;
  readonly capacityType: string;
  readonly zones: readonly string[];
  /** Pods the same NodeClaim takes, this one included (`namespace/name`). */
  readonly pods: readonly string[];
}

export interface NodePoolVerdict extends Reason<PodReasonCode> {
  readonly nodePool: string;
  /**
   * The pod tolerates the NodePool's taints and matches its requirements: the reason is what
   * keeps it from this NodePool, not a mismatch.
   */
  readonly podMatches: boolean;
}

export type PodExplanation =
  | { readonly kind: 'notFound'; readonly pod: string; readonly message: string }
  | {
      readonly kind: 'pod';
      readonly pod: string;
      readonly atMs: number;
      /** The headline reasons: where the pod goes, or why it waits. */
      readonly reasons: readonly Reason<PodReasonCode>[];
      /** Per NodePool, why it cannot take the pod (when it waits). */
      readonly nodePools: readonly NodePoolVerdict[];
      readonly launch?: ExplainedLaunch;
      /** What the pod's FailedScheduling Event says, when it waits. */
      readonly failedScheduling?: string;
      readonly node?: string;
      readonly nodeClaim?: string;
    };

const ref = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

/**
 * Explains one pod. A bound pod says where and stops; a pod not waiting for capacity (absent,
 * finished, gated, or not yet marked Unschedulable by kube-scheduler) is `notFound`.
 * @throws ClusterApiError when the cluster cannot be read; CloudApiError / CatalogUnavailableError
 *   when instance types cannot be.
 */
export async function explainPod(
  ports: ExplainPorts,
  target: { readonly namespace: string; readonly name: string },
): Promise<PodExplanation> {
  const cluster = readOnlyCluster(ports.cluster);
  const name = ref(target);
  const [pending, bound] = await Promise.all([cluster.provisionablePods(), cluster.boundPods()]);
  const boundPod = bound.items.find((b) => ref(b.pod) === name);
  if (boundPod !== undefined) {
    return {
      kind: 'pod',
      pod: name,
      atMs: ports.nowMs,
      reasons: [podReason('bound', `on node ${boundPod.nodeName}`)],
      nodePools: [],
      node: boundPod.nodeName,
    };
  }
  const pod = pending.items.find((p) => ref(p) === name);
  if (pod === undefined) {
    return {
      kind: 'notFound',
      pod: name,
      message: `pod ${name} is neither bound to a node nor waiting for capacity: it does not exist, has finished, is scheduling-gated, or kube-scheduler has not marked it Unschedulable yet (kubectl get pod -n ${target.namespace} ${target.name} -o yaml shows which)`,
    };
  }
  // The provisioner's steps, in its order: the state, the runaway guard, the NodePools, the plan.
  const objects = await readClusterObjects(cluster);
  const state = withPendingPods(objects, pending, ports.logger);
  const guard = await reconcileLaunchBackoff(
    { cluster: ignoringWrites(cluster), logger: ports.logger, metrics: ports.metrics },
    {
      kind: 'provisioning',
      pools: state.nodePools,
      claims: state.nodeClaims,
      nodes: state.nodes,
      pendingPods: state.pendingPods,
      nowMs: ports.nowMs,
      enabled: ports.runawayGuard !== false,
    },
  );
  const input = await buildSchedulingInput(state, ports.cloud, {
    nowMs: ports.nowMs,
    pausedNodePools: guard.paused,
    rescheduleDeletingNodes: true,
    ...(ports.maxCostPerHour === undefined ? {} : { solveOptions: { maxCostPerHour: ports.maxCostPerHour } }),
  });
  const result = solve(input.solve);
  const base = { kind: 'pod', pod: name, atMs: ports.nowMs } as const;

  const placement = result.placements.find((p) => ref(p.pod) === name);
  if (placement !== undefined) {
    return placement.kind === 'existingNode'
      ? {
          ...base,
          reasons: [podReason('fitsExistingNode', `node ${placement.nodeName} has room for it`)],
          nodePools: [],
          node: placement.nodeName,
        }
      : {
          ...base,
          reasons: [
            podReason(
              'nominated',
              `nodeClaim ${placement.nodeClaimName} has room for it once its node joins`,
            ),
          ],
          nodePools: [],
          nodeClaim: placement.nodeClaimName,
        };
  }
  const plan = result.nodeClaims.find((c) => c.pods.some((p) => ref(p) === name));
  if (plan !== undefined) {
    const launch = describeLaunch(plan, poolInstanceTypes(input, plan.nodePoolName, plan.nodeClassName));
    const cheapest = launch.instanceTypes[0];
    return {
      ...base,
      reasons: [
        podReason(
          'wouldLaunch',
          `nodePool ${plan.nodePoolName}: ${cheapest === undefined ? 'no candidate' : `${cheapest.name} at $${cheapest.priceUsdPerHour.toFixed(4)}/h${cheapest.priceAssumed === true ? ASSUMED_MARK : ''}`}, the cheapest of ${launch.candidates} instance types that fit the pod${launch.pods.length > 1 ? ` and ${launch.pods.length - 1} other pending pods` : ''} and the NodePool requirements, ${launch.capacityType} in ${launch.zones.join(', ') || 'no zone'}`,
        ),
      ],
      nodePools: [],
      launch,
    };
  }
  const unschedulable = result.unschedulable.find((u) => ref(u.pod) === name);
  const skipped = input.selection.skipped;
  const solverReasons = (unschedulable?.reasons ?? []).filter((r) => r.nodePool !== '');
  const allPools = new Map(state.nodePools.map((p) => [p.pool.name, p]));
  const nodePools: NodePoolVerdict[] = [
    ...solverReasons.map((r) => {
      const code = solverCode(r.reason);
      const detail = withClosest(r.reason, pod, input.nodePools.get(r.nodePool), input);
      // A NodePool with no instance type to launch says so before its taints and requirements are
      // asked: whether the pod would match it at all is asked as for a NodePool left out.
      const pool = allPools.get(r.nodePool);
      const podMatches =
        !isMismatch(code) && (pool === undefined || hostablePendingPods(pool, [pod]).length > 0);
      return { nodePool: r.nodePool, podMatches, ...podReason(code, detail) };
    }),
    // A NodePool left out before planning was not tried: whether the pod would match it at all
    // is asked as the runaway guard asks it (its taints tolerated, its requirements admitting).
    ...skipped.map((s) => {
      const pool = allPools.get(s.nodePool);
      const podMatches = pool !== undefined && hostablePendingPods(pool, [pod]).length > 0;
      return { nodePool: s.nodePool, podMatches, ...podReason(skippedCode(s), s.reason) };
    }),
  ].sort((a, b) => a.nodePool.localeCompare(b.nodePool));
  const message = unschedulableMessage(
    { reasons: unschedulable?.reasons ?? [] },
    { eligible: input.nodePools.size, skipped },
  );
  return {
    ...base,
    reasons: headline(nodePools, message),
    nodePools,
    failedScheduling: message,
  };
}

/** The pod's headline: no NodePool when none could ever take it, else each distinct reason. */
function headline(pools: readonly NodePoolVerdict[], message: string): Reason<PodReasonCode>[] {
  if (pools.length === 0) return [podReason('noNodePool', message || NO_NODEPOOL_DEFINED)];
  const relevant = pools.filter((p) => p.podMatches);
  if (relevant.length === 0) {
    return [podReason('noNodePool', `every NodePool rejects it: ${message}`)];
  }
  const seen = new Set<PodReasonCode>();
  const out: Reason<PodReasonCode>[] = [];
  for (const p of relevant) {
    if (seen.has(p.code)) continue;
    seen.add(p.code);
    const names = relevant.filter((r) => r.code === p.code).map((r) => r.nodePool);
    out.push(podReason(p.code, `nodePool ${names.join(', ')}: ${p.detail}`));
  }
  return out;
}

const isMismatch = (code: PodReasonCode) => code === 'taintNotTolerated' || code === 'requirements';

/** The code of a solver reason (the scheduler words them; see shared/core/scheduling). */
export function solverCode(reason: string): PodReasonCode {
  if (/^taint .* not tolerated/.test(reason)) return 'taintNotTolerated';
  if (/^(limits |limit nodes )/.test(reason)) return 'nodePoolLimits';
  if (/^(dollar limit |annotation flotilla\.io\/max-cost-per-hour )/.test(reason)) return 'costLimit';
  if (/^no instance type/.test(reason)) return 'noInstanceTypeFits';
  if (/^(pod requires |node affinity |host port )/.test(reason)) return 'requirements';
  return 'other';
}

/** The code of a NodePool left out before planning. */
function skippedCode(skipped: SkippedNodePool): PodReasonCode {
  if (skipped.launchPaused === true) return 'launchPaused';
  if (skipped.scheduleHeld === true) return 'scheduleHolds';
  if (skipped.reason === STATIC_NODEPOOL_REASON) return 'staticNodePool';
  if (skipped.reason === 'it is being deleted') return 'nodePoolDeleting';
  if (/\(NodeClass[A-Za-z]*\)/.test(skipped.reason)) return 'nodeClassNotReady';
  return 'nodePoolNotReady';
}

/** A "no instance type" reason with the closest misses among the NodePool's instance types. */
function withClosest(
  reason: string,
  pod: Pod,
  pool: ClusterNodePool | undefined,
  input: Pick<SchedulingInput, 'instanceTypes' | 'poolInstanceTypes'>,
): string {
  if (solverCode(reason) !== 'noInstanceTypeFits' || pool === undefined) return reason;
  const reqs = Requirements.parse(pool.pool.requirements, {
    object: `nodePool "${pool.pool.name}"`,
    field: 'spec.template.spec.requirements',
  });
  // The NodePool's own types: those whose labels its requirements admit.
  const own = poolInstanceTypes(input, pool.pool.name, pool.nodeClassRef.name).filter((t) =>
    [...reqs.values()].every((r) => t.labels[r.key] === undefined || r.admits(t.labels[r.key] ?? '')),
  );
  return `${reason}${closestMisses(pod, own)}`;
}

/** The closest misses for a pod no instance type fits: the 3 types with the most of what it lacks. */
export function closestMisses(pod: Pod, types: readonly InstanceType[]): string {
  const requests: ResourceList = computePodRequests(pod);
  // The pod count every pod takes is no resource it could lack.
  const wanted = Object.entries(requests).filter(([k, v]) => v > 0 && k !== 'pods');
  const shortfall = (t: InstanceType) => {
    const alloc = computeAllocatable(t);
    return wanted.reduce((sum, [k, v]) => sum + Math.max(0, (v - (alloc[k] ?? 0)) / v), 0);
  };
  const closest = [...types].sort((a, b) => shortfall(a) - shortfall(b)).slice(0, 3);
  if (closest.length === 0) return '';
  const describe = (t: InstanceType) => {
    const alloc = computeAllocatable(t);
    return `${t.name} (${wanted.map(([k]) => `${k} ${formatQuantity(k, alloc[k] ?? 0)}`).join(', ')})`;
  };
  return `; the pod requests ${wanted.map(([k, v]) => `${k} ${formatQuantity(k, v)}`).join(', ')}, the closest are ${closest.map(describe).join(', ')}`;
}

/** The launch a plan makes: its cheapest candidates, capacity type and zones. */
function describeLaunch(plan: NodeClaimPlan, types: readonly InstanceType[]): ExplainedLaunch {
  const byName = new Map(types.map((t) => [t.name, t]));
  const candidates = plan.instanceTypes.flatMap((c) => {
    const t = byName.get(c.name);
    return t === undefined ? [] : [t];
  });
  const reqs = Requirements.parse(plan.requirements, {
    object: `nodeClaim "${plan.name}"`,
    field: 'requirements',
  });
  const zone = reqs.get(Label.zone);
  const capacity = reqs.get(Label.capacityType);
  const allowed = (o: Offering) =>
    o.available &&
    (zone === undefined || zone.admits(o.zone)) &&
    (capacity === undefined || capacity.admits(o.capacityType));
  const zones = new Set<string>();
  for (const t of candidates) for (const o of t.offerings) if (allowed(o)) zones.add(o.zone);
  const assumed = (c: LaunchCandidate) =>
    (byName.get(c.name)?.offerings ?? []).some(
      (o) => o.priceAssumed === true && o.priceUsdPerHour === c.priceUsdPerHour && allowed(o),
    );
  return {
    nodePool: plan.nodePoolName,
    nodeClass: plan.nodeClassName,
    instanceTypes: plan.instanceTypes.slice(0, 10).map((c) => ({
      name: c.name,
      priceUsdPerHour: c.priceUsdPerHour,
      ...(assumed(c) ? { priceAssumed: true as const } : {}),
    })),
    candidates: plan.instanceTypes.length,
    capacityType: expectedCapacityType(plan.requirements, candidates),
    zones: [...zones].sort(),
    pods: plan.pods.map(ref),
  };
}
