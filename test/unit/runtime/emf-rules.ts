// CloudWatch's rules for an Embedded Metric Format log line, checked strictly: what CloudWatch Logs
// would reject or silently drop is a problem here.

/** CloudWatch's metric units. */
export const CLOUDWATCH_UNITS: ReadonlySet<string> = new Set([
  'Seconds',
  'Microseconds',
  'Milliseconds',
  'Bytes',
  'Kilobytes',
  'Megabytes',
  'Gigabytes',
  'Terabytes',
  'Bits',
  'Kilobits',
  'Megabits',
  'Gigabits',
  'Terabits',
  'Percent',
  'Count',
  'Bytes/Second',
  'Kilobytes/Second',
  'Megabytes/Second',
  'Gigabytes/Second',
  'Terabytes/Second',
  'Bits/Second',
  'Kilobits/Second',
  'Megabits/Second',
  'Gigabits/Second',
  'Terabits/Second',
  'Count/Second',
  'None',
]);

const MAX_METRICS = 100;
const MAX_DIMENSION_KEYS = 30;
const MAX_VALUES = 100;
/** A CloudWatch Logs event is at most 256 KiB. */
const MAX_LINE_BYTES = 256 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a parsed log line declares metrics (has `_aws`). */
export function isEmfLine(line: Readonly<Record<string, unknown>>): boolean {
  return '_aws' in line;
}

/** The problems of one EMF line as written (JSON text); none when CloudWatch would take it whole. */
export function emfProblems(text: string): string[] {
  const problems: string[] = [];
  if (Buffer.byteLength(text, 'utf8') > MAX_LINE_BYTES) problems.push('line longer than 256 KiB');
  let line: unknown;
  try {
    line = JSON.parse(text);
  } catch {
    return [...problems, 'not JSON'];
  }
  if (!isObject(line)) return [...problems, 'not a JSON object'];
  const aws = line['_aws'];
  if (!isObject(aws)) return [...problems, '_aws is not an object'];
  const timestamp = aws['Timestamp'];
  if (typeof timestamp !== 'number' || !Number.isInteger(timestamp) || timestamp < 0) {
    problems.push(`_aws.Timestamp ${String(timestamp)} is not epoch milliseconds`);
  }
  const directives = aws['CloudWatchMetrics'];
  if (!Array.isArray(directives) || directives.length === 0) {
    return [...problems, '_aws.CloudWatchMetrics is not a non-empty array'];
  }
  const names = new Set<string>();
  const dimensionKeys = new Set<string>();
  let metrics = 0;
  directives.forEach((directive: unknown, i) => {
    const at = `CloudWatchMetrics[${i}]`;
    if (!isObject(directive)) {
      problems.push(`${at} is not an object`);
      return;
    }
    const namespace = directive['Namespace'];
    if (typeof namespace !== 'string' || namespace.length === 0 || namespace.length > 255) {
      problems.push(`${at}.Namespace is not a string of 1 to 255 characters`);
    }
    const sets = directive['Dimensions'];
    if (!Array.isArray(sets)) problems.push(`${at}.Dimensions is not an array`);
    else {
      sets.forEach((set: unknown, j) => {
        if (!Array.isArray(set)) {
          problems.push(`${at}.Dimensions[${j}] is not an array`);
          return;
        }
        if (set.length > MAX_DIMENSION_KEYS) problems.push(`${at}.Dimensions[${j}] has ${set.length} keys`);
        for (const key of set) {
          if (typeof key !== 'string') {
            problems.push(`${at}.Dimensions[${j}] has a key that is not a string`);
            continue;
          }
          dimensionKeys.add(key);
          const value = line[key];
          if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
            problems.push(`dimension ${key} is not on the line as a string of 1 to 1024 characters`);
          }
        }
      });
    }
    const list = directive['Metrics'];
    if (!Array.isArray(list)) {
      problems.push(`${at}.Metrics is not an array`);
      return;
    }
    metrics += list.length;
    for (const metric of list) {
      if (!isObject(metric) || typeof metric['Name'] !== 'string' || metric['Name'].length === 0) {
        problems.push(`${at}.Metrics has an entry without a Name`);
        continue;
      }
      const name = metric['Name'];
      if (name.length > 255) problems.push(`metric name ${name} longer than 255 characters`);
      if (names.has(name)) problems.push(`metric ${name} declared twice`);
      names.add(name);
      const unit = metric['Unit'];
      if (unit !== undefined && (typeof unit !== 'string' || !CLOUDWATCH_UNITS.has(unit))) {
        problems.push(`metric ${name} has unit ${String(unit)}, not a CloudWatch unit`);
      }
      problems.push(...valueProblems(name, line[name]));
    }
  });
  if (metrics > MAX_METRICS) problems.push(`${metrics} metrics on one line`);
  for (const key of dimensionKeys)
    if (names.has(key)) problems.push(`${key} is both a dimension and a metric`);
  return problems;
}

function valueProblems(name: string, value: unknown): string[] {
  const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  if (Array.isArray(value)) {
    if (value.length === 0) return [`metric ${name} has an empty array`];
    if (value.length > MAX_VALUES) return [`metric ${name} has ${value.length} values`];
    return value.every(finite) ? [] : [`metric ${name} has a value that is not a finite number`];
  }
  return finite(value) ? [] : [`metric ${name} is not on the line as a finite number`];
}

/** One metric value of an EMF line: its name, the dimension values its directive declares, its values. */
export interface EmfValue {
  readonly name: string;
  readonly unit: string;
  readonly dimensionSets: readonly (readonly string[])[];
  readonly dimensions: Readonly<Record<string, string>>;
  readonly values: readonly number[];
  readonly timeMs: number;
}

/** The metric values of a valid EMF line, as CloudWatch reads them. */
export function readEmf(line: Readonly<Record<string, unknown>>): EmfValue[] {
  const aws = line['_aws'] as {
    Timestamp: number;
    CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  return aws.CloudWatchMetrics.flatMap((d) =>
    d.Metrics.map((m) => {
      const keys = [...new Set(d.Dimensions.flat())].sort();
      const value = line[m.Name] as number | number[];
      return {
        name: m.Name,
        unit: m.Unit,
        dimensionSets: d.Dimensions,
        dimensions: Object.fromEntries(keys.map((k) => [k, line[k] as string])),
        values: Array.isArray(value) ? value : [value],
        timeMs: aws.Timestamp,
      };
    }),
  );
}

/** `name{key=value,…}` with the keys sorted: one series of a metric. */
export function seriesKey(name: string, dimensions: Readonly<Record<string, string | undefined>>): string {
  const keys = Object.keys(dimensions).sort();
  return `${name}{${keys.map((k) => `${k}=${dimensions[k]}`).join(',')}}`;
}

/** The sum of the values of each series over EMF values. */
export function sumBySeries(values: readonly EmfValue[]): Map<string, number> {
  const sums = new Map<string, number>();
  for (const v of values) {
    const key = seriesKey(v.name, v.dimensions);
    sums.set(key, (sums.get(key) ?? 0) + v.values.reduce((a, b) => a + b, 0));
  }
  return sums;
}
