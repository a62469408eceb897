import { FLEET_METRICS } from './metric-catalog-fleet.ts';
import { FLOTILLA_METRICS } from './metric-catalog-flotilla.ts';
import { NODE_METRICS } from './metric-catalog-nodes.ts';
import { OPERATOR_METRICS } from './metric-catalog-operator.ts';
import type { MetricBody, MetricDimensionKey, MetricSpec } from './metric-types.ts';

// Every metric Flotilla emits, spelled once: the decision writer emits them (CloudWatch Embedded
// Metric Format), the stack's dashboard and alarms read them, the simulator charts them and the
// README lists them. Where Karpenter v1.14 has the series, its full name (`karpenter_…`,
// `operator_…`), its label names as dimensions and its label values, so that a Karpenter
// dashboard's query reads the same series here; the few Flotilla adds keep their own names.

export {
  EMPTY_LABEL,
  METRIC_NAMESPACE,
  type MetricBody,
  MetricDimension,
  type MetricDimensionKey,
  type MetricKind,
  type MetricSpec,
  type MetricUnit,
  metricsClusterOf,
} from './metric-types.ts';

const BODIES = { ...NODE_METRICS, ...FLEET_METRICS, ...OPERATOR_METRICS, ...FLOTILLA_METRICS };

export type MetricName = keyof typeof BODIES;

/** The catalog, keyed by name, in the README's order: Karpenter's, its operator's, Flotilla's own. */
export const METRICS = Object.fromEntries(
  Object.entries(BODIES).map(([name, body]: [string, MetricBody]) => [name, { name, ...body }]),
) as { readonly [N in MetricName]: MetricSpec & { readonly name: N } };

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
