import { METRIC_NAMESPACE, METRICS } from '../../shared/runtime/metrics.ts';

// Reads the dashboards and alarms of a synthesized template and finds every metric they name, so
// the tests can hold them to the metric catalog (shared/runtime/metrics.ts).

/** A synthesized template, as much of it as the checks read. */
export interface TemplateJson {
  readonly Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
}

/** One metric a widget or an alarm names: directly, or through a SEARCH expression. */
export interface NamedMetric {
  /** The widget's title or the alarm's logical id. */
  readonly where: string;
  readonly via: 'metric' | 'search' | 'alarm';
  readonly namespace: string;
  readonly metricName: string;
  /** The dimension names: the metric's own, or a search's schema after the namespace. */
  readonly dimensions: readonly string[];
  /** Dimension values the metric or search fixes. */
  readonly values: Readonly<Record<string, string>>;
}

/**
 * A deploy-time value (a `Ref` or `Fn::GetAtt`) as text: `Ref:<id>` or `<id>.<attribute>`, so the
 * same resource reads the same in a dashboard and in an alarm.
 */
export function tokenText(value: unknown): string {
  if (typeof value === 'string') return value;
  const ref = (value as { Ref?: unknown } | null)?.Ref;
  if (typeof ref === 'string') return `Ref:${ref}`;
  const att = (value as { 'Fn::GetAtt'?: unknown } | null)?.['Fn::GetAtt'];
  if (Array.isArray(att)) return att.join('.');
  return `Token:${JSON.stringify(value)}`;
}

/** The dashboard bodies of a template, parsed, with every deploy-time value replaced by its `tokenText`. */
export function dashboardBodies(template: TemplateJson): { widgets: Record<string, unknown>[] }[] {
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::CloudWatch::Dashboard')
    .map((resource) => {
      const body = resource.Properties['DashboardBody'];
      const text =
        typeof body === 'string'
          ? body
          : ((body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1] ?? [])
              // A token sits inside a JSON string of the body: its text must not break the string.
              .map((part) => (typeof part === 'string' ? part : JSON.stringify(tokenText(part)).slice(1, -1)))
              .join('');
      return JSON.parse(text) as { widgets: Record<string, unknown>[] };
    });
}

const SEARCH = /SEARCH\(\s*'\{([^}]*)\}([^']*)'\s*,\s*'([^']+)'\s*,\s*(\d+)\s*\)/g;
const TERM = /(\w+)\s*=\s*"([^"]*)"/g;

/** The metrics a SEARCH expression (inside any math) asks for: its schema and its `key="value"` terms. */
export function searchesIn(expression: string): Omit<NamedMetric, 'where' | 'via'>[] {
  return [...expression.matchAll(SEARCH)].map((match) => {
    const [namespace = '', ...dimensions] = (match[1] ?? '').split(',').map((part) => part.trim());
    const terms = Object.fromEntries(
      [...(match[2] ?? '').matchAll(TERM)].map((t) => [t[1] ?? '', t[2] ?? '']),
    );
    const { MetricName: metricName = '', ...values } = terms;
    return { namespace, metricName, dimensions, values };
  });
}

/** Every metric the dashboards' widgets name, and every metric expression that is not a SEARCH. */
export function dashboardMetrics(template: TemplateJson): { metrics: NamedMetric[]; unparsed: string[] } {
  const metrics: NamedMetric[] = [];
  const unparsed: string[] = [];
  for (const body of dashboardBodies(template)) {
    for (const widget of body.widgets) {
      const properties = (widget['properties'] ?? {}) as { title?: string; metrics?: unknown[][] };
      const where = properties.title ?? '(untitled)';
      for (const entry of properties.metrics ?? []) {
        const head = entry[0];
        if (typeof head === 'object' && head !== null && 'expression' in head) {
          const expression = String((head as { expression: unknown }).expression);
          const found = searchesIn(expression);
          if (found.length === 0) unparsed.push(`${where}: ${expression}`);
          for (const search of found) metrics.push({ where, via: 'search', ...search });
          continue;
        }
        // [namespace, metricName, dim1, value1, …, {options}]
        const parts = entry.filter((part) => typeof part === 'string') as string[];
        const [namespace = '', metricName = '', ...pairs] = parts;
        const values: Record<string, string> = {};
        for (let i = 0; i + 1 < pairs.length; i += 2) values[pairs[i] ?? ''] = pairs[i + 1] ?? '';
        metrics.push({
          where,
          via: 'metric',
          namespace,
          metricName,
          dimensions: Object.keys(values),
          values,
        });
      }
    }
  }
  return { metrics, unparsed };
}

/** Every metric the template's alarms read. */
export function alarmMetrics(template: TemplateJson): NamedMetric[] {
  return Object.entries(template.Resources)
    .filter(([, resource]) => resource.Type === 'AWS::CloudWatch::Alarm')
    .map(([id, resource]) => {
      const p = resource.Properties;
      const dimensions = (p['Dimensions'] ?? []) as { Name: string; Value: unknown }[];
      return {
        where: id,
        via: 'alarm' as const,
        namespace: String(p['Namespace']),
        metricName: String(p['MetricName']),
        dimensions: dimensions.map((d) => d.Name),
        values: Object.fromEntries(dimensions.map((d) => [d.Name, tokenText(d.Value)])),
      };
    });
}

/**
 * What is wrong with the metrics among `named` that are not AWS's own (`AWS/…`): a namespace other
 * than Flotilla's, a name outside the catalog, a dimension list that is not exactly one of the
 * metric's dimension sets, a value fixed on a key outside it, a cluster other than `clusterName`.
 */
export function catalogProblems(named: readonly NamedMetric[], clusterName: string): string[] {
  const problems: string[] = [];
  for (const metric of named) {
    if (metric.namespace.startsWith('AWS/')) continue;
    if (metric.namespace !== METRIC_NAMESPACE) {
      problems.push(
        `${metric.where} (${metric.via}) ${metric.metricName}: namespace ${metric.namespace}, not ${METRIC_NAMESPACE}`,
      );
      continue;
    }
    const where = `${metric.where} (${metric.via}) ${metric.metricName}`;
    const spec = (METRICS as Record<string, (typeof METRICS)[keyof typeof METRICS]>)[metric.metricName];
    if (spec === undefined) {
      problems.push(`${where}: not in the metric catalog`);
      continue;
    }
    const set = [...metric.dimensions].sort().join(',');
    const matching = spec.dimensionSets.filter((s) => [...s].sort().join(',') === set);
    if (matching.length !== 1 || new Set(metric.dimensions).size !== metric.dimensions.length) {
      problems.push(
        `${where}: dimensions [${metric.dimensions.join(', ')}] are not one of its dimension sets`,
      );
    }
    for (const key of Object.keys(metric.values)) {
      if (!metric.dimensions.includes(key)) problems.push(`${where}: fixes ${key}, outside its dimensions`);
    }
    if (metric.values['cluster'] !== clusterName) {
      problems.push(`${where}: cluster is ${metric.values['cluster'] ?? 'not fixed'}, not ${clusterName}`);
    }
  }
  return problems;
}
