// Every metric Flotilla emits, spelled once: the decision writer emits them (CloudWatch Embedded
// Metric Format), the stack's dashboard and alarms read them, the simulator charts them and the
// README lists them. Names are Karpenter's (core and AWS provider, without the `karpenter_`
// prefix) where Karpenter has the metric; the few Flotilla adds say so in `karpenter`.

/** The CloudWatch namespace of every metric. */
export const METRIC_NAMESPACE = 'Flotilla';

/**
 * The `cluster` dimension a stack's metrics carry: the cluster's name, or for a shadow stack the
 * name and `/shadow` (a cluster name has no `/`), so what a shadow stack would do never adds to
 * the series of what the cluster's live Flotilla did.
 */
export function metricsClusterOf(clusterName: string, shadow: boolean): string {
  return shadow ? `${clusterName}/shadow` : clusterName;
}

/** Dimension keys: the keys of the EMF line that carry them (strings). */
export const MetricDimension = {
  cluster: 'cluster',
  nodePool: 'nodePool',
  /** Why: a disruption reason, a launch failure's cause, an interruption kind, a NodeClaim's creation reason. */
  reason: 'reason',
  capacityType: 'capacityType',
  zone: 'zone',
  /** `cpu`, `memory`, `nodes`, `pods`, or an extended resource name (NodePool usage and limits). */
  resourceType: 'resourceType',
  /** A shadow stack's daily comparison: `live` (the cluster's autoscaler) or `flotilla` (the shadow's choices). */
  side: 'side',
  /** Which percentile a value is: `p50` or `p90`. */
  quantile: 'quantile',
} as const;

export type MetricDimensionKey = (typeof MetricDimension)[keyof typeof MetricDimension];

/** The CloudWatch units Flotilla uses (all valid EMF units). */
export type MetricUnit = 'Count' | 'Seconds' | 'Percent' | 'None';

/** What a metric counts or measures, so the dashboard and alarms know which statistic means what. */
export type MetricKind =
  /** An event count: each line adds its value; read as Sum. */
  | 'counter'
  /** A level observed at a moment (usage, cost, queue depth): read as Maximum or Average. */
  | 'gauge'
  /** Durations or sizes, one value per observation: read as percentiles, Average or Maximum. */
  | 'distribution';

export interface MetricSpec {
  readonly name: string;
  readonly unit: MetricUnit;
  readonly kind: MetricKind;
  /**
   * The dimension sets each value is emitted under: always a `[cluster]` roll-up (what alarms
   * read), and the finer sets the dashboard groups by.
   */
  readonly dimensionSets: readonly (readonly MetricDimensionKey[])[];
  /** Karpenter's metric, with its prefix; `null` when Karpenter has none (Flotilla's own). */
  readonly karpenter: string | null;
  /** Only a shadow stack emits it (its dashboard shows it; a live stack's does not). @default false */
  readonly shadowOnly?: true;
  readonly help: string;
}

const C = MetricDimension.cluster;
const P = MetricDimension.nodePool;
const R = MetricDimension.reason;
const T = MetricDimension.capacityType;
const Z = MetricDimension.zone;
const K = MetricDimension.resourceType;
const S = MetricDimension.side;
const Q = MetricDimension.quantile;

