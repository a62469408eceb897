import { computePodRequests } from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim, NodeInfo } from '../../ports/cluster.ts';

// Confirmed state: the Nodes and NodeClaims a decision acts on or counts on, read again from the
// API server, in place of what a list read (the cluster summary, untrusted input) said of them.
// The summary may choose what to look at, never what to do: a use case solves on the listed state,
// names the objects its decision touches or counts on, reads exactly those here (a GET each), puts
// them in place of the listed ones (`withConfirmed`) and decides again with the same pure function.
// With many objects to confirm, one consistent list (`withConsistentNodes`) replaces the GETs; a
// NodePool whose limits a decision counts on is read with one consistent list of its own (`poolRead`).

/** The Nodes and NodeClaims to read from the API server, by name. */
export interface ConfirmTargets {
  readonly nodes: readonly string[];
  readonly nodeClaims: readonly string[];
}

/** What the API server has of the targets: an object, or undefined when it does not exist. */
export interface ConfirmedRead {
  /** Each Node with its pods, both as the API server has them. */
  readonly nodes: ReadonlyMap<string, ClusterNode | undefined>;
  readonly nodeClaims: ReadonlyMap<string, ClusterNodeClaim | undefined>;
}

/** The part of a state confirmation reads and replaces. */
export interface NodesAndClaims {
  readonly nodes: readonly ClusterNode[];
  readonly nodeClaims: readonly ClusterNodeClaim[];
}

/**
 * Reads the targets from the API server: `cluster.nodeWithPods(name)` per Node (the Node and its
 * unfinished pods, specs and all, as the API server has them: nothing of a Node's pods is taken
 * from the listed read), `cluster.nodeClaim(name)` per NodeClaim, all in parallel. An object the
 * API server does not have is undefined; one it cannot answer for throws; a pod it cannot convert
 * marks its Node as having pods it cannot read (the node then takes nothing new).
 * Costs 2 requests a Node and 1 a NodeClaim.
 * @throws ClusterApiError when a read fails (nothing is taken for absent).
 */
export async function readConfirmed(
  cluster: Pick<Cluster, 'nodeWithPods' | 'nodeClaim'>,
  targets: ConfirmTargets,
): Promise<ConfirmedRead> {
  const [nodes, nodeClaims] = await Promise.all([
    Promise.all(
      [...new Set(targets.nodes)].map(async (name) => [name, await cluster.nodeWithPods(name)] as const),
    ),
    Promise.all(
      [...new Set(targets.nodeClaims)].map(async (name) => [name, await cluster.nodeClaim(name)] as const),
    ),
  ]);
  return { nodes: new Map(nodes), nodeClaims: new Map(nodeClaims) };
}

/**
 * The state with the confirmed objects in place of the listed ones: a listed Node or NodeClaim
 * the API server does not have is removed, one it has replaces the listed one, and one that was
 * not listed (a Node the summary left out) is added. Pure.
 */
export function withConfirmed<S extends NodesAndClaims>(state: S, read: ConfirmedRead): S {
  return {
    ...state,
    nodes: replaced(state.nodes, read.nodes),
    nodeClaims: replaced(state.nodeClaims, read.nodeClaims),
  };
}

function replaced<T extends { readonly name: string }>(
  listed: readonly T[],
  read: ReadonlyMap<string, T | undefined>,
): readonly T[] {
  if (read.size === 0) return listed;
  const out: T[] = [];
  const seen = new Set<string>();
  for (const item of listed) {
    seen.add(item.name);
    if (!read.has(item.name)) out.push(item);
    else {
      const confirmed = read.get(item.name);
      if (confirmed !== undefined) out.push(confirmed);
    }
  }
  for (const [name, confirmed] of read) if (!seen.has(name) && confirmed !== undefined) out.push(confirmed);
  return out;
}

/**
 * The state with its Nodes as one consistent list of the API server has them (`nodeInfos({
 * consistent: true })`, no pods): a Node not in it is removed, the others take its fields. Their
 * pods stay the listed ones (not confirmed by this read), a Node that was not listed gets none and
 * is marked as having pods that could not be read. The read for when there are too many Nodes to
 * GET one by one; NodeClaims are replaced by `consistentClaims` when given. Pure.
 */
