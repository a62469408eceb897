import { type SolveResult, solve } from '../../core/index.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import {
  type ConfirmedRead,
  confirmationChanges,
  poolRead,
  readConfirmed,
  withConfirmed,
  withConsistentNodes,
} from '../state/confirm.ts';
import { takeDeletingNodePods } from '../state/deleting-nodes.ts';

// The plan a provisioning round acts on, confirmed against the API server. The Nodes a plan
// counts on come from a list read (the cluster summary: a cache, and untrusted input), so a Node
// that does not exist, is not Ready, or has less room than listed would leave pending pods to
// capacity that is not there. After the solve, the existing destinations the plan counts on (the
// Nodes pods were placed on, the in-flight NodeClaims used as capacity) and the deleting Nodes
// whose pods it plans for are read from the API server (a GET each), put in place of the listed
// ones, and the plan is solved again on that state, while a new unconfirmed destination appears.
// A pod left unschedulable by a NodePool's limits, while listed Nodes (or NodeClaims) of that pool
// not confirmed yet count against them, has that pool's Nodes (and NodeClaims) read with one
// consistent list of that pool alone: never a list of every Node of the cluster for it.

/** Rounds of GETs before the Nodes of the whole cluster are read with one consistent list instead. */
export const CONFIRM_ROUNDS = 3;
/** Rounds of GETs after the consistent list; then unconfirmed Nodes take nothing new. */
const ROUNDS_AFTER_LIST = 2;

export interface ConfirmedPlan {
  /** The state the plan was solved on: the listed one with the confirmed objects in place. */
  readonly state: ClusterState;
  readonly input: SchedulingInput;
  readonly result: SolveResult;
  /** How long the solves took, by the run's clock. */
  readonly planMs: number;
  /** Requests the confirmation made of the API server (GETs, NodePools' lists, and the cluster's if it fell back to one). */
  readonly requests: number;
  /** The Nodes of `state` as the API server has them (read on their own or with a consistent list). */
  readonly confirmedNodes: ReadonlySet<string>;
}

export interface ConfirmOptions {
  /**
   * The state's NodeClaims were read from the API server itself (a consistent list): none needs a
   * GET of its own.
   */
  readonly nodeClaimsConfirmed: boolean;
}

/**
 * Solves `first` and confirms the plan: see the file comment. The result is what the plan is when
 * every Node it places pods on or takes pods off, and every in-flight NodeClaim it places pods on,
 * is as the API server has it. A plan whose destinations were all confirmed unchanged is solved
 * once. Logs once (`plan confirmed against the API server`) when confirmation changed the state.
 * @throws ClusterApiError when a confirming read fails (the run plans nothing on a guess).
 */
