import type { MetricPoint } from '../runtime/metrics.ts';
// What one simulation run produced: the simulator engine fills it, the reports (text summary,
// HTML with charts, JSON lines) only read it. Times are virtual epoch milliseconds; `startMs` is
// the scenario's start, so `atMs - startMs` is the offset shown in reports.

import type { CapacityType } from '../core/index.ts';
import type { DisruptDecision } from '../usecases/decisions/disruption.ts';
import type { ShadowComparison } from '../usecases/shadow/compare.ts';

/** The state of the simulated cluster at one instant (sampled at a fixed virtual interval). */
export interface SimSample {
  readonly atMs: number;
  /** Nodes whose instance is running (launched and not yet terminated). */
  readonly nodes: number;
  readonly nodesByCapacityType: Readonly<Partial<Record<CapacityType, number>>>;
  /** Sum of the running instances' prices, in $/hour. */
  readonly costPerHour: number;
  /** Pods created and not yet bound to a node. */
  readonly pendingPods: number;
  /**
   * The most pods pending at any one step of the world since the previous sample, this one's
   * instant included: what the interval saw, however short the outage. Absent in older records.
   */
  readonly peakPendingPods?: number;
  /** Pods bound to a node and not finished. */
  readonly runningPods: number;
  /**
   * Per Deployment (`namespace/name`): the replicas its ReplicaSet wants less its Ready pods not
   * being deleted, the count a PodDisruptionBudget's maxUnavailable bounds.
   */
  readonly unavailablePods?: Readonly<Record<string, number>>;
  /**
   * Per NodePool (the `karpenter.sh/nodepool` its instances were launched for): its running nodes,
   * their cost, and the part of it no pod requests (see SimPoolSample.idleCostPerHour). Absent in
   * older records.
   */
  readonly nodePools?: Readonly<Record<string, SimPoolSample>>;
  /** Σ of the NodePools' `idleCostPerHour`. Absent in older records. */
  readonly idleCostPerHour?: number;
}

/** One NodePool's running instances at one sample. */
export interface SimPoolSample {
  readonly nodes: number;
  /** Sum of its running instances' prices, in $/hour. */
  readonly costPerHour: number;
  /**
   * The part of `costPerHour` no pod requests: for each node, its price × (1 − the busier of cpu
   * requested ÷ cpu allocatable and memory requested ÷ memory allocatable), summed. A node is only
   * as free as its scarcest resource: one whose cpu is all requested has no room, whatever memory
   * it has left. A node not yet registered (no allocatable known, still booting) is all idle.
   * Requests are those of the active pods bound to it (kube-scheduler's sum, DaemonSets included).
   */
  readonly idleCostPerHour: number;
  /** Requested and allocatable over its registered nodes: cpu in millicores, memory in bytes. */
  readonly cpuMillisRequested: number;
  readonly cpuMillisAllocatable: number;
  readonly memoryBytesRequested: number;
  readonly memoryBytesAllocatable: number;
}

/** One instance launched for a NodeClaim. */
export interface SimLaunch {
  readonly atMs: number;
  readonly nodeClaim: string;
  readonly nodePool: string;
  readonly instanceType: string;
  readonly capacityType: CapacityType;
  readonly zone: string;
  readonly pricePerHour: number;
  /**
   * The price is the catalog's estimate, not a published one: a spot price at the catalog's
   * default discount for a type without a Spot Advisor estimate, or an on-demand price taken from
   * another region. Absent when the price is known.
   */
  readonly priceAssumed?: boolean;
  /** The price is a NodeOverlay's for its NodePool (the one it launched with), not the catalog's. */
  readonly priceOverlaid?: boolean;
  /**
   * A Windows node at its Linux price: the catalog holds no Windows license prices (as the AWS
   * adapter's, which says so with the class's `PricingExact=False`), so it costs more than shown.
   */
  readonly priceWithoutWindowsLicense?: boolean;
  /** The AMI the instance booted. */
  readonly imageId?: string;
}

/** One instance terminated, and why (`interruption`, `consolidation`, `unregistered`, `empty`, …). */
export interface SimTermination {
  readonly atMs: number;
  readonly nodeClaim: string;
  readonly instanceType: string;
  readonly reason: string;
}

/** One interruption the scenario injected and what became of it. */
export interface SimInterruption {
  readonly atMs: number;
  /** `spot-interruption`, `rebalance`, `scheduled-change`, `instance-stopped`, … */
  readonly kind: string;
  readonly instanceId: string;
  /** The NodeClaim that was drained, when one matched. */
  readonly nodeClaim?: string;
  /** The instance was terminated and its pods ran again elsewhere before the run ended. */
  readonly handled: boolean;
}

/** Why the disruption controller took a node, as Karpenter names it. */
export type SimDisruptionReason = DisruptDecision['reason'];

/** One NodeClaim the disruption controller deleted (its drain starts then). */
export interface SimDisruption {
  readonly atMs: number;
  readonly nodeClaim: string;
  readonly reason: SimDisruptionReason;
}

/** A pod still pending when the run ended. */
export interface SimUnschedulablePod {
  readonly namespace: string;
  readonly name: string;
  /** The scheduler's reasons, as in the pod's FailedScheduling event. */
  readonly reasons: readonly string[];
}

export interface SimulationRecord {
  readonly scenario: {
    readonly name: string;
    readonly description?: string;
    readonly region: string;
    readonly startMs: number;
    readonly durationMs: number;
    /** The run left out the offerings whose price the catalog only assumes (`--known-prices`). */
    readonly knownPricesOnly?: boolean;
    /**
     * Nodes there at the start: Flotilla's (NodeClaims, in the costs) and foreign ones (another
     * autoscaler's: never touched, not in the costs). Absent when there were none.
     */
    readonly initialNodes?: { readonly flotilla: number; readonly foreign: number };
  };
  /** Ordered by `atMs`. */
  readonly samples: readonly SimSample[];
  /**
   * Dollars the instances cost over the run, billed from launch (an initial node's from the start)
   * to termination or the run's end. Absent in records made before it was kept.
   */
  readonly billedUsd?: number;
  readonly launches: readonly SimLaunch[];
  readonly terminations: readonly SimTermination[];
  readonly interruptions: readonly SimInterruption[];
  /** Ordered by `atMs`. Interrupted nodes are in `interruptions`. */
  readonly disruptions: readonly SimDisruption[];
  /** For each pod that got a node: milliseconds from its creation to being bound. */
  readonly podWaitsMs: readonly number[];
  /**
   * For each pod still waiting for a node at the end: milliseconds from its creation to the end
   * (its wait so far). Absent in older records.
   */
  readonly podWaitsNotStartedMs?: readonly number[];
  readonly unschedulable: readonly SimUnschedulablePod[];
  /**
   * The decision log: each decision Flotilla's use cases made (the fields of its log line, see
   * shared/usecases/decision.ts) and what the simulated world did in place of AWS (`source:
   * 'simulator'`), with `atMs` (virtual time). Lines that are not decisions are not in it. Written
   * out one JSON object per line.
   */
  readonly decisions: readonly Readonly<Record<string, unknown>>[];
  /**
   * The metric points of Flotilla's decisions, in order (the catalog's, shared/runtime/metrics.ts):
   * what the Lambdas write as EMF, made by the same function, at virtual times. Absent in older records.
   */
  readonly metrics?: readonly MetricPoint[];
  /**
   * When the scenario ran a shadow Flotilla beside the live one: its lines compared with what the
   * live side did (shared/usecases/shadow/compare.ts states the model). Absent otherwise.
   */
  readonly shadow?: ShadowComparison;
}
