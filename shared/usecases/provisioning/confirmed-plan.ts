import { type SolveResult, solve } from '../../core/index.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import {
  type ConfirmTargets,
  confirmationChanges,
  readConfirmed,
  withConfirmed,
  withConsistentNodes,
} from '../state/confirm.ts';
import { takeDeletingNodePods } from './deleting-nodes.ts';

// The plan a provisioning round acts on, confirmed against the API server. The Nodes a plan
// counts on come from a list read (the cluster summary: a cache, and untrusted input), so a Node
// that does not exist, is not Ready, or has less room than listed would leave pending pods to
// capacity that is not there. After the solve, the existing destinations the plan counts on (the
// Nodes pods were placed on, the in-flight NodeClaims used as capacity) and the deleting Nodes
// whose pods it plans for are read from the API server (a GET each), put in place of the listed
// ones, and the plan is solved again on that state, while a new unconfirmed destination appears.

/** Rounds of GETs before the Nodes are read with one consistent list instead. */
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
  /** Requests the confirmation made of the API server (GETs, and lists when it fell back to one). */
  readonly requests: number;
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
  let listedAt: number | undefined;
  let requests = 0;
  let planMs = 0;
  let held = false;
  for (let round = 0; ; round++) {
    const start = ports.clock.now().getTime();
    const result = solve(input.solve);
    planMs += ports.clock.now().getTime() - start;
    const finish = (): ConfirmedPlan => {
      if (gone.length > 0 || changed.length > 0) {
        logger.warn('plan confirmed against the API server', {
          reason: 'the listed Nodes or NodeClaims the plan counted on differ from the API server',
          gone: gone.slice(0, 10),
          changed: changed.slice(0, 10),
          rounds: round + 1,
          requests,
          ...(listedAt === undefined ? {} : { consistentList: true }),
          ...(held ? { unconfirmedHeld: true } : {}),
        });
      }
      return { state, input, result, planMs, requests };
    };
    if (held) return finish();
    const targets = destinations(state, input, result, nodesDone, claimsDone);
    const limited = listedAt === undefined && limitedByListedNodes(state, result, nodesDone);
    if (targets.nodes.length === 0 && targets.nodeClaims.length === 0 && !limited) return finish();
    if (listedAt === undefined && (limited || round >= CONFIRM_ROUNDS)) {
      // Many destinations (or NodePool limits counted on every Node of a pool): one consistent list.
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
    const read = await readConfirmed(ports.cluster, targets);
    for (const name of read.nodes.keys()) {
      requests += 2;
      nodesDone.add(name);
    }
    for (const name of read.nodeClaims.keys()) {
      requests += 1;
      claimsDone.add(name);
    }
    const diff = confirmationChanges(state, read);
    if (diff.gone.length === 0 && diff.changed.length === 0) return finish();
    gone.push(...diff.gone);
    changed.push(...diff.changed);
    state = withConfirmed(state, read);
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
): ConfirmTargets {
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
 * Whether a pod was left unschedulable by a NodePool's limits while listed, unconfirmed Nodes of
 * that pool count against them (a listed Node that does not exist would use up the limits).
 */
function limitedByListedNodes(
  state: ClusterState,
  result: SolveResult,
  nodesDone: ReadonlySet<string>,
): boolean {
  const pools = new Set<string>();
  for (const pod of result.unschedulable) {
    for (const r of pod.reasons) if (r.reason.startsWith('limit')) pools.add(r.nodePool);
  }
  if (pools.size === 0) return false;
  return state.nodes.some(
    (n) => n.nodePoolName !== undefined && pools.has(n.nodePoolName) && !nodesDone.has(n.name),
  );
}
