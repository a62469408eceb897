import type { Container, ContainerResourceStatus, InitContainer, Pod, ResourceList } from '../core/index.ts';
import { isRecord, readObject, readResources } from './fields.ts';

// What a pod's status says of its containers' requests under in-place pod resize, read as
// Karpenter reads it (component-helpers' PodRequests with the status resources): a container, or a
// sidecar (an init container that restarts Always), whose status of the same name reports
// `resources` counts the largest per resource of its spec requests, `resources.requests` and
// `allocatedResources`; when the pod's `PodResizePending` condition says `Infeasible`, the spec is
// left out. A container is given its status only when that changes what it counts, so most pods
// carry none. The pod reader and the cluster summary carry the statuses that may change it as a
// pod's own fields (pruneResize, resizeStatus).

/** The pod's `PodResizePending` condition has reason `Infeasible` (the first such condition decides). */
function isResizeInfeasible(conditions: unknown): boolean {
  if (!Array.isArray(conditions)) return false;
  const pending = conditions.find((c) => isRecord(c) && c['type'] === 'PodResizePending');
  return isRecord(pending) && pending['reason'] === 'Infeasible';
}

/**
 * Container statuses that report resources, by name: `containerStatuses`, then
 * `initContainerStatuses` (a later one of a name wins, as in Karpenter's map). Entries that are not
 * objects or have no name are skipped: the API server sends none.
 */
function statusesByName(
  status: Readonly<Record<string, unknown>>,
): Map<string, Readonly<Record<string, unknown>>> {
  const out = new Map<string, Readonly<Record<string, unknown>>>();
  for (const list of [status['containerStatuses'], status['initContainerStatuses']]) {
    if (!Array.isArray(list)) continue;
    for (const entry of list) {
      if (!isRecord(entry) || typeof entry['name'] !== 'string') continue;
      out.set(entry['name'], entry);
    }
  }
  return out;
}

/** The names of the containers whose status counts: every container, and the sidecars. */
function countedNames(spec: Readonly<Record<string, unknown>>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const add = (list: unknown, sidecarsOnly: boolean) => {
    if (!Array.isArray(list)) return;
    for (const c of list) {
      if (!isRecord(c) || typeof c['name'] !== 'string') continue;
      if (sidecarsOnly && c['restartPolicy'] !== 'Always') continue;
      const resources = isRecord(c['resources']) ? c['resources'] : undefined;
      out.set(c['name'], resources?.['requests']);
    }
  };
  add(spec['containers'], false);
  add(spec['initContainers'], true);
  return out;
}

/** The larger amount per resource of the lists given. */
function maxOf(...lists: readonly (ResourceList | undefined)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const list of lists) {
    for (const [name, value] of Object.entries(list ?? {})) out[name] = Math.max(out[name] ?? 0, value);
  }
  return out;
}

function sameList(a: ResourceList, b: ResourceList): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/**
 * The containers and sidecars of a converted spec, each given what its status reports of its
 * requests when that changes what it counts, and `resizeInfeasible` when the pod's resize is
 * infeasible and a container was given a status.
 * @throws ValidationError for a status quantity that does not parse, or `resources` or
 *   `allocatedResources` that are not objects.
 */
