import type { ClusterNodePool } from '../../ports/cluster.ts';
import type { Confirmation, PassWorld } from './confirm.ts';
import type { DisruptionCandidate, DisruptionCommand, DisruptionSimulation } from './method.ts';
import { allowedByPool, passCandidates } from './pass-candidates.ts';
import { podsChanged } from './pods-changed.ts';
import { simulateWithout } from './simulation.ts';
import { type DroppedCandidate, validateCommand } from './validation.ts';

// A command, graceful or eventual, decided on the pass's read (the cluster summary, perhaps:
// untrusted) is decided again on what the API server says before its first write: its candidates'
// NodeClaims and Nodes (and the pods on them), and every existing Node or in-flight NodeClaim the
// simulation puts their pods on, each read with a GET, and the NodePools of its candidates, each
// read whole in one consistent list of NodeClaims and one of Nodes, so that their budgets count the
// API server's nodes (confirm.ts). On that confirmed world the
// candidates are computed again (their conditions on the API server's NodeClaims) and the command
// validated as after its validation wait, its simulation run again (every method, so that a drift
// command counts on no Node the API server does not have). A destination the simulation finds on
// that world and that was not read yet is read, and the command decided again on that read; when
// the decision after MAX_ROUNDS rounds of reads still counts on objects not read, it is abandoned.

/** Rounds of reads of new destinations before a command (or an expiry) that keeps finding more is given up. */
export const MAX_ROUNDS = 3;

export type Confirmed =
  | {
      readonly kind: 'confirmed';
      readonly command: DisruptionCommand;
      readonly dropped: readonly DroppedCandidate[];
      /** The world it was confirmed on. */
      readonly world: PassWorld;
    }
  | { readonly kind: 'abandoned'; readonly why: string; readonly failed: number };

export interface ConfirmCommandInput {
  readonly confirmation: Confirmation;
  /** The command as decided (or as its validation wait left it); its method says how it is checked. */
  readonly command: DisruptionCommand;
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly nowMs: number;
}

/**
 * Reads what `command` acts on and counts on from the API server and decides it again there.
 * @throws ClusterApiError when an object cannot be read (nothing is written then).
 */
export async function confirmCommand(input: ConfirmCommandInput): Promise<Confirmed> {
  const { confirmation: c, command, pools, nowMs } = input;
  const { method } = command;
  const abandoned = (why: string, failed = command.candidates.length): Confirmed => ({
    kind: 'abandoned',
    why,
    failed,
  });
  await c.readClaims(command.candidates.map((x) => x.nodeClaim.name));
  const nodeNames = command.candidates.flatMap((x) => {
    const fresh = c.claim(x.nodeClaim.name)?.status.nodeName;
    return fresh === undefined ? [x.node.name] : [x.node.name, fresh];
  });
  await c.readCandidateNodes(nodeNames);
  // The pods on the candidates as the API server lists them: a node is never taken for emptier
  // than it is.
  const changed = await podsChanged(c.podsReader(), command.candidates, nowMs);
  if (changed !== undefined) return abandoned(changed, 0);
  // The budgets of the candidates' NodePools (as listed and as the API server has them) count the
  // NodePools' nodes as the API server lists them.
  const touched = command.candidates.flatMap((x) => {
    const fresh = c.claim(x.nodeClaim.name)?.nodePoolName;
    return fresh === undefined ? [x.nodePool.pool.name] : [x.nodePool.pool.name, fresh];
  });
  const uncounted = await c.readPools(touched);
  if (uncounted !== undefined) return abandoned(`on the API server's objects: ${uncounted}`);
  // Each round decides on what was read so far; the last decision follows the last read.
  for (let round = 0; ; round++) {
    const world = c.world();
    let last: DisruptionSimulation | undefined;
    const simulate = (
      candidates: readonly DisruptionCandidate[],
      options?: DisruptionCommand['simulation'],
    ) => {
      last = simulateWithout(world.input, world.state, world.claims, candidates, options);
      return last;
    };
    const set = passCandidates({ ...world, pools, nowMs });
    const validation = validateCommand({
      command,
      fresh: set,
      allowed: allowedByPool(set, pools, command.reason, nowMs).allowed,
      simulate,
      nowMs,
    });
    if (validation.kind === 'invalid') return abandoned(`on the API server's objects: ${validation.why}`);
    const decided = validation.command;
    // A static NodePool's replacement is planned for its replicas: its command counts on no Node.
    // Emptiness counts on none either: the pods it evicts (eviction cost 0 or below) wait for the
    // provisioner, as in Karpenter; nor does a schedule's window: its pods wait for it to end.
    const moving =
      method.staticNodePools !== true &&
      command.reason !== 'Empty' &&
      command.reason !== 'Scheduled' &&
      decided.candidates.some((x) => x.reschedulablePods.length > 0);
    if (!moving) return { kind: 'confirmed', command: decided, dropped: validation.dropped, world };
    if (last === undefined) {
      const why = stillPlaced(command, simulate(decided.candidates, command.simulation));
      if (why !== undefined) return abandoned(`on the API server's objects: ${why}`);
    }
    const targets = destinations(decided.candidates, last);
    const nodes = targets.nodes.filter((n) => !c.hasNode(n));
    const claims = targets.claims.filter((n) => !c.hasClaim(n));
    if (nodes.length === 0 && claims.length === 0) {
      return { kind: 'confirmed', command: decided, dropped: validation.dropped, world };
    }
    if (round === MAX_ROUNDS) {
      return abandoned(
        `its simulation still counts on nodes not read from the API server after ${MAX_ROUNDS} rounds of reads`,
      );
    }
    await c.readNodes(nodes);
    await c.readClaims(claims);
  }
}

/**
 * Why a command validated without a simulation (drift) no longer holds on it: a pod without a
 * place, or more new nodes needed than the command launches. Undefined when it holds.
 */
function stillPlaced(command: DisruptionCommand, result: DisruptionSimulation): string | undefined {
  const [unplaced] = result.unschedulable;
  if (unplaced !== undefined) {
    return `${result.unschedulable.length} pods would have no place now (${unplaced.pod.namespace}/${unplaced.pod.name}: ${unplaced.message})`;
  }
  const launches = command.replacements.length;
  if (result.nodeClaims.length > launches) {
    return `the pods need ${result.nodeClaims.length} new nodes now, the command launches ${launches}`;
  }
  return undefined;
}

/** The existing Nodes and in-flight NodeClaims a simulation puts the candidates' pods on. */
export function destinations(
  candidates: readonly DisruptionCandidate[],
  result: DisruptionSimulation | undefined,
): { nodes: string[]; claims: string[] } {
  const mine = new Set(candidates.flatMap((x) => x.reschedulablePods.map((p) => p.uid)));
  const nodes = new Set<string>();
  const claims = new Set<string>();
  for (const p of result?.placements ?? []) {
    if (!mine.has(p.pod.uid)) continue;
    if (p.kind === 'existingNode') nodes.add(p.nodeName);
    else claims.add(p.nodeClaimName);
  }
  return { nodes: [...nodes], claims: [...claims] };
}