export async function solveConfirmed(
  ports: { readonly cluster: Cluster; readonly clock: { now(): Date } },
  logger: Logger,
  first: { readonly state: ClusterState; readonly input: SchedulingInput },
  build: (state: ClusterState) => Promise<SchedulingInput>,
  options: ConfirmOptions,
): Promise<ConfirmedPlan> {
  let { state, input } = first;
  const nodesDone = new Set<string>();
  const claimsDone = new Set<string>(options.nodeClaimsConfirmed ? state.nodeClaims.map((c) => c.name) : []);
  const gone: string[] = [];
  const changed: string[] = [];
  const poolsRead: string[] = [];
  const bound: string[] = [];
  let listedAt: number | undefined;
  let requests = 0;
  let planMs = 0;
  let held = false;
  const confirmedNodes = () =>
    listedAt === undefined ? new Set(nodesDone) : new Set(state.nodes.map((n) => n.name));
  for (let round = 0; ; round++) {
    const start = ports.clock.now().getTime();
    const result = solve(input.solve);
    planMs += ports.clock.now().getTime() - start;
    const finish = (): ConfirmedPlan => {
      if (gone.length > 0 || changed.length > 0 || bound.length > 0) {
        logger.warn('plan confirmed against the API server', {
          reason: 'the listed Nodes or NodeClaims the plan counted on differ from the API server',
          gone: gone.slice(0, 10),
          changed: changed.slice(0, 10),
          ...(bound.length === 0 ? {} : { boundSincePendingRead: bound.slice(0, 10) }),
          rounds: round + 1,
          requests,
          ...(poolsRead.length === 0 ? {} : { nodePoolLists: poolsRead }),
          ...(listedAt === undefined ? {} : { consistentList: true }),
          ...(held ? { unconfirmedHeld: true } : {}),
        });
      }
      return { state, input, result, planMs, requests, confirmedNodes: confirmedNodes() };
    };
    if (held) return finish();
    const targets = destinations(state, input, result, nodesDone, claimsDone);
    const holding = nodesHoldingPending(state, nodesDone);
    if (holding.length > 0) targets.nodes = [...new Set([...targets.nodes, ...holding])].sort();
    const limited =
      listedAt === undefined ? limitedByListed(state, result, nodesDone, claimsDone, poolsRead) : [];
    if (targets.nodes.length === 0 && targets.nodeClaims.length === 0 && limited.length === 0)
      return finish();
    if (listedAt === undefined && round >= CONFIRM_ROUNDS) {
      // Many destinations, round after round: one consistent list of the cluster's Nodes.
      const [infos, claims] = await Promise.all([
        ports.cluster.nodeInfos({ consistent: true }),
        options.nodeClaimsConfirmed ? undefined : ports.cluster.nodeClaims({ consistent: true }),
      ]);
      requests += claims === undefined ? 1 : 2;
      const present = new Set(infos.items.map((n) => n.name));
      for (const n of state.nodes) if (!present.has(n.name)) gone.push(`node/${n.name}`);
      state = withConsistentNodes(state, infos.items, claims?.items);
      for (const c of state.nodeClaims) claimsDone.add(c.name);
      listedAt = round;
      input = await build(state);
      continue;
    }
    if (listedAt !== undefined && round >= listedAt + ROUNDS_AFTER_LIST) {
      // Still new destinations: what is not confirmed by now takes nothing new in this run.
      held = true;
      state = {
        ...state,
        nodes: state.nodes.map((n) => (nodesDone.has(n.name) ? n : { ...n, unschedulable: true })),
        nodeClaims: state.nodeClaims.filter((c) => claimsDone.has(c.name) || c.deleting),
      };
      input = await build(state);
      continue;
    }
    const [pools, gets] = await Promise.all([
      readPools(ports.cluster, state, limited, !options.nodeClaimsConfirmed),
      readConfirmed(ports.cluster, targets),
    ]);
    requests += pools.requests;
    poolsRead.push(...limited);
    for (const name of pools.read.nodeClaims.keys()) claimsDone.add(name);
    // A Node or NodeClaim read on its own is as the API server has it, pods and all: it wins.
    const read: ConfirmedRead = {
      nodes: new Map([...pools.read.nodes, ...gets.nodes]),
      nodeClaims: new Map([...pools.read.nodeClaims, ...gets.nodeClaims]),
    };
    for (const name of gets.nodes.keys()) {
      requests += 2;
      nodesDone.add(name);
    }
    for (const name of gets.nodeClaims.keys()) {
      requests += 1;
      claimsDone.add(name);
    }
    const diff = confirmationChanges(state, read);
    const unbound = withoutBound(withConfirmed(state, read), nodesDone);
    if (diff.gone.length === 0 && diff.changed.length === 0 && unbound.bound.length === 0) return finish();
    gone.push(...diff.gone);
    changed.push(...diff.changed);
    bound.push(...unbound.bound);
    state = unbound.state;
    input = await build(state);
  }
}

/**
 * What the plan counts on that is not confirmed yet: the Nodes pods were placed on, the in-flight
 * NodeClaims pods were placed on (and the Node a registered one names, which the listed read may
 * have left out), and the deleting Nodes whose pods the plan takes.
 */
function destinations(
  state: ClusterState,
  input: SchedulingInput,
  result: SolveResult,
  nodesDone: ReadonlySet<string>,
  claimsDone: ReadonlySet<string>,
): { nodes: string[]; nodeClaims: string[] } {
  const nodes = new Set<string>();
  const nodeClaims = new Set<string>();
  const claims = new Map(state.nodeClaims.map((c) => [c.name, c]));
  const listedNodes = new Set(state.nodes.map((n) => n.name));
  for (const placement of result.placements) {
    if (placement.kind === 'existingNode') {
      nodes.add(placement.nodeName);
      continue;
    }
    nodeClaims.add(placement.nodeClaimName);
    const nodeName = claims.get(placement.nodeClaimName)?.status.nodeName;
    if (nodeName !== undefined && !listedNodes.has(nodeName)) nodes.add(nodeName);
  }
  if (input.deletingNodePods.length > 0) {
    for (const name of takeDeletingNodePods(state.nodes, state.nodeClaims).deletingNodes) nodes.add(name);
  }
  return {
    nodes: [...nodes].filter((n) => !nodesDone.has(n)).sort(),
    nodeClaims: [...nodeClaims].filter((c) => !claimsDone.has(c)).sort(),
  };
}

