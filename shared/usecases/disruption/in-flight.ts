import { DISRUPTED_TAINT, isConditionTrue, NodeClaimConditionType } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  commandsInFlight,
  decodeCommand,
} from '../state/command-record.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { Confirmation } from './confirm.ts';
import { decisionForRecord } from './describe.ts';
import { deleteCandidates, deleteReplacements, markCandidates, unmarkCandidates } from './effects.ts';
import { disruptionLaunching, disruptionWaitingReadiness, recordAll } from './events.ts';
import { recordedMethod, UnknownDisruptionMethodError } from './methods.ts';
import type { PassView } from './pass-view.ts';
import { SPOT_FAILED_ANNOTATION } from './replacement-capacity.ts';

// Commands outlive the pass that starts them: each pass finishes, undoes or repeats the steps of
// the commands recorded on the NodeClaims, and clears marks that belong to no command. A record's
// method is resolved from its name as it is read back (methods.ts); a command whose method this
// version does not know is left as it is, and logged.

/** A command whose replacements have not initialized by then is undone (Karpenter's minimum). */
export const COMMAND_TIMEOUT_MS = 10 * 60_000;

/**
 * Moves the commands in flight on: once every replacement is Initialized the candidates are
 * deleted; a replacement gone, or a command past COMMAND_TIMEOUT_MS, undoes the candidates' marks
 * and deletes the replacements that have not initialized (the next simulation must not count on
 * them); otherwise the marks and the launch request are repeated. A command whose record names a
 * method this version does not know is neither finished nor undone (nor its marks repeated): it is
 * logged with its UnknownDisruptionMethodError, and its NodeClaims stay in it. Returns how many it
 * changed (finished, undone, or marked again): only then does the pass read the cluster again.
 */
export async function progressCommands(view: PassView): Promise<number> {
  const { commands, malformed } = commandsInFlight(view.claims);
  if (malformed.length > 0) {
    view.ports.logger.warn('disruption command records ignored', { records: malformed.slice(0, 10) });
  }
  const nodeFor = nodeIndex(view.state.nodes);
  const tainted = (claim: ClusterNodeClaim) =>
    (nodeFor(claim)?.taints ?? []).some(
      (t) => t.key === DISRUPTED_TAINT.key && t.effect === DISRUPTED_TAINT.effect,
    );
  const confirmation = view.confirmation();
  let changed = 0;
  for (const listed of commands.values()) {
    // The record as the list read it (the cluster summary, perhaps: untrusted) only says where to
    // look: the command's NodeClaims are read from the API server, and it goes on from that read.
    const seen = await confirmRecord(confirmation, listed);
    if (seen === undefined) {
      view.ports.logger.warn('disruption command not confirmed', {
        commandId: listed.id,
        why: 'no NodeClaim on the API server carries its record',
      });
      continue;
    }
    const { record, byName } = seen;
    const method = recordedMethod(record);
    if (method instanceof UnknownDisruptionMethodError) {
      view.ports.logger.warn('disruption command left alone', {
        commandId: record.id,
        method: record.method,
        error: method.message,
      });
      continue;
    }
    const live = record.candidates.flatMap((n) => {
      const c = byName.get(n);
      return c === undefined || c.deleting ? [] : [c];
    });
    const replacements = record.replacements.map((n) => byName.get(n));
    const initialized = (r: ClusterNodeClaim | undefined) =>
      r !== undefined &&
      !r.deleting &&
      isConditionTrue(r.status.conditions, NodeClaimConditionType.initialized);
    // A candidate the API server shows without the record is marked (below) before it goes.
    if (replacements.every(initialized) && live.every((c) => carries(c, record.id))) {
      await deleteCandidates(view.ports, live, record.reason);
      view.record(decisionForRecord(record, method, live, byName, view.input, 'deleted'));
      changed += 1;
      continue;
    }
    const gone = record.replacements.filter((_, i) => replacements[i]?.deleting !== false);
    const timedOut = view.nowMs - Date.parse(record.startedAt) > COMMAND_TIMEOUT_MS;
    if (gone.length > 0 || timedOut) {
      // A candidate the API server shows in another command is that command's to undo.
      await unmarkCandidates(
        view.ports,
        live.filter((c) => c.annotations[COMMAND_ANNOTATION] === undefined || carries(c, record.id)),
      );
      // A consolidation replacement that could not launch (a spot shortage, mostly): its NodePool's
      // replacements are not pinned to spot for a while (replacement-capacity.ts).
      if (gone.length > 0 && method.consolidation !== undefined) {
        const at = new Date(view.nowMs).toISOString();
        for (const claim of live) {
          await ignoreNotFound(
            view.ports.cluster.patchNodeClaimMetadata(claim.name, {
              annotations: { [SPOT_FAILED_ANNOTATION]: at },
            }),
          );
        }
      }
      const unready = replacements.flatMap((r) =>
        r === undefined || r.deleting || initialized(r) ? [] : [r],
      );
      await deleteReplacements(view.ports, unready);
      const why =
        gone.length > 0
          ? `replacement ${gone.join(', ')} is gone (launch failed or timed out)`
          : `replacements not initialized within ${COMMAND_TIMEOUT_MS / 60_000} minutes`;
      view.record(decisionForRecord(record, method, live, byName, view.input, 'failed', why));
      changed += 1;
      continue;
    }
    // Still waiting: the marks and the launch request are repeated (both idempotent), so a pass
    // that died between creating the replacements and marking the candidates is completed here;
    // a Node that shows the taint already is not written again.
    if ((await markCandidates(view.ports, live, record, tainted)) > 0) changed += 1;
    // As Karpenter's queue tells each time it looks: the replacements launched, and those waited on.
    await recordAll(
      view.ports.cluster,
      replacements.flatMap((r) =>
        r === undefined
          ? []
          : [
              disruptionLaunching(r.name, record.reason),
              ...(initialized(r) ? [] : [disruptionWaitingReadiness(r.name)]),
            ],
      ),
    );
    const unlaunched = replacements.flatMap((r) =>
      r !== undefined && !isConditionTrue(r.status.conditions, NodeClaimConditionType.launched)
        ? [r.name]
        : [],
    );
    if (unlaunched.length > 0) await view.ports.requestLaunch(unlaunched);
  }
  return changed;
}

