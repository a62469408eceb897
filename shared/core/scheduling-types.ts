import type { DaemonSet, ExistingNode, InFlightNodeClaim } from './cluster.ts';
import type { InstanceType } from './instance-type.ts';
import type { Labels } from './labels.ts';
import type { NodePool } from './node-pool.ts';
import type { Pod, PodRef } from './pod.ts';
import type { NodeSelectorRequirement } from './requirements.ts';
import type { FitScoring } from './resource-fit-score.ts';
import type { ResourceList } from './resources.ts';
import type { Taint } from './taints.ts';

/** Knobs Karpenter exposes as controller settings. */
export interface SolveOptions {
  /** `Ignore` drops every preference up front. @default 'Respect' */
  readonly preferencePolicy?: 'Respect' | 'Ignore';
  /** `BestEffort` launches even when minValues cannot be met, and says so. @default 'Strict' */
  readonly minValuesPolicy?: 'Strict' | 'BestEffort';
  /** Candidate instance types kept per NodeClaim, cheapest first. @default 60 */
  readonly maxInstanceTypes?: number;
  /**
   * After the Karpenter-order pass, re-pack the pods nothing ties to their NodeClaim (no topology,
   * host ports or anti-affinity) when that lowers the cost. @default true
   */
  readonly repack?: boolean;
  /**
   * The most new NodeClaims the solve may plan: once that many are open, a pod that fits none of
   * them (nor existing capacity) is unschedulable, and pods go onto an open claim however much it
   * grows rather than onto a cheaper fresh one. Consolidation's "one replacement" re-plan uses 1.
   * Implies `repack: false`. @default unbounded
   */
  readonly maxNewNodeClaims?: number;
  /**
   * When the capacity reservations a new NodeClaim fits are all taken by the plan's other new
   * NodeClaims: `strict` leaves it out and its pods wait for the next loop (Karpenter's
   * provisioning); `fallback` launches it on spot or on-demand (Karpenter's disruption).
   * @default 'strict'
   */
  readonly reservedOfferingMode?: 'strict' | 'fallback';
  /**
   * The cluster's dollar limit, USD per hour (Flotilla's own): what every NodePool's NodeClaims
   * may cost together, nodes in the solve and nodes of pools not in it alike.
   */
  readonly maxCostPerHour?: number;
  /**
   * Which existing node or in-flight NodeClaim a pod goes to among those that can take it. Unset,
   * the first (initialized nodes, then by name), as Karpenter's simulation. Set, the one
   * kube-scheduler's NodeResourcesFit strategy of that name ranks first (cpu and memory alike;
   * ties to the first): `LeastAllocated`, kube-scheduler's default, the most room left after the
   * pod; `MostAllocated`, the least. Disruption's simulations use it to expect where kube-scheduler
   * will send the pods a command moves.
   */
  readonly existingNodeScoring?: FitScoring;
  /**
   * The NodeResourcesFit strategy of the cluster's kube-scheduler (the stack's
   * `kubeSchedulerScoring`). `solve()` does not read it: disruption's replay of the pods a command
   * moves (usecases/disruption/simulation.ts) binds them as that strategy would.
   * @default 'LeastAllocated', kube-scheduler's default
   */
  readonly kubeSchedulerScoring?: FitScoring;
  /**
   * The order pods are placed in: Karpenter's (largest cpu, then memory, first), or the reverse,
   * the order in which kube-scheduler's spreading of pods leaves the least room for the largest.
   * @default 'largestFirst'
   */
  readonly queueOrder?: 'largestFirst' | 'smallestFirst';
}

/** Everything one scheduling decision depends on. Same input, same output. */
export interface SolveInput {
  /** Pending pods to place. */
  readonly pods: readonly Pod[];
  readonly nodePools: readonly NodePool[];
  /** Instance types per NodeClass name (NodePool.nodeClassName), resolved for that NodeClass. */
  readonly instanceTypes: ReadonlyMap<string, readonly InstanceType[]>;
  /**
   * Per NodePool name, the types it launches from when they differ from its NodeClass's (the
   * NodeOverlays that select them applied); a pool not listed uses `instanceTypes`.
   */
  readonly poolInstanceTypes?: ReadonlyMap<string, readonly InstanceType[]>;
  readonly nodes?: readonly ExistingNode[];
  readonly nodeClaims?: readonly InFlightNodeClaim[];
  readonly daemonSets?: readonly DaemonSet[];
  /** Namespace labels, for pod-affinity `namespaceSelector`. */
  readonly namespaceLabels?: ReadonlyMap<string, Labels>;
  /**
   * `namespace/claim` → the CSI driver that attaches the claim's volume (see podClaimIds), for the
   * attach limits of existing nodes (ExistingNode.volumeLimits). A claim not listed is not counted.
   */
  readonly claimDrivers?: ReadonlyMap<string, string>;
  /** Decision time, epoch milliseconds (feeds NodeClaim names). */
  readonly nowMs: number;
  readonly options?: SolveOptions;
}

/** One instance type a NodeClaim may launch as, with its cheapest allowed offering. */
export interface LaunchCandidate {
  readonly name: string;
  readonly priceUsdPerHour: number;
}

/** A NodeClaim to create. */
export interface NodeClaimPlan {
  /** Deterministic: derived from the NodePool, the first pod and `nowMs`. */
  readonly name: string;
  readonly nodePoolName: string;
  readonly nodeClassName: string;
  /** NodePool template labels plus every single-valued requirement. */
  readonly labels: Labels;
  /** `spec.requirements`, instance types narrowed to `instanceTypes`. */
  readonly requirements: readonly NodeSelectorRequirement[];
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  readonly pods: readonly PodRef[];
  /** Requests of the pods plus DaemonSet overhead on the cheapest candidate. */
  readonly requests: ResourceList;
  /** Cheapest first; at most SolveOptions.maxInstanceTypes; honours minValues. */
  readonly instanceTypes: readonly LaunchCandidate[];
  /** minValues could not be met and the policy is BestEffort. */
  readonly minValuesRelaxed: boolean;
}

/** A pod that fits capacity that exists or is already on its way. */
export type Placement =
  | { readonly kind: 'existingNode'; readonly pod: PodRef; readonly nodeName: string }
  | { readonly kind: 'inFlightNodeClaim'; readonly pod: PodRef; readonly nodeClaimName: string };

/** Why a NodePool could not take a pod. */
export interface PoolReason {
  readonly nodePool: string;
  readonly reason: string;
}

/** A pod nothing can host, with one reason per NodePool. */
export interface UnschedulablePod {
  readonly pod: PodRef;
  readonly reasons: readonly PoolReason[];
  /** `nodePool gpu: taint team=gpu:NoSchedule not tolerated; nodePool default: …` */
  readonly message: string;
}

export interface SolveResult {
  readonly nodeClaims: readonly NodeClaimPlan[];
  readonly placements: readonly Placement[];
  readonly unschedulable: readonly UnschedulablePod[];
}
