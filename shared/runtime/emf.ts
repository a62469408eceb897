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
 * The EMF documents of `points`: one per moment and set of dimension values (an EMF document holds
 * one value per dimension key), the values of one metric in one document merged into an array,
 * metrics grouped by the catalog's dimension sets into directives. Arrays hold at most
 * EMF_LIMITS.values values; more go to further documents. Values that are not finite are dropped
 * (CloudWatch rejects them).
 */
export function toEmfDocuments(points: readonly MetricPoint[]): EmfDocument[] {
  const groups = new Map<
    string,
    { timeMs: number; dimensions: MetricPoint['dimensions']; values: Map<string, number[]> }
  >();
  for (const point of points) {
    const values = point.values.filter(Number.isFinite);
    if (values.length === 0) continue;
    const key = JSON.stringify([
      point.timeMs,
      Object.entries(point.dimensions).sort(([a], [b]) => a.localeCompare(b)),
    ]);
    const group = groups.get(key) ?? {
      timeMs: point.timeMs,
      dimensions: point.dimensions,
      values: new Map(),
    };
    groups.set(key, group);
    group.values.set(point.name, [...(group.values.get(point.name) ?? []), ...values]);
  }
  const documents: EmfDocument[] = [];
  for (const group of groups.values()) {
    // The catalog has fewer than EMF_LIMITS.metrics metrics, so one document holds a group's
    // metrics; arrays longer than EMF_LIMITS.values go on in further documents.
    for (let offset = 0; ; offset += EMF_LIMITS.values) {
      const slice = [...group.values].flatMap(([name, v]): [string, number[]][] =>
        v.length > offset ? [[name, v.slice(offset, offset + EMF_LIMITS.values)]] : [],
      );
      if (slice.length === 0) break;
      documents.push(encode(group.timeMs, group.dimensions, slice));
    }
  }
  return documents;
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
