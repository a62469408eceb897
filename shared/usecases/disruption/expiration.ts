import { expiration, isReschedulable, type NodeClaimPlan, type UnschedulablePod } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  commandsInFlight,
  decodeCommand,
} from '../state/command-record.ts';
import { unschedulableMessage } from '../state/eligibility.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { Confirmation } from './confirm.ts';
import { destinations, MAX_ROUNDS } from './confirm-command.ts';
import { describeClaim, describePlan, priceAssumedFrom, priceFrom, sumPrices } from './describe.ts';
import { createReplacements, deleteCandidates, digest, markCandidates, replacementNames } from './effects.ts';
import { confirmRecord } from './in-flight.ts';
import { type DisruptionCandidate, expirationMethod } from './method.ts';
import { recordedMethod } from './methods.ts';
import type { PassView } from './pass-view.ts';
import { simulateWithout } from './simulation.ts';

// Expiration, as Karpenter v1: forceful, outside the voluntary methods and their budgets.

/**
 * Deletes the NodeClaims past `expireAfter` at once (forceful: no budget, no validation, but each
 * confirmed on the API server's objects first, as the Nodes their pods are planned onto), after
 * creating replacements for the pods they run, planned in one simulation so that nodes expiring
 * together are not each planned onto the others; the drain does not wait for the replacements.
 * The command is recorded on the expired NodeClaims too, which keeps the replacements from being
 * removed as empty until the expired nodes are gone. A NodeClaim whose `expireAfter` does not
 * parse is skipped and logged. Returns how many expired.
 */
export async function expireNodeClaims(view: PassView): Promise<number> {
  const problems: string[] = [];
  const listed: ClusterNodeClaim[] = [];
  for (const claim of view.claims) {
    if (claim.deleting) continue;
    // Its NodePool's rollouts wait on an alarm (rollout-hold.ts): it expires once they go on.
    if (claim.nodePoolName !== undefined && view.rolloutHeld?.has(claim.nodePoolName) === true) continue;
    const verdict = expiration(claim.createdAtMs, claim.expireAfter, view.nowMs);
    if (verdict.kind === 'invalid') problems.push(`nodeClaim "${claim.name}": ${verdict.problem}`);
    if (verdict.kind === 'expired') listed.push(claim);
  }
  if (problems.length > 0) view.ports.logger.warn('expiration skipped', { problems: problems.slice(0, 10) });
  if (listed.length === 0) return 0;

  // The list read may be the cluster summary (untrusted): each NodeClaim is read from the API
  // server and judged again on that read; only those it finds expired expire.
  const confirmation = view.confirmation();
  const expired = await confirmExpired(view, confirmation, listed);
  if (expired.length === 0) return 0;

  // A pass that died between creating replacements and deleting the NodeClaims left the command
  // recorded (on its replacements, and on the expired NodeClaims once marked): those are deleted
  // without creating more, once the API server shows the record.
  const resumed = await resumedCommands(view, confirmation, expired);
  const records = new Map<
    string,
    {
      record: CommandRecord;
      claims: ClusterNodeClaim[];
      plans: readonly NodeClaimPlan[];
      unplaced?: { count: number; why: string };
    }
  >();
  for (const claim of expired) {
    const record = resumed.get(claim.name);
    if (record === undefined) continue;
    const entry = records.get(record.id) ?? { record, claims: [], plans: [] };
    entry.claims.push(claim);
    records.set(record.id, entry);
  }
  const fresh = expired.filter((c) => !resumed.has(c.name));
  if (fresh.length > 0) {
    const planned = await planReplacements(view, confirmation, fresh);
    if (planned === undefined) return records.size === 0 ? 0 : finish(view, records);
    const { plans, unplaced } = planned;
    const names = fresh.map((c) => c.name);
    const id = digest([expirationMethod.name, String(view.leaseToken), ...[...names].sort()]);
    const record: CommandRecord = {
      id,
      method: expirationMethod.name,
      reason: expirationMethod.reason,
      candidates: names,
      replacements: replacementNames(id, plans),
      startedAt: new Date(view.nowMs).toISOString(),
    };
    await createReplacements(view.ports, plans, record, view.pools, view.classes);
    records.set(id, { record, claims: fresh, plans, ...(unplaced === undefined ? {} : { unplaced }) });
  }
  return finish(view, records);
}

