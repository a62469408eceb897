// The vocabulary of Flotilla's metrics: the namespace, the dimension keys (Karpenter's label names)
// and the shape of a catalog entry. The catalog itself is metrics.ts (its entries in the
// metric-catalog-*.ts files).

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

/**
 * Dimension keys: the keys of the EMF line that carry them. Each is Karpenter's label name (a
 * Karpenter dashboard's `sum by (nodepool)` reads the `nodepool` dimension), save `cluster`, which
 * every value carries, and `side` and `quantile`, a shadow stack's own.
 */
export const MetricDimension = {
  cluster: 'cluster',
  nodePool: 'nodepool',
  /** Why: a disruption reason, a launch failure's error code, a drain's reason, a condition's reason. */
  reason: 'reason',
  capacityType: 'capacity_type',
  zone: 'zone',
  /** `cpu`, `memory`, `nodes`, or an extended resource name, lower-case with `_` for `-`. */
  resourceType: 'resource_type',
  instanceType: 'instance_type',
  /** An interruption message's kind, as Karpenter's AWS provider names it (`spot_interrupted`, …). */
  messageType: 'message_type',
  /** An EC2 status check category (`InstanceStatus`, `SystemStatus`, `EventStatus`). */
  category: 'category',
  /** A disruption command's decision (`delete`, `replace`) or a consolidation move's (`approved`, `rejected`). */
  decision: 'decision',
  /** `empty`, `single`, `multi`; `none` where Karpenter writes an empty value (drift, expiration). */
  consolidationType: 'consolidation_type',
  /** A NodePool's consolidation policy. */
  policy: 'policy',
  /** The Node condition node repair replaced a node for, in snake case (`ready`). */
  condition: 'condition',
  imageId: 'image_id',
  /** An Eviction API response code (`200`, `404`, `429`). */
  code: 'code',
  /** A cloud provider error's type (`InsufficientCapacityError`, …, `none`). */
  error: 'error',
  /** The cloud provider method that failed (`Create`). */
  method: 'method',
  /** The controller a scheduling simulation ran for (`provisioner`). */
  controller: 'controller',
  /** `true` when a NodeClaim's minValues were relaxed to launch it. */
  minValuesRelaxed: 'min_values_relaxed',
  /** A status condition's type. */
  type: 'type',
  /** A status condition's status (`True`, `False`, `Unknown`). */
  status: 'status',
  /** A shadow stack's daily comparison: `live` (the cluster's autoscaler) or `flotilla` (the shadow's choices). */
  side: 'side',
  /** Which percentile a value is: `p50` or `p90`. */
  quantile: 'quantile',
} as const;

export type MetricDimensionKey = (typeof MetricDimension)[keyof typeof MetricDimension];

/**
 * The value Flotilla writes where Karpenter writes an empty label value (CloudWatch takes no
 * empty dimension value): a drift's `consolidation_type`, an error of no known type.
 */
export const EMPTY_LABEL = 'none';

/** The CloudWatch units Flotilla uses (all valid EMF units). */
export type MetricUnit = 'Count' | 'Seconds' | 'Percent' | 'None';

/** What a metric counts or measures, so the dashboard and alarms know which statistic means what. */
export type MetricKind =
  /** An event count: each line adds its value; read as Sum. */
  | 'counter'
  /** A level observed at a moment (usage, cost, queue depth): read as Maximum or Average. */
  | 'gauge'
  /** Durations or sizes, several values in a line (Karpenter's histograms and summaries): read as percentiles, Average or Maximum. */
  | 'distribution';

/** A catalog entry without its name (the key it is filed under). */
export interface MetricBody {
  readonly unit: MetricUnit;
  readonly kind: MetricKind;
  /**
   * The dimension sets each value is emitted under: each a billed series per value combination, so
   * only bounded ones (never a node, pod or NodeClaim name), and a `[cluster]` roll-up only where
   * an alarm or a total reads one.
   */
  readonly dimensionSets: readonly (readonly MetricDimensionKey[])[];
  /**
   * Karpenter v1.14's labels of the series, as Karpenter names them (`none` when it has none), or
   * `null` for a metric of Flotilla's own.
   */
  readonly karpenter: string | null;
  /** Only a shadow stack emits it (its dashboard shows it; a live stack's does not). @default false */
  readonly shadowOnly?: true;
  readonly help: string;
}

export interface MetricSpec extends MetricBody {
  /** The CloudWatch metric name: Karpenter's full name, or Flotilla's own. */
  readonly name: string;
}

/** Shorthands for the catalog files. */
export const D = {
  C: MetricDimension.cluster,
  P: MetricDimension.nodePool,
  R: MetricDimension.reason,
  T: MetricDimension.capacityType,
  Z: MetricDimension.zone,
  K: MetricDimension.resourceType,
  I: MetricDimension.instanceType,
} as const;
