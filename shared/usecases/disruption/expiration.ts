import { expiration, isReschedulable, type NodeClaimPlan, type UnschedulablePod } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import { unschedulableMessage } from '../provisioning/eligibility.ts';
import { nodeIndex } from './candidates.ts';
import { type CommandRecord, commandsInFlight } from './command-record.ts';
import { describeClaim, describePlan, priceAssumedFrom, priceFrom, sumPrices } from './describe.ts';
import { createReplacements, deleteCandidates, digest, markCandidates, replacementNames } from './effects.ts';
import type { DisruptionCandidate } from './method.ts';
import type { PassView } from './pass-view.ts';
import { simulateWithout } from './simulation.ts';

// Expiration, as Karpenter v1: forceful, outside the voluntary methods and their budgets.

/**
 * Deletes the NodeClaims past `expireAfter` at once (forceful: no budget, no validation), after
 * creating replacements for the pods they run, planned in one simulation so that nodes expiring
 * together are not each planned onto the others; the drain does not wait for the replacements.
 * The command is recorded on the expired NodeClaims too, which keeps the replacements from being
 * removed as empty until the expired nodes are gone. A NodeClaim whose `expireAfter` does not
 * parse is skipped and logged. Returns how many expired.
 */
export async function expireNodeClaims(view: PassView): Promise<number> {
  const problems: string[] = [];
  const expired: ClusterNodeClaim[] = [];
  for (const claim of view.claims) {
    if (claim.deleting) continue;
    const verdict = expiration(claim.createdAtMs, claim.expireAfter, view.nowMs);
    if (verdict.kind === 'invalid') problems.push(`nodeClaim "${claim.name}": ${verdict.problem}`);
    if (verdict.kind === 'expired') expired.push(claim);
  }
  if (problems.length > 0) view.ports.logger.warn('expiration skipped', { problems: problems.slice(0, 10) });
  if (expired.length === 0) return 0;

  // A pass that died between creating replacements and deleting the NodeClaims left the command
  // recorded: those are deleted without creating more.
  const resumed = new Map<string, CommandRecord>();
  for (const record of commandsInFlight(view.claims).commands.values()) {
    if (record.method === 'expiration') for (const c of record.candidates) resumed.set(c, record);
  }
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
    const nodeFor = nodeIndex(view.state.nodes);
    const candidates: DisruptionCandidate[] = fresh.flatMap((claim) => {
      const node = nodeFor(claim);
      const pool = view.pools.get(claim.nodePoolName);
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
    const result =
      candidates.length === 0 ? undefined : simulateWithout(view.input, view.state, view.claims, candidates);
    const plans = result?.nodeClaims ?? [];
    const unplaced = result === undefined ? undefined : unplacedPods(view, candidates, result.unschedulable);
    const names = fresh.map((c) => c.name);
    const id = digest(['expiration', String(view.leaseToken), ...[...names].sort()]);
    const record: CommandRecord = {
      id,
      method: 'expiration',
      reason: 'Expired',
      candidates: names,
      replacements: replacementNames(id, plans),
      startedAt: new Date(view.nowMs).toISOString(),
    };
    await createReplacements(view.ports, plans, record, view.pools, view.classes);
    records.set(id, { record, claims: fresh, plans, ...(unplaced === undefined ? {} : { unplaced }) });
  }
  for (const { record, claims, plans, unplaced } of records.values()) {
    await markCandidates(view.ports, claims, record);
    await deleteCandidates(view.ports, claims, 'Expired');
    const prices = claims.map((c) => priceFrom(view.input, c));
    view.record({
      kind: 'disrupt',
      reason: 'Expired',
      method: 'expiration',
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
  }
  return expired.length;
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