/**
 * The listed Nodes, not confirmed yet, that hold a pod the pending read has: either the pod was
 * bound after that read or the listing is false. Reading them settles which: a pod counted both
 * pending and on its Node would get a node of its own besides the one it is on.
 */
function nodesHoldingPending(state: ClusterState, nodesDone: ReadonlySet<string>): string[] {
  if (state.pendingPods.length === 0) return [];
  const pending = new Set(state.pendingPods.map((p) => p.uid));
  return state.nodes
    .filter((n) => !nodesDone.has(n.name) && n.pods.some((p) => pending.has(p.uid)))
    .map((n) => n.name);
}

/**
 * The state without the pending pods a confirmed Node holds (the API server bound them after the
 * pending pods were read: binding is never undone), with their names. Only confirmed Nodes count:
 * a listed Node's pods may be false, and a pod they claim stays pending. Pure.
 */
export function withoutBound(
  state: ClusterState,
  confirmedNodes: ReadonlySet<string>,
): { readonly state: ClusterState; readonly bound: readonly string[] } {
  if (state.pendingPods.length === 0 || confirmedNodes.size === 0) return { state, bound: [] };
  const onNodes = new Set<string>();
  for (const n of state.nodes) if (confirmedNodes.has(n.name)) for (const p of n.pods) onNodes.add(p.uid);
  const bound = state.pendingPods.filter((p) => onNodes.has(p.uid));
  if (bound.length === 0) return { state, bound: [] };
  return {
    state: { ...state, pendingPods: state.pendingPods.filter((p) => !onNodes.has(p.uid)) },
    bound: bound.map((p) => `${p.namespace}/${p.name}`),
  };
}

/**
 * The NodePools that left a pod unschedulable by their limits while listed Nodes or NodeClaims of
 * theirs not confirmed yet count against them (a listed Node that does not exist would use up the
 * limits), and that were not read whole yet.
 */
function limitedByListed(
  state: ClusterState,
  result: SolveResult,
  nodesDone: ReadonlySet<string>,
  claimsDone: ReadonlySet<string>,
  poolsRead: readonly string[],
): string[] {
  const pools = new Set<string>();
  for (const pod of result.unschedulable) {
    for (const r of pod.reasons) if (r.reason.startsWith('limit')) pools.add(r.nodePool);
  }
  for (const pool of poolsRead) pools.delete(pool);
  const unconfirmed = new Set<string>();
  for (const n of state.nodes) {
    if (n.nodePoolName !== undefined && !nodesDone.has(n.name)) unconfirmed.add(n.nodePoolName);
  }
  for (const c of state.nodeClaims) {
    if (c.nodePoolName !== undefined && !claimsDone.has(c.name)) unconfirmed.add(c.nodePoolName);
  }
  return [...pools].filter((p) => unconfirmed.has(p)).sort();
}

/**
 * Reads each NodePool's Nodes, and its NodeClaims when `withClaims`, with one consistent list of
 * that pool each (label `karpenter.sh/nodepool`), in parallel: what they say of the listed state.
 * Costs 1 request a NodePool, 2 with its NodeClaims.
 * @throws ClusterApiError when a list fails.
 */
async function readPools(
  cluster: Pick<Cluster, 'nodeInfos' | 'nodeClaims'>,
  state: ClusterState,
  nodePools: readonly string[],
  withClaims: boolean,
): Promise<{ readonly read: ConfirmedRead; readonly requests: number }> {
  const reads = await Promise.all(
    nodePools.map(async (nodePool) => {
      const [infos, claims] = await Promise.all([
        cluster.nodeInfos({ consistent: true, nodePool }),
        withClaims ? cluster.nodeClaims({ consistent: true, nodePool }) : undefined,
      ]);
      return poolRead(state, nodePool, infos.items, claims?.items);
    }),
  );
  return {
    read: {
      nodes: new Map(reads.flatMap((r) => [...r.nodes])),
      nodeClaims: new Map(reads.flatMap((r) => [...r.nodeClaims])),
    },
    requests: nodePools.length * (withClaims ? 2 : 1),
  };
}