export function withResizeStatus<P extends Pick<Pod, 'containers' | 'initContainers'>>(
  pod: P,
  rawStatus: unknown,
  object: string,
): P & Pick<Pod, 'resizeInfeasible'> {
  if (!isRecord(rawStatus)) return pod;
  const statuses = statusesByName(rawStatus);
  if (statuses.size === 0) return pod;
  const infeasible = isResizeInfeasible(rawStatus['conditions']);
  let given = false;
  const give = <C extends Container>(c: C, list: string): C => {
    const entry = c.name === undefined ? undefined : statuses.get(c.name);
    if (entry === undefined || entry['resources'] == null) return c;
    const at = `status.${list}[${c.name}]`;
    const resources = readObject(entry['resources'], object, `${at}.resources`);
    const status: ContainerResourceStatus = {
      ...ifSet('actual', readResources(resources?.['requests'], object, `${at}.resources.requests`)),
      ...ifSet('allocated', readResources(entry['allocatedResources'], object, `${at}.allocatedResources`)),
    };
    const counted = infeasible
      ? maxOf(status.actual, status.allocated)
      : maxOf(c.requests, status.actual, status.allocated);
    if (sameList(counted, c.requests ?? {})) return c;
    given = true;
    return { ...c, status };
  };
  const containers = pod.containers.map((c) => give(c, 'containerStatuses'));
  const initContainers = pod.initContainers?.map((c: InitContainer) =>
    c.restartPolicy === 'Always' ? give(c, 'initContainerStatuses') : c,
  );
  if (!given) return pod;
  return {
    ...pod,
    containers,
    ...(initContainers === undefined ? {} : { initContainers }),
    ...(infeasible ? { resizeInfeasible: true as const } : {}),
  };
}

function ifSet<K extends string>(key: K, list: ResourceList | undefined): { [P in K]?: ResourceList } {
  return (list === undefined ? {} : { [key]: list }) as { [P in K]?: ResourceList };
}

/**
 * What a pod keeps of its status for its requests (PodInstance.resize): the container statuses
 * that may change what a container counts, pruned to their resources, and whether the resize is
 * infeasible. A status whose requests and allocated resources are, as text, those of the spec
 * changes nothing and is left out (unless the resize is infeasible, where the spec does not
 * count); undefined when none is kept, as for most pods. Never throws: a malformed value is kept,
 * for the conversion to report.
 */
export interface PodResize {
  /** Pruned entries of `containerStatuses` and `initContainerStatuses` (one list: names are unique). */
  readonly containerStatuses: readonly unknown[];
  readonly resizeInfeasible?: true;
}

/** PodResize of a raw pod's spec and status (plain JSON), or undefined when nothing is kept. */
export function pruneResize(spec: unknown, status: unknown): PodResize | undefined {
  if (!isRecord(spec) || !isRecord(status)) return undefined;
  const statuses = statusesByName(status);
  if (statuses.size === 0) return undefined;
  const infeasible = isResizeInfeasible(status['conditions']);
  const counted = countedNames(spec);
  const kept: unknown[] = [];
  for (const [name, entry] of statuses) {
    if (!counted.has(name) || entry['resources'] == null) continue;
    const resources = entry['resources'];
    const requests = isRecord(resources) ? resources['requests'] : resources;
    const allocated = entry['allocatedResources'];
    const spec = counted.get(name);
    if (!infeasible && sameText(requests, spec) && sameText(allocated, spec)) continue;
    kept.push({
      name,
      resources: isRecord(resources) ? (requests === undefined ? {} : { requests }) : resources,
      ...(allocated === undefined ? {} : { allocatedResources: allocated }),
    });
  }
  if (kept.length === 0) return undefined;
  return { containerStatuses: kept, ...(infeasible ? { resizeInfeasible: true as const } : {}) };
}

/**
 * Whether every amount of `reported` (absent or null: none) is, as text, the spec's amount of the
 * same resource: then taking the larger of the two changes nothing.
 */
function sameText(reported: unknown, spec: unknown): boolean {
  if (reported == null) return true;
  if (!isRecord(reported)) return false;
  const specs = isRecord(spec) ? spec : {};
  return Object.entries(reported).every(
    ([name, value]) => typeof value === 'string' && specs[name] === value,
  );
}

/** The status fields of a PodResize, as joinPod puts them back on a pod (plain JSON). */
export function resizeStatus(resize: unknown): Record<string, unknown> {
  if (!isRecord(resize)) return {};
  return {
    ...(resize['containerStatuses'] === undefined ? {} : { containerStatuses: resize['containerStatuses'] }),
    ...(resize['resizeInfeasible'] === true
      ? { conditions: [{ type: 'PodResizePending', status: 'True', reason: 'Infeasible' }] }
      : {}),
  };
}
