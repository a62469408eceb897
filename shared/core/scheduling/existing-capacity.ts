// Capacity that exists or is on its way: existing nodes and in-flight NodeClaims as bins.
import type { ExistingNode, InFlightNodeClaim } from '../cluster.ts';
import { Label } from '../labels.ts';
import { computePodRequests, type Pod, podHostPorts } from '../pod.ts';
import { Requirements } from '../requirements.ts';
import { scoredBeyondRequests } from '../resource-fit-score.ts';
import { Resource, type ResourceList } from '../resources.ts';
import { DISRUPTED_TAINT, firstUntolerated, isEphemeralTaint } from '../taints.ts';
import { Bin, type CompiledDaemonSet, type Template } from './model.ts';
import { addInto, type Dims, dimOf, type Vec } from './vectors.ts';

/**
 * An existing node as a bin. Start-up and ephemeral taints of an uninitialized node are ignored;
 * `karpenter.sh/disrupted` makes it unschedulable. DaemonSet pods that will run on the node but
 * are not bound yet count as used, as Karpenter counts them.
 */
export function makeNodeBin(
  node: ExistingNode,
  template: Template | undefined,
  dims: Dims,
  daemonSets: readonly CompiledDaemonSet[],
): Bin {
  const startup = template?.startupTaints ?? [];
  const taints = (node.taints ?? []).filter(
    (t) =>
      node.initialized ||
      !(isEphemeralTaint(t) || startup.some((s) => s.key === t.key && s.effect === t.effect)),
  );
  const disrupted = taints.some((t) => t.key === DISRUPTED_TAINT.key);
  const used = new Float64Array(dims.names.length);
  const scored = { cpu: 0, memory: 0 };
  for (const p of node.pods) addRequests(used, scored, dims, computePodRequests(p));
  // DaemonSet pods that will run on the node but are not there yet take their room first.
  for (const ds of daemonSets) {
    if (firstUntolerated(taints, ds.tolerations, true) !== undefined) continue;
    if (!ds.alternatives.some((alt) => alt.matchesLabels(node.labels))) continue;
    if (node.pods.some((p) => isPodOf(p, ds))) continue;
    addInto(used, ds.vec);
  }
  const bin = new Bin(
    'node',
    node.name,
    Requirements.none,
    node.labels,
    taints.filter((t) => t.key !== DISRUPTED_TAINT.key),
    used,
    dims.vec(node.allocatable),
    template,
    node.unschedulable === true || disrupted,
  );
  bin.hostPorts = node.pods.flatMap((p) => podHostPorts(p));
  bin.scoreCpu = scored.cpu;
  bin.scoreMemory = scored.memory;
  return bin;
}

/** Adds a pod's requests to `used`, and to `scored` what kube-scheduler's score adds for a missing cpu or memory request. */
function addRequests(
  used: Vec,
  scored: { cpu: number; memory: number },
  dims: Dims,
  requests: ResourceList,
): void {
  addInto(used, dims.vec(requests));
  const beyond = scoredBeyondRequests(requests[Resource.cpu] ?? 0, requests[Resource.memory] ?? 0);
  scored.cpu += beyond.cpu;
  scored.memory += beyond.memory;
}

/**
 * An in-flight NodeClaim as a bin: its allocatable once launched (minus DaemonSet overhead), else
 * the smallest candidate's. `capacity` is what it counts against limits, when the pool has any.
 */
export function makeInFlightBin(
  claim: InFlightNodeClaim,
  template: Template | undefined,
  dims: Dims,
): { bin: Bin; capacity: ResourceList | undefined } {
  const object = `nodeClaim "${claim.name}"`;
  const reqs = Requirements.parse(claim.requirements, { object, field: 'spec.requirements' });
  const names = new Set(claim.instanceTypeNames);
  const candidates = (template?.types ?? []).filter((t) => names.has(t.it.name));
  let cap: Vec;
  const launchedType = claim.labels?.[Label.instanceType];
  const launched = candidates.find((t) => t.it.name === launchedType);
  // The DaemonSet pods the node will run: not bound yet, taken off its room instead.
  const daemon = claim.allocatable !== undefined ? launched?.daemon : candidates[0]?.daemon;
  if (claim.allocatable !== undefined) {
    cap = dims.vec(claim.allocatable);
    if (launched !== undefined)
      for (let i = 0; i < cap.length; i++) cap[i] = (cap[i] as number) - (launched.daemon[i] as number);
  } else if (candidates.length > 0) {
    cap = new Float64Array(dims.names.length).fill(Number.POSITIVE_INFINITY);
    for (const t of candidates)
      for (let i = 0; i < cap.length; i++) cap[i] = Math.min(cap[i] as number, t.alloc[i] as number);
  } else {
    cap = new Float64Array(dims.names.length);
  }
  const used = new Float64Array(dims.names.length);
  const scored = { cpu: 0, memory: 0 };
  for (const p of claim.pods) addRequests(used, scored, dims, computePodRequests(p));
  const bin = new Bin(
    'inflight',
    claim.labels?.[Label.hostname] ?? claim.name,
    reqs,
    claim.labels,
    claim.taints ?? [],
    used,
    cap,
    template,
    false,
  );
  bin.hostPorts = [...(template?.daemonPorts ?? []), ...claim.pods.flatMap((p) => podHostPorts(p))];
  bin.scoreCapCpu = dimOf(daemon, dims.index.get(Resource.cpu));
  bin.scoreCapMemory = dimOf(daemon, dims.index.get(Resource.memory));
  bin.scoreCpu = scored.cpu + bin.scoreCapCpu;
  bin.scoreMemory = scored.memory + bin.scoreCapMemory;
  let capacity: ResourceList | undefined;
  if (template?.remaining !== undefined) {
    capacity = claim.capacity;
    if (capacity === undefined) {
      const max: Record<string, number> = {};
      for (const t of candidates) {
        for (const [k, v] of Object.entries(t.capacity)) max[k] = Math.max(max[k] ?? 0, v);
      }
      capacity = max;
    }
  }
  return { bin, capacity };
}

/**
 * True when a bound pod belongs to the DaemonSet: its `daemonSetName` says so or, when unset, its
 * name is the DaemonSet's name plus the 5-character suffix the controller generates.
 */
export function isPodOf(pod: Pod, ds: CompiledDaemonSet): boolean {
  if (pod.namespace !== ds.namespace) return false;
  if (pod.daemonSetName !== undefined) return pod.daemonSetName === ds.name;
  const prefix = `${ds.name}-`;
  return pod.name.startsWith(prefix) && /^[a-z0-9]{5}$/.test(pod.name.slice(prefix.length));
}