export function withConsistentNodes<S extends NodesAndClaims>(
  state: S,
  infos: readonly NodeInfo[],
  consistentClaims?: readonly ClusterNodeClaim[],
): S {
  const listed = new Map(state.nodes.map((n) => [n.name, n]));
  const nodes = infos.map((info) => withListedPods(info, listed.get(info.name)));
  return { ...state, nodes, ...(consistentClaims === undefined ? {} : { nodeClaims: consistentClaims }) };
}

/**
 * What one consistent list of a NodePool's Nodes (`nodeInfos({ consistent: true, nodePool })`, no
 * pods) and, when given, one of its NodeClaims (`nodeClaims({ consistent: true, nodePool })`) say
 * of the listed state, as a confirmed read: each Node and NodeClaim the lists have, and each listed
 * one of that NodePool they lack (undefined: gone). A Node keeps its listed pods (this read does
 * not confirm them); one that was not listed gets none and is marked as having pods that could not
 * be read. Put in place with `withConfirmed`; other NodePools' objects are left as listed. Pure.
 */
export function poolRead(
  state: NodesAndClaims,
  nodePool: string,
  infos: readonly NodeInfo[],
  consistentClaims?: readonly ClusterNodeClaim[],
): ConfirmedRead {
  const listed = new Map(state.nodes.map((n) => [n.name, n]));
  const nodes = new Map<string, ClusterNode | undefined>();
  for (const n of state.nodes) if (n.nodePoolName === nodePool) nodes.set(n.name, undefined);
  for (const info of infos) nodes.set(info.name, withListedPods(info, listed.get(info.name)));
  const nodeClaims = new Map<string, ClusterNodeClaim | undefined>();
  if (consistentClaims !== undefined) {
    for (const c of state.nodeClaims) if (c.nodePoolName === nodePool) nodeClaims.set(c.name, undefined);
    for (const c of consistentClaims) nodeClaims.set(c.name, c);
  }
  return { nodes, nodeClaims };
}

/** A Node as a list without pods has it, with the pods listed for it (none, and marked, if not listed). */
function withListedPods(info: NodeInfo, was: ClusterNode | undefined): ClusterNode {
  if (was === undefined) return { ...info, pods: [], unreadablePods: [`node "${info.name}": pods not read`] };
  return {
    ...info,
    pods: was.pods,
    ...(was.unreadablePods === undefined ? {} : { unreadablePods: was.unreadablePods }),
  };
}

/**
 * What a confirmation changed, by name: listed objects the API server does not have (`gone`), and
 * those it has otherwise than listed (`changed`: readiness, deletion, schedulability, allocatable,
 * labels, taints, pods; a NodeClaim's spec, status or deletion). Pure; for the one log line.
 */
export function confirmationChanges(
  listed: NodesAndClaims,
  read: ConfirmedRead,
): { readonly gone: readonly string[]; readonly changed: readonly string[] } {
  const gone: string[] = [];
  const changed: string[] = [];
  const nodes = new Map(listed.nodes.map((n) => [n.name, n]));
  const claims = new Map(listed.nodeClaims.map((c) => [c.name, c]));
  for (const [name, node] of read.nodes) {
    const was = nodes.get(name);
    if (node === undefined) {
      if (was !== undefined) gone.push(`node/${name}`);
    } else if (was === undefined || nodeShape(was) !== nodeShape(node)) changed.push(`node/${name}`);
  }
  for (const [name, claim] of read.nodeClaims) {
    const was = claims.get(name);
    if (claim === undefined) {
      if (was !== undefined) gone.push(`nodeclaim/${name}`);
    } else if (was === undefined || claimShape(was) !== claimShape(claim)) changed.push(`nodeclaim/${name}`);
  }
  return { gone, changed };
}

function nodeShape(n: ClusterNode): string {
  return JSON.stringify([
    n.ready,
    n.deleting,
    n.unschedulable === true,
    n.initialized,
    n.nodePoolName ?? null,
    n.providerId ?? null,
    sorted(n.allocatable),
    sorted(n.labels),
    n.taints ?? [],
    n.pods.map((p) => `${p.uid} ${JSON.stringify(sorted(computePodRequests(p)))}`).sort(),
    (n.unreadablePods ?? []).length,
  ]);
}

function claimShape(c: ClusterNodeClaim): string {
  return JSON.stringify([
    c.deleting,
    c.nodePoolName,
    c.requirements,
    c.taints ?? [],
    sorted(c.labels),
    c.status.providerId ?? null,
    c.status.nodeName ?? null,
    sorted(c.status.allocatable ?? {}),
  ]);
}

const sorted = (record: Readonly<Record<string, unknown>>) =>
  Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
