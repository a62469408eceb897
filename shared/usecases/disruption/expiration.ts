import { expiration, isReschedulable } from '../../core/index.ts';
import { DISRUPTION_REASON_CONDITION } from '../termination-decide.ts';
import { nodeIndex } from './candidates.ts';
import { type CommandRecord, commandsInFlight } from './command-record.ts';
import { describeClaim, describePlan, priceFrom, sumPrices } from './describe.ts';
import { createReplacements, deleteCandidates, digest, replacementNames } from './effects.ts';
import type { PassView } from './pass-view.ts';
import { simulateWithout } from './simulation.ts';

// Expiration, as Karpenter v1: forceful, outside the voluntary methods and their budgets.

/**
 * Deletes the NodeClaims past `expireAfter` at once (forceful: no budget, no validation), after
 * creating replacements for the pods they run; the drain does not wait for them. A NodeClaim whose
 * `expireAfter` does not parse is skipped and logged. Returns how many expired.
 */
export async function expireNodeClaims(view: PassView): Promise<number> {
  const nowMs = view.nowMs;
  const problems: string[] = [];
  let expired = 0;
  const nodeFor = nodeIndex(view.state.nodes);
  // A pass that died between creating an expired NodeClaim's replacements and deleting it left
  // them recorded: the next pass deletes the NodeClaim without creating more.
  const started = new Map<string, CommandRecord>();
  for (const record of commandsInFlight(view.claims).commands.values()) {
    if (record.method === 'expiration') for (const c of record.candidates) started.set(c, record);
  }
  for (const claim of view.claims) {
    if (claim.deleting) continue;
    const verdict = expiration(claim.createdAtMs, claim.expireAfter, nowMs);
    if (verdict.kind === 'invalid') {
      problems.push(`nodeClaim "${claim.name}": ${verdict.problem}`);
      continue;
    }
    if (verdict.kind !== 'expired') continue;
    const pool = view.pools.get(claim.nodePoolName);
    const node = nodeFor(claim);
    const pods = (node?.pods ?? []).filter(isReschedulable);
    // Replacements for the pods that will need a place, launched now; the drain does not wait.
    const earlier = started.get(claim.name);
    const plans =
      earlier !== undefined || node === undefined || pool === undefined || pods.length === 0
        ? []
        : simulateWithout(view.input, view.state, view.claims, [
            {
              nodeClaim: claim,
              node,
              nodePool: pool,
              disruptionCost: 0,
              reschedulablePods: pods,
              blockers: [],
            },
          ]).nodeClaims;
    const id = earlier?.id ?? digest(['expiration', claim.name, String(view.leaseToken)]);
    const record: CommandRecord = earlier ?? {
      id,
      method: 'expiration',
      reason: 'Expired',
      candidates: [claim.name],
      replacements: replacementNames(id, plans),
      startedAt: new Date(nowMs).toISOString(),
    };
    await createReplacements(view.ports, plans, record, view.pools, view.classes);
    await view.ports.cluster.patchNodeClaimStatus(claim.name, {
      conditions: [
        {
          type: DISRUPTION_REASON_CONDITION,
          status: 'True',
          reason: 'Expired',
          message: `expireAfter ${claim.expireAfter ?? '720h'} passed`,
        },
      ],
    });
    await deleteCandidates(view.ports, [claim], 'Expired');
    expired += 1;
    const price = priceFrom(view.input, claim);
    view.record({
      kind: 'disrupt',
      reason: 'Expired',
      method: 'expiration',
      action: record.replacements.length === 0 ? 'delete' : 'replace',
      outcome: 'deleted',
      commandId: id,
      candidates: [describeClaim(claim, node?.name, price)],
      replacements: plans.map((plan, i) => describePlan(record.replacements[i] ?? '', plan)),
      pricePerHourBefore: sumPrices([price]),
      pricePerHourAfter: sumPrices(plans.map((p) => p.instanceTypes[0]?.priceUsdPerHour)),
    });
  }
  if (problems.length > 0) view.ports.logger.warn('expiration skipped', { problems: problems.slice(0, 10) });
  return expired;
}