/**
 * The expiration commands in flight for `expired`, by NodeClaim. The records the list read shows
 * (and those the expired NodeClaims carry on the API server) only say where to look: each is the
 * record a NodeClaim it names carries on the API server (confirmRecord), taken only when its method
 * is expiration and it names the NodeClaim. Another command's (a voluntary method's, or one this
 * version does not know) is not resumed here: expiration is forceful and starts its own.
 */
async function resumedCommands(
  view: PassView,
  confirmation: Confirmation,
  expired: readonly ClusterNodeClaim[],
): Promise<Map<string, CommandRecord>> {
  const names = new Set(expired.map((c) => c.name));
  const listed = new Map(commandsInFlight(view.claims).commands);
  for (const claim of expired) {
    const value = claim.annotations[COMMAND_ANNOTATION];
    const record = value === undefined ? undefined : decodeCommand(value);
    if (record !== undefined && !('problem' in record) && !listed.has(record.id))
      listed.set(record.id, record);
  }
  const resumed = new Map<string, CommandRecord>();
  for (const entry of listed.values()) {
    if (recordedMethod(entry) !== expirationMethod || !entry.candidates.some((c) => names.has(c))) continue;
    const seen = await confirmRecord(confirmation, entry);
    if (seen === undefined || recordedMethod(seen.record) !== expirationMethod) continue;
    for (const c of seen.record.candidates) {
      if (names.has(c) && !resumed.has(c)) resumed.set(c, seen.record);
    }
  }
  return resumed;
}

/** The expired NodeClaims as the API server has them, judged again there; logs those it does not confirm. */
async function confirmExpired(
  view: PassView,
  confirmation: Confirmation,
  listed: readonly ClusterNodeClaim[],
): Promise<ClusterNodeClaim[]> {
  await confirmation.readClaims(listed.map((c) => c.name));
  const expired: ClusterNodeClaim[] = [];
  const unconfirmed: string[] = [];
  for (const claim of listed) {
    const fresh = confirmation.claim(claim.name);
    const verdict =
      fresh === undefined || fresh.deleting
        ? undefined
        : expiration(fresh.createdAtMs, fresh.expireAfter, view.nowMs);
    if (fresh !== undefined && verdict?.kind === 'expired') expired.push(fresh);
    else {
      unconfirmed.push(
        `nodeClaim "${claim.name}": ${fresh === undefined ? 'the API server has no such NodeClaim' : fresh.deleting ? 'it is being deleted' : 'not expired as the API server has it'}`,
      );
    }
  }
  if (unconfirmed.length > 0) {
    view.ports.logger.warn('expiration not confirmed', {
      count: unconfirmed.length,
      nodeClaims: unconfirmed.slice(0, 10),
    });
  }
  return expired;
}

/**
 * The replacements for the pods of the expired nodes, planned in one simulation on the API
 * server's objects: the expired nodes (and their pods) and every existing Node or in-flight
 * NodeClaim the simulation puts their pods on, read in up to MAX_ROUNDS rounds, each followed by
 * the simulation again. Undefined (and logged) when it still counts on objects not read after
 * them: the expiry waits for the next pass.
 */
