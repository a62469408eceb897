import type { V1Pod } from '@kubernetes/client-node';
import { isMap, isSeq, LineCounter, parseAllDocuments, type Node as YamlNode } from 'yaml';
import { isUnschedulable } from '../../apis/index.ts';
import { FlotillaError, ValidationError } from '../../core/index.ts';
import { checkManifest } from '../../validation/manifests.ts';
import { offsetOf } from '../../validation/positions.ts';

// Reading `flotilla plan`'s input files: YAML documents with their positions, so every problem
// names its file, line and field.

/** One input file: its name (for messages) and its text. */
export interface PlanFile {
  readonly path: string;
  readonly text: string;
}

/** One problem in an input file, with where it is. */
export interface PlanProblem {
  readonly file: string;
  /** 1-based; absent when the problem has no place in the file. */
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
}

/** An input file cannot be read or one of its objects is malformed. Lists every problem found. */
export class PlanInputError extends FlotillaError {
  readonly code = 'PlanInputError';

  constructor(readonly problems: readonly PlanProblem[]) {
    super(problems.map(formatProblem).join('\n'));
  }
}

function formatProblem(p: PlanProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column ?? 1}`;
  return `${where}: ${p.message}`;
}

/** An object read from a YAML file, with the node it came from for error positions. */
export interface Located {
  readonly value: Record<string, unknown>;
  readonly node: YamlNode | undefined;
  readonly file: string;
  readonly lines: LineCounter;
}

export function readObjects(file: PlanFile, problems: PlanProblem[]): Located[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(file.text, { lineCounter: lines, prettyErrors: false });
  const out: Located[] = [];
  const docList = Array.isArray(docs) ? docs : [docs];
  for (const doc of docList) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = lines.linePos(e.pos[0]);
        problems.push({
          file: file.path,
          line: pos.line,
          column: pos.col,
          message: `YAML: ${e.message.split('\n')[0]}`,
        });
      }
      continue;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const place = (node: YamlNode | undefined) => {
      const offset = node?.range?.[0];
      return offset === undefined
        ? {}
        : { line: lines.linePos(offset).line, column: lines.linePos(offset).col };
    };
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push({
        file: file.path,
        ...place(doc.contents ?? undefined),
        message: 'expected a Kubernetes object (a mapping with kind), got a scalar or a list',
      });
      continue;
    }
    const object = value as Record<string, unknown>;
    if (object['kind'] === 'List' || (object['kind'] === undefined && Array.isArray(object['items']))) {
      const itemsNode = isMap(doc.contents) ? doc.contents.get('items', true) : undefined;
      const items = object['items'];
      if (!Array.isArray(items)) {
        problems.push({
          file: file.path,
          ...place(doc.contents ?? undefined),
          message: 'kind List: items: expected a list',
        });
        continue;
      }
      items.forEach((item: unknown, i) => {
        const node = isSeq(itemsNode) ? (itemsNode.items[i] as YamlNode | undefined) : undefined;
        if (item === null || typeof item !== 'object' || Array.isArray(item)) {
          problems.push({
            file: file.path,
            ...place(node),
            message: `items[${i}]: expected a Kubernetes object`,
          });
          return;
        }
        out.push({ value: item as Record<string, unknown>, node, file: file.path, lines });
      });
    } else {
      out.push({ value: object, node: doc.contents ?? undefined, file: file.path, lines });
    }
  }
  return out;
}

/** `spec.containers[0].resources` or `spec.template.0.x` → segments, numbers as numbers. */
function pathSegments(field: string): (string | number)[] {
  return field
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .filter((s) => s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** The deepest node along `path` that exists. */
function deepest(node: YamlNode | undefined, path: readonly (string | number)[]): YamlNode | undefined {
  let current = node;
  for (const key of path) {
    let next: unknown;
    // Some converters name one requirement as a list of one (`requirements[3][0]`): skip the index.
    if (isMap(current) && typeof key === 'number' && !current.has(String(key))) continue;
    if (isMap(current)) next = current.get(String(key), true);
    else if (isSeq(current) && typeof key === 'number') next = current.get(key, true);
    if (next === undefined || next === null || typeof next !== 'object') break;
    current = next as YamlNode;
  }
  return current;
}

/** The path an error points at: the first zod issue's, else the ValidationError's field. */
function errorPath(error: ValidationError): (string | number)[] {
  const issues = (error.cause as { issues?: { path?: unknown }[] } | undefined)?.issues;
  const first = issues?.[0]?.path;
  if (Array.isArray(first))
    return first.filter((s): s is string | number => typeof s === 'string' || typeof s === 'number');
  return pathSegments(error.field);
}

function problemAt(item: Located, error: unknown): PlanProblem {
  if (!(error instanceof ValidationError)) throw error;
  const node = deepest(item.node, errorPath(error));
  const offset = node?.range?.[0];
  const pos = offset === undefined ? undefined : item.lines.linePos(offset);
  return {
    file: item.file,
    ...(pos === undefined ? {} : { line: pos.line, column: pos.col }),
    message: error.message,
  };
}

/** A problem of the field at `path` inside `item`, at that field's line and column. */
export function fieldProblem(
  item: Located,
  path: readonly (string | number)[],
  message: string,
): PlanProblem {
  const pos = item.node === undefined ? undefined : item.lines.linePos(offsetOf(item.node, path));
  const field = path
    .map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`))
    .join('')
    .replace(/^\./, '');
  return {
    file: item.file,
    ...(pos === undefined ? {} : { line: pos.line, column: pos.col }),
    message: `${kindOf(item)} "${nameOf(item)}": ${field === '' ? '' : `${field}: `}${message}`,
  };
}