/** The catalog, keyed by name. */
export const METRICS = {
  nodeclaims_created_total: {
    name: 'nodeclaims_created_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R]],
    karpenter: 'karpenter_nodeclaims_created_total',
    help: 'NodeClaims created, by NodePool and by reason (provisioning, disruption, static)',
  },
  nodeclaims_terminated_total: {
    name: 'nodeclaims_terminated_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, T], [C, Z]],
    karpenter: 'karpenter_nodeclaims_terminated_total',
    help: 'NodeClaims whose termination finished, by NodePool, capacity type and zone',
  },
  nodeclaims_disrupted_total: {
    name: 'nodeclaims_disrupted_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R]],
    karpenter: 'karpenter_nodeclaims_disrupted_total',
    help: 'NodeClaims disrupted, by NodePool and reason (Empty, Underutilized, Drifted, Expired, interruption kinds, repair)',
  },
  nodes_created_total: {
    name: 'nodes_created_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, Z]],
    karpenter: 'karpenter_nodes_created_total',
    help: 'Nodes registered for a NodeClaim, by NodePool and zone',
  },
  nodes_terminated_total: {
    name: 'nodes_terminated_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P]],
    karpenter: 'karpenter_nodes_terminated_total',
    help: 'Nodes whose termination finalizer was removed, by NodePool',
  },
  pods_drained_total: {
    name: 'pods_drained_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R]],
    karpenter: 'karpenter_pods_drained_total',
    help: 'Pods evicted or force-deleted while draining a node, by NodePool and termination reason',
  },
  pods_startup_duration_seconds: {
    name: 'pods_startup_duration_seconds',
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'karpenter_pods_startup_duration_seconds',
    help: 'From a pod’s creation to its start, each pod that starts on a NodePool’s node counted once, about a minute after it starts',
  },
  pods_unbound_time_seconds: {
    name: 'pods_unbound_time_seconds',
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'karpenter_pods_unbound_time_seconds',
    help: 'How long the oldest provisionable pending pod has waited, at each provisioning run (0 when none)',
  },
  scheduler_scheduling_duration_seconds: {
    name: 'scheduler_scheduling_duration_seconds',
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'karpenter_scheduler_scheduling_duration_seconds',
    help: 'How long one provisioning plan (the scheduling simulation) took',
  },
  scheduler_queue_depth: {
    name: 'scheduler_queue_depth',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'karpenter_scheduler_queue_depth',
    help: 'Pending pods a provisioning run plans for',
  },
  scheduler_unschedulable_pods_count: {
    name: 'scheduler_unschedulable_pods_count',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'karpenter_scheduler_unschedulable_pods_count',
    help: 'Pods a provisioning run found no NodePool able to host',
  },
  voluntary_disruption_decisions_total: {
    name: 'voluntary_disruption_decisions_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, R], [C, P]],
    karpenter: 'karpenter_voluntary_disruption_decisions_total',
    help: 'Disruption commands started, by method reason (Empty, Underutilized, Drifted, Expired) and NodePool',
  },
  voluntary_disruption_savings: {
    name: 'voluntary_disruption_savings',
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C], [C, R]],
    karpenter: null,
    help: 'What a disruption command decided saves, USD per hour (its candidates’ prices less its replacements’); in a shadow stack, what the command it proposes would save',
  },
  voluntary_disruption_eligible_nodes: {
    name: 'voluntary_disruption_eligible_nodes',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C], [C, R]],
    karpenter: 'karpenter_voluntary_disruption_eligible_nodes',
    help: 'Nodes a disruption pass found eligible, by reason',
  },
  voluntary_disruption_blocked_nodes: {
    name: 'voluntary_disruption_blocked_nodes',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C], [C, R]],
    karpenter: null,
    help: 'Nodes a disruption pass left alone, by why (budget, do-not-disrupt, PDB, not initialized, …)',
  },
  nodepools_allowed_disruptions: {
    name: 'nodepools_allowed_disruptions',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [
      [C, P],
      [C, P, R],
    ],
    karpenter: 'karpenter_nodepools_allowed_disruptions',
    help: 'Nodes a NodePool’s budgets allow to disrupt now, by reason',
  },
  nodepools_usage: {
    name: 'nodepools_usage',
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'karpenter_nodepools_usage',
    help: 'What a NodePool’s nodes provide (cpu in cores, memory in bytes, nodes), as its status.resources',
  },
  nodepools_limit: {
    name: 'nodepools_limit',
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'karpenter_nodepools_limit',
    help: 'A NodePool’s limits, same units as nodepools_usage',
  },
  nodepools_cost_total: {
    name: 'nodepools_cost_total',
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C], [C, P]],
    karpenter: 'karpenter_nodepools_cost_total',
    help: 'What a NodePool’s nodes cost, in USD per hour at their offering prices (nodes of an unknown offering left out; the observe decision counts them)',
  },
  nodepools_idle_cost: {
    name: 'nodepools_idle_cost',
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C], [C, P]],
    karpenter: null,
    help: 'The part of nodepools_cost_total no pod requests: cost × (1 − requested ÷ allocatable), USD per hour',
  },
  nodepools_utilization_percent: {
    name: 'nodepools_utilization_percent',
    unit: 'Percent',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'karpenter_cluster_utilization_percent',
    help: 'Pod requests ÷ allocatable of a NodePool’s nodes, for cpu and memory',
  },
  cluster_state_node_count: {
    name: 'cluster_state_node_count',
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C], [C, P]],
    karpenter: 'karpenter_cluster_state_node_count',
    help: 'Nodes Flotilla manages, by NodePool',
  },
  cloudprovider_errors_total: {
    name: 'cloudprovider_errors_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, R]],
    karpenter: 'karpenter_cloudprovider_errors_total',
    help: 'Cloud calls that failed, by error',
  },
  cloudprovider_instance_launch_failures_total: {
    name: 'cloudprovider_instance_launch_failures_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R], [C, T]],
    karpenter: 'karpenter_cloudprovider_instance_launch_failures_total',
    help: 'Launches that did not start an instance, by NodePool, reason (insufficientCapacity, failed, fenced) and capacity type',
  },
  interruption_received_messages_total: {
    name: 'interruption_received_messages_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, R]],
    karpenter: 'karpenter_interruption_received_messages_total',
    help: 'Interruption messages handled or ignored, by kind',
  },
  nodepools_launch_backoff_started_total: {
    name: 'nodepools_launch_backoff_started_total',
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P]],
    karpenter: null,
    help: 'Times the runaway guard paused a NodePool’s launches',
  },
  // A shadow stack's daily comparison (the shadow-report Lambda, once a day for the UTC day before,
  // dated at that day's start): the figures `flotilla shadow report` prints for that day.
  shadow_cost_per_hour: {
    name: 'shadow_cost_per_hour',
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, S]],
    karpenter: null,
    help: 'A shadow stack’s UTC day, USD per hour on average: what the cluster cost under its live autoscaler (side live) and what Flotilla’s choices would have cost (side flotilla)',
  },
  shadow_savings_per_hour: {
    name: 'shadow_savings_per_hour',
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, R]],
    karpenter: null,
    help: 'A shadow stack’s UTC day: what Flotilla would have saved, USD per hour on average, by kind of difference (cheaper launch, launch not made, replacement not made, extra launch, disruption; each every day, 0 when none); their sum is the live side’s shadow_cost_per_hour less Flotilla’s. Negative where it would have cost more',
  },
  shadow_pod_wait_seconds: {
    name: 'shadow_pod_wait_seconds',
    shadowOnly: true,
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C, S, Q]],
    karpenter: null,
    help: 'A shadow stack’s UTC day, p50 and p90: pod creation to start on the live side; the oldest pending pod’s age at each launch Flotilla decided on its side',
  },
  shadow_observed_hours: {
    name: 'shadow_observed_hours',
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: null,
    help: 'A shadow stack’s UTC day: the hours its lines cover (about 24 for a whole day, 0 when no observation), which the day’s other shadow figures average over',
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRICS;

/** The catalog as a list, in declaration order. */
export const METRIC_SPECS: readonly MetricSpec[] = Object.values(METRICS);

/**
 * One value of one metric at one moment, with the dimension values it carries: what the decision
 * writer encodes as EMF and what the simulator keeps. A `distribution` may carry several values.
 */
export interface MetricPoint {
  readonly name: MetricName;
  readonly values: readonly number[];
  /** Epoch milliseconds. */
  readonly timeMs: number;
  /** Every dimension key the metric's dimension sets name (cluster included), as strings. */
  readonly dimensions: Readonly<Partial<Record<MetricDimensionKey, string>>>;
}