/** Whether the NodeClaim carries the record of command `id`. */
function carries(claim: ClusterNodeClaim | undefined, id: string): boolean {
  const value = claim?.annotations[COMMAND_ANNOTATION];
  const record = value === undefined ? undefined : decodeCommand(value);
  return record !== undefined && !('problem' in record) && record.id === id;
}

/**
 * The command's record as a NodeClaim the list read names in it carries it on the API server (a
 * replacement is created with it, a candidate marked with it), and the NodeClaims THAT record names
 * as the API server has them (a GET each): what the list read says of the command chooses only
 * where to look. Undefined when none carries it: a record only a list read shows is acted on by
 * nothing.
 */
export async function confirmRecord(
  confirmation: Confirmation,
  listed: CommandRecord,
): Promise<{ record: CommandRecord; byName: Map<string, ClusterNodeClaim> } | undefined> {
  const listedNames = [...listed.candidates, ...listed.replacements];
  await confirmation.readClaims(listedNames);
  const holder = listedNames.map((n) => confirmation.claim(n)).find((c) => carries(c, listed.id));
  const value = holder?.annotations[COMMAND_ANNOTATION];
  const record = value === undefined ? undefined : decodeCommand(value);
  if (record === undefined || 'problem' in record) return undefined;
  const names = [...record.candidates, ...record.replacements];
  await confirmation.readClaims(names);
  const byName = new Map<string, ClusterNodeClaim>();
  for (const name of names) {
    const claim = confirmation.claim(name);
    if (claim !== undefined) byName.set(name, claim);
  }
  return { record, byName };
}

/**
 * Undoes marks (taint, `DisruptionReason`, record) of NodeClaims that are candidates of no command
 * in flight and not being deleted. A replacement's record (it names other candidates) is left as
 * it is, and so is a record that does not parse (a newer version's, say).
 */
export async function removeStaleMarks(view: PassView): Promise<void> {
  const { commands } = commandsInFlight(view.claims);
  const inCommand = new Set([...commands.values()].flatMap((r) => r.candidates));
  const nodeFor = nodeIndex(view.state.nodes);
  const stale: ClusterNodeClaim[] = [];
  for (const claim of view.claims) {
    if (claim.deleting || inCommand.has(claim.name)) continue;
    if (!isStale(claim)) continue;
    const node = nodeFor(claim);
    // A Node being deleted (kubectl delete node) is the termination path's to taint.
    if (node?.deleting === true) continue;
    const tainted = (node?.taints ?? []).some((t) => t.key === DISRUPTED_TAINT.key);
    const marked =
      claim.annotations[COMMAND_ANNOTATION] !== undefined ||
      claim.status.conditions.some((c) => c.type === NodeClaimConditionType.disruptionReason);
    if (tainted || marked) stale.push(claim);
  }
  if (stale.length === 0) return;
  // Undone only as the API server has the NodeClaim: not being deleted, and in no command there.
  const confirmation = view.confirmation();
  await confirmation.readClaims(stale.map((c) => c.name));
  for (const listed of stale) {
    const fresh = confirmation.claim(listed.name);
    if (fresh === undefined || fresh.deleting || !isStale(fresh)) continue;
    if (fresh.annotations[COMMAND_ANNOTATION] !== undefined) {
      const record = decodeCommand(fresh.annotations[COMMAND_ANNOTATION]);
      // A record naming it stands for a command in flight while it is not being deleted.
      if (!('problem' in record) && record.candidates.includes(fresh.name)) continue;
    }
    await unmarkCandidates(view.ports, [fresh]);
  }
}

/**
 * Whether the NodeClaim's marks may be stale: it carries no record, or its record is a command's
 * that does not name it (a replacement's record is left as it is, and so is one that does not
 * parse, a newer version's, say).
 */
function isStale(claim: ClusterNodeClaim): boolean {
  const value = claim.annotations[COMMAND_ANNOTATION];
  if (value === undefined) return true;
  const record = decodeCommand(value);
  return !('problem' in record) && record.candidates.includes(claim.name);
}