async function planReplacements(
  view: PassView,
  confirmation: Confirmation,
  fresh: readonly ClusterNodeClaim[],
): Promise<{ plans: readonly NodeClaimPlan[]; unplaced?: { count: number; why: string } } | undefined> {
  // Each expired NodeClaim's Node: the one its status names, and the one the pass's read finds for
  // it (by providerID, perhaps: a Node the API server does not have is left out of the world).
  const listedNode = nodeIndex(view.state.nodes);
  await confirmation.readNodes(
    fresh.flatMap((c) => [c.status.nodeName, listedNode(c)?.name].filter((n) => n !== undefined)),
  );
  // Each round decides on what was read so far; the last decision follows the last read.
  for (let round = 0; ; round++) {
    const world = confirmation.world();
    const nodeFor = nodeIndex(world.state.nodes);
    const byName = new Map(world.claims.map((c) => [c.name, c]));
    const candidates: DisruptionCandidate[] = fresh.flatMap((listed) => {
      const claim = byName.get(listed.name) ?? listed;
      const node = nodeFor(claim);
      // A standalone NodeClaim gets no replacement: the provisioner plans for its pods once drained.
      const pool = claim.nodePoolName === undefined ? undefined : view.pools.get(claim.nodePoolName);
      const pods = (node?.pods ?? []).filter(isReschedulable);
      return node === undefined || pool === undefined || pods.length === 0
        ? []
        : [
            {
              nodeClaim: claim,
              node,
              nodePool: pool,
              disruptionCost: 0,
              reschedulablePods: pods,
              blockers: [],
            },
          ];
    });
    if (candidates.length === 0) return { plans: [] };
    const result = simulateWithout(world.input, world.state, world.claims, candidates);
    const targets = destinations(candidates, result);
    const nodes = targets.nodes.filter((n) => !confirmation.hasNode(n));
    const claims = targets.claims.filter((n) => !confirmation.hasClaim(n));
    if (nodes.length === 0 && claims.length === 0) {
      const unplaced = unplacedPods(view, candidates, result.unschedulable);
      return { plans: result.nodeClaims, ...(unplaced === undefined ? {} : { unplaced }) };
    }
    if (round === MAX_ROUNDS) {
      view.ports.logger.warn('expiration postponed', {
        nodeClaims: fresh.map((c) => c.name).slice(0, 10),
        why: `the simulation of their pods still counts on nodes not read from the API server after ${MAX_ROUNDS} rounds of reads`,
      });
      return undefined;
    }
    await confirmation.readNodes(nodes);
    await confirmation.readClaims(claims);
  }
}

/** Marks and deletes the expired NodeClaims of each command; returns how many. */
async function finish(
  view: PassView,
  records: ReadonlyMap<
    string,
    {
      record: CommandRecord;
      claims: ClusterNodeClaim[];
      plans: readonly NodeClaimPlan[];
      unplaced?: { count: number; why: string };
    }
  >,
): Promise<number> {
  let count = 0;
  for (const { record, claims, plans, unplaced } of records.values()) {
    await markCandidates(view.ports, claims, record);
    await deleteCandidates(view.ports, claims, 'Expired');
    const prices = claims.map((c) => priceFrom(view.input, c));
    view.record({
      kind: 'disrupt',
      reason: expirationMethod.reason,
      method: expirationMethod.name,
      action: record.replacements.length === 0 ? 'delete' : 'replace',
      outcome: 'deleted',
      commandId: record.id,
      candidates: claims.map((c, i) =>
        describeClaim(c, undefined, prices[i], priceAssumedFrom(view.input, c)),
      ),
      replacements: plans.map((plan, i) => describePlan(record.replacements[i] ?? '', plan, view.input)),
      pricePerHourBefore: sumPrices(prices),
      pricePerHourAfter: sumPrices(plans.map((p) => p.instanceTypes[0]?.priceUsdPerHour)),
      ...(unplaced === undefined ? {} : { podsWithoutReplacement: unplaced.count, why: unplaced.why }),
    });
    count += claims.length;
  }
  return count;
}

/** Longest `why` a line carries. */
const MAX_WHY = 500;

/**
 * The expired nodes' pods the simulation found no place for, neither on other nodes nor on a
 * replacement (for example while their NodePool cannot launch): the nodes go anyway, as
 * expiration is forceful, and those pods wait for the provisioner. Undefined when every pod has a
 * place.
 */
function unplacedPods(
  view: PassView,
  candidates: readonly DisruptionCandidate[],
  unschedulable: readonly UnschedulablePod[],
): { count: number; why: string } | undefined {
  const mine = new Set(candidates.flatMap((c) => c.reschedulablePods.map((p) => `${p.namespace}/${p.name}`)));
  const left = unschedulable.filter((u) => mine.has(`${u.pod.namespace}/${u.pod.name}`));
  const first = left[0];
  if (first === undefined) return undefined;
  const selection = view.input?.selection;
  const detail =
    selection === undefined
      ? 'the NodePools could not be read'
      : unschedulableMessage(first, { eligible: selection.eligible.length, skipped: selection.skipped });
  const which = left.length === 1 ? 'pod, which waits' : 'pods, which wait';
  const why = `no replacement for ${left.length} ${which} for the provisioner (${first.pod.namespace}/${first.pod.name}: ${detail})`;
  return { count: left.length, why: why.length > MAX_WHY ? `${why.slice(0, MAX_WHY - 1)}…` : why };
}
