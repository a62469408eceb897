import { METRIC_NAMESPACE, METRICS, type MetricDimensionKey, type MetricPoint } from './metrics.ts';

// CloudWatch's Embedded Metric Format: a log line whose `_aws` member tells CloudWatch Logs which of
// its keys are metrics (with their unit) and which are dimensions. Pure: points in, documents out.

/** CloudWatch's limits on one EMF document. */
export const EMF_LIMITS = {
  /** Metric definitions in one document. */
  metrics: 100,
  /** Keys in one dimension set. */
  dimensionKeys: 30,
  /** Values in one metric's array. */
  values: 100,
} as const;

/** One EMF document: `_aws`, then the dimension values and metric values it declares. */
export type EmfDocument = Readonly<Record<string, unknown>> & {
  readonly _aws: {
    readonly Timestamp: number;
    readonly CloudWatchMetrics: readonly EmfDirective[];
  };
};

export interface EmfDirective {
  readonly Namespace: string;
  readonly Dimensions: readonly (readonly string[])[];
  readonly Metrics: readonly { readonly Name: string; readonly Unit: string }[];
}

/**
 * The EMF documents of `points`, as few as CloudWatch's rules allow. A document holds one value per
 * dimension key, and a metric takes from it only the keys its dimension sets name: so points go
 * into one document whenever they agree on the keys they both name (a NodePool's cost, which names
 * `nodePool`, shares the line of its cpu usage, which also names `resourceType`). Values of one
 * series in one document are merged into an array of at most EMF_LIMITS.values values; at most
 * EMF_LIMITS.metrics metrics and EMF_LIMITS.dimensionKeys dimension keys go in a document. Each
 * point goes into the first document of its moment that takes it, in the order given. Values that
 * are not finite are dropped (CloudWatch rejects them).
 */
export function toEmfDocuments(points: readonly MetricPoint[]): EmfDocument[] {
  const packs: Pack[] = [];
  for (const point of points) {
    let values = point.values.filter(Number.isFinite);
    const dimensions = Object.entries(point.dimensions).filter(
      (entry): entry is [MetricDimensionKey, string] => entry[1] !== undefined,
    );
    const series = seriesOf(dimensions);
    for (const pack of packs) {
      if (values.length === 0) break;
      const room = roomFor(pack, point, dimensions, series);
      if (room === 0) continue;
      add(pack, point.name, dimensions, series, values.slice(0, room));
      values = values.slice(room);
    }
    while (values.length > 0) {
      const pack: Pack = { timeMs: point.timeMs, dimensions: new Map(), metrics: new Map() };
      packs.push(pack);
      add(pack, point.name, dimensions, series, values.slice(0, EMF_LIMITS.values));
      values = values.slice(EMF_LIMITS.values);
    }
  }
  return packs.map((pack) =>
    encode(
      pack.timeMs,
      Object.fromEntries(pack.dimensions),
      [...pack.metrics].map(([name, m]) => [name, m.values] as const),
    ),
  );
}

/** A document being filled: its dimension values, and each metric's values with its series. */
interface Pack {
  readonly timeMs: number;
  readonly dimensions: Map<MetricDimensionKey, string>;
  readonly metrics: Map<string, { readonly series: string; readonly values: number[] }>;
}

const seriesOf = (dimensions: readonly (readonly [string, string])[]): string =>
  JSON.stringify([...dimensions].sort(([a], [b]) => a.localeCompare(b)));

/** How many of the point's values `pack` can take (0 when its dimension values or limits forbid). */
function roomFor(
  pack: Pack,
  point: MetricPoint,
  dimensions: readonly (readonly [MetricDimensionKey, string])[],
  series: string,
): number {
  if (pack.timeMs !== point.timeMs) return 0;
  let newKeys = 0;
  for (const [key, value] of dimensions) {
    const held = pack.dimensions.get(key);
    if (held === undefined) newKeys += 1;
    else if (held !== value) return 0;
  }
  if (pack.dimensions.size + newKeys > EMF_LIMITS.dimensionKeys) return 0;
  const metric = pack.metrics.get(point.name);
  if (metric === undefined) return pack.metrics.size < EMF_LIMITS.metrics ? EMF_LIMITS.values : 0;
  // One series per metric in a document: the same dimension values, or another document.
  return metric.series === series ? EMF_LIMITS.values - metric.values.length : 0;
}

function add(
  pack: Pack,
  name: string,
  dimensions: readonly (readonly [MetricDimensionKey, string])[],
  series: string,
  values: readonly number[],
): void {
  for (const [key, value] of dimensions) pack.dimensions.set(key, value);
  const metric = pack.metrics.get(name) ?? { series, values: [] };
  pack.metrics.set(name, metric);
  metric.values.push(...values);
}

function encode(
  timeMs: number,
  dimensions: MetricPoint['dimensions'],
  metrics: readonly (readonly [string, readonly number[]])[],
): EmfDocument {
  const directives = new Map<
    string,
    { sets: readonly (readonly MetricDimensionKey[])[]; metrics: { Name: string; Unit: string }[] }
  >();
  const values: Record<string, number | readonly number[]> = {};
  for (const [name, v] of metrics) {
    const spec = METRICS[name as keyof typeof METRICS];
    const key = JSON.stringify(spec.dimensionSets);
    const directive = directives.get(key) ?? { sets: spec.dimensionSets, metrics: [] };
    directives.set(key, directive);
    directive.metrics.push({ Name: name, Unit: spec.unit });
    values[name] = v.length === 1 ? (v[0] as number) : v;
  }
  return {
    _aws: {
      Timestamp: timeMs,
      CloudWatchMetrics: [...directives.values()].map((d) => ({
        Namespace: METRIC_NAMESPACE,
        Dimensions: d.sets.map((set) => [...set]),
        Metrics: d.metrics,
      })),
    },
    ...dimensions,
    ...values,
  };
}