/**
 * Converts one object with its converter, after checking it against its kind's schema (the CRDs
 * for Karpenter's kinds, Kubernetes' models for built-in ones, unknown fields refused as
 * `kubectl apply --validate=strict` refuses them). Every problem found is added; an object with
 * any gives undefined.
 */
export function convert<T>(item: Located, problems: PlanProblem[], fn: (raw: never) => T): T | undefined {
  const found = checkManifest(item.value);
  if (found.length > 0) {
    for (const p of found) problems.push(fieldProblem(item, p.path, p.message));
    return undefined;
  }
  try {
    return fn(item.value as never);
  } catch (error) {
    problems.push(problemAt(item, error));
    return undefined;
  }
}

/**
 * A pod the plan places: one kube-scheduler marked unschedulable (as the provisioner reads it),
 * or, in a hand-made snapshot, one kube-scheduler has not looked at yet: phase Pending, not
 * bound or nominated, no PodScheduled condition, not a DaemonSet or static pod. Pods held by
 * scheduling gates (PodScheduled False, reason SchedulingGated) are not pending.
 */
export function isPendingForPlan(pod: V1Pod): boolean {
  if (isUnschedulable(pod)) return true;
  if (pod.spec?.nodeName || pod.status?.nominatedNodeName || pod.metadata?.deletionTimestamp) return false;
  if ((pod.status?.phase ?? 'Pending') !== 'Pending') return false;
  if ((pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet' || o.kind === 'Node'))
    return false;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror']) return false;
  return !(pod.status?.conditions ?? []).some((c) => c.type === 'PodScheduled');
}

export const isFinished = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

export function kindOf(item: Located): string {
  return typeof item.value['kind'] === 'string' ? item.value['kind'] : '<no kind>';
}

/** Manifests as users write them have no uid; the converters need one. */
export function withUid(item: Located, fallback: string): Located {
  const metadata = (item.value['metadata'] ?? {}) as Record<string, unknown>;
  if (typeof metadata !== 'object' || metadata === null || metadata['uid'] !== undefined) return item;
  return { ...item, value: { ...item.value, metadata: { ...metadata, uid: fallback } } };
}

export function nameOf(item: Located): string {
  const metadata = item.value['metadata'] as { name?: unknown; namespace?: unknown } | undefined;
  const name = typeof metadata?.name === 'string' ? metadata.name : '<unnamed>';
  return typeof metadata?.namespace === 'string' ? `${metadata.namespace}/${name}` : name;
}

export function newestTimestamp(items: readonly Located[]): number | undefined {
  let newest: number | undefined;
  for (const item of items) {
    const stamp = (item.value['metadata'] as { creationTimestamp?: unknown } | undefined)?.creationTimestamp;
    const ms = typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
    if (Number.isFinite(ms) && (newest === undefined || ms > newest)) newest = ms;
  }
  return newest;
}
