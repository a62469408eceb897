// The pending-pod queue: which pods enter it, their order, and how a failed pod is relaxed.
import { ValidationError } from '../errors.ts';
import { Label, type Labels } from '../labels.ts';
import { computePodRequests, type NodeSelectorTerm, type Pod } from '../pod.ts';
import type { NodeSelectorRequirement } from '../requirements.ts';
import type { ResourceList } from '../resources.ts';
import { compareStrings, type PodState, type RelaxState, type Shape } from './model.ts';

/**
 * The pod's requests (`computePodRequests`) after checking that every request is a non-negative
 * integer. @throws ValidationError naming the field.
 */
export function validatedRequests(pod: Pod, what: string): ResourceList {
  if (!requestsValid(pod)) throwInvalidRequest(pod, what);
  return computePodRequests(pod);
}

/** True when every request list `validatedRequests` checks holds non-negative integers only. */
function requestsValid(pod: Pod): boolean {
  for (const c of pod.containers) if (!containerValid(c)) return false;
  for (const c of pod.initContainers ?? []) if (!containerValid(c)) return false;
  return listValid(pod.overhead) && listValid(pod.podRequests);
}

function containerValid(c: Pod['containers'][number]): boolean {
  return listValid(c.requests) && listValid(c.status?.actual) && listValid(c.status?.allocated);
}

function listValid(list: ResourceList | undefined): boolean {
  if (list === undefined) return true;
  for (const name in list) {
    if (!Object.hasOwn(list, name)) continue;
    const value = list[name];
    if (!Number.isSafeInteger(value) || (value as number) < 0) return false;
  }
  return true;
}

/** Throws the ValidationError for the first request that is not a non-negative integer. */
function throwInvalidRequest(pod: Pod, what: string): void {
  const object = `${what} "${pod.namespace}/${pod.name}"`;
  const check = (list: ResourceList | undefined, field: string): void => {
    for (const [name, value] of Object.entries(list ?? {})) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new ValidationError(object, `${field}.${name}`, `${value} must be a non-negative integer`);
      }
    }
  };
  const checkStatus = (c: Pod['containers'][number], statuses: string): void => {
    const at = `status.${statuses}[${c.name ?? ''}]`;
    check(c.status?.actual, `${at}.resources.requests`);
    check(c.status?.allocated, `${at}.allocatedResources`);
  };
  pod.containers.forEach((c, i) => {
    check(c.requests, `spec.containers[${i}].resources.requests`);
    checkStatus(c, 'containerStatuses');
  });
  (pod.initContainers ?? []).forEach((c, i) => {
    check(c.requests, `spec.initContainers[${i}].resources.requests`);
    checkStatus(c, 'initContainerStatuses');
  });
  check(pod.overhead, 'spec.overhead');
  check(pod.podRequests, 'spec.resources.requests');
}

/** Karpenter's queue order: cpu descending, memory descending, creation time, uid. */
export function comparePodStates(a: PodState, b: PodState): number {
  const ra = a.shape.requests;
  const rb = b.shape.requests;
  return (
    (rb['cpu'] ?? 0) - (ra['cpu'] ?? 0) ||
    (rb['memory'] ?? 0) - (ra['memory'] ?? 0) ||
    (a.pod.createdAtMs ?? 0) - (b.pod.createdAtMs ?? 0) ||
    compareStrings(a.pod.uid, b.pod.uid)
  );
}

/** Nothing relaxed yet; with preferencePolicy Ignore, every preference is dropped up front. */
export function initialRelax(shape: Shape, respectPreferences: boolean): RelaxState {
  return respectPreferences
    ? {
        term: 0,
        podAffinity: 0,
        antiAffinity: 0,
        preferredNode: 0,
        spread: 0,
        toleratePreferNoSchedule: false,
      }
    : {
        term: 0,
        podAffinity: shape.affinityPreferred.length,
        antiAffinity: shape.antiPreferred.length,
        preferredNode: shape.preferredNode.length,
        spread: shape.scheduleAnywayCount,
        toleratePreferNoSchedule: false,
      };
}

/** One relaxation step in Karpenter's order, or undefined when nothing is left to relax. */
export function relax(shape: Shape, r: RelaxState, anyPreferNoSchedule: boolean): RelaxState | undefined {
  if (shape.requiredTerms.length > 1 && r.term < shape.requiredTerms.length - 1)
    return { ...r, term: r.term + 1 };
  if (r.podAffinity < shape.affinityPreferred.length) return { ...r, podAffinity: r.podAffinity + 1 };
  if (r.antiAffinity < shape.antiPreferred.length) return { ...r, antiAffinity: r.antiAffinity + 1 };
  if (r.preferredNode < shape.preferredNode.length) return { ...r, preferredNode: r.preferredNode + 1 };
  if (r.spread < shape.scheduleAnywayCount) return { ...r, spread: r.spread + 1 };
  if (!r.toleratePreferNoSchedule && anyPreferNoSchedule) return { ...r, toleratePreferNoSchedule: true };
  return undefined;
}

/**
 * True when the pod refuses Karpenter nodes with `karpenter.sh/nodepool DoesNotExist`, read as
 * Karpenter reads it (`validateKarpenterManagedLabelCanExist` over `NewPodRequirements`): in the
 * first required node-affinity term (the one the simulation starts from) or in the heaviest
 * preferred term, which Karpenter treats as required at first. A node selector cannot say
 * DoesNotExist. Intersecting DoesNotExist with anything else leaves DoesNotExist or nothing, so
 * one such expression is enough.
 */
export function refusesKarpenterNodes(pod: Pod): boolean {
  const na = pod.affinity?.nodeAffinity;
  const required = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0];
  let heaviest: NodeSelectorTerm | undefined;
  let weight = Number.NEGATIVE_INFINITY;
  for (const p of na?.preferredDuringSchedulingIgnoredDuringExecution ?? []) {
    if (p.weight > weight) {
      weight = p.weight;
      heaviest = p.preference;
    }
  }
  const refuses = (term: NodeSelectorTerm | undefined): boolean =>
    (term?.matchExpressions ?? []).some((e) => e.key === Label.nodePool && e.operator === 'DoesNotExist');
  return refuses(required) || refuses(heaviest);
}

/** A node selector as `In` requirements. */
export function selectorToRequirements(selector: Labels | undefined): NodeSelectorRequirement[] {
  return Object.entries(selector ?? {}).map(([key, value]) => ({ key, operator: 'In', values: [value] }));
}
