import type { NodeClaimPlan, Offering } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import type { DisruptDecision, DisruptedNode, ReplacementNode } from '../decisions/disruption.ts';
import { nodeClaimFields } from '../decisions/lifecycle.ts';
import { poolInstanceTypes, type SchedulingInput } from '../state/cluster-state.ts';
import type { CommandRecord } from '../state/command-record.ts';
import type { CommandMethod, DisruptionCommand } from './method.ts';

// How a disruption decision line names its nodes and prices: candidates with their instance type,
// capacity type and offering price, replacements with their cheapest candidates, and the cost per
// hour before and after; a price the catalog only assumes is marked `priceAssumed`. Pure.

/** A NodeClaim's running offering, from the instance types of its class. */
function offeringFrom(input: SchedulingInput | undefined, claim: ClusterNodeClaim): Offering | undefined {
  const types =
    input === undefined ? undefined : poolInstanceTypes(input, claim.nodePoolName, claim.nodeClassRef.name);
  const type = types?.find((t) => t.name === claim.labels['node.kubernetes.io/instance-type']);
  return type?.offerings.find(
    (o) =>
      o.zone === claim.labels['topology.kubernetes.io/zone'] &&
      o.capacityType === claim.labels['karpenter.sh/capacity-type'],
  );
}

/** A NodeClaim's running offering price in USD per hour, from the instance types of its class. */
export function priceFrom(input: SchedulingInput | undefined, claim: ClusterNodeClaim): number | undefined {
  return offeringFrom(input, claim)?.priceUsdPerHour;
}

/** Whether the catalog only assumes the price of a NodeClaim's running offering. */
export function priceAssumedFrom(input: SchedulingInput | undefined, claim: ClusterNodeClaim): boolean {
  return offeringFrom(input, claim)?.priceAssumed === true;
}

/**
 * Whether a plan's cheapest price is one the catalog only assumes: every offering of its cheapest
 * instance type at that price is assumed (a published price equal to it makes it known).
 */
function planPriceAssumed(input: SchedulingInput | undefined, plan: NodeClaimPlan): boolean {
  const cheapest = plan.instanceTypes[0];
  if (cheapest === undefined) return false;
  const type =
    input === undefined
      ? undefined
      : poolInstanceTypes(input, plan.nodePoolName, plan.nodeClassName).find((t) => t.name === cheapest.name);
  const atPrice = (type?.offerings ?? []).filter((o) => o.priceUsdPerHour === cheapest.priceUsdPerHour);
  return atPrice.length > 0 && atPrice.every((o) => o.priceAssumed === true);
}

/** A candidate NodeClaim as a decision names it. */
export function describeClaim(
  claim: ClusterNodeClaim,
  nodeName: string | undefined,
  price: number | undefined,
  priceAssumed = false,
): DisruptedNode {
  const type = claim.labels['node.kubernetes.io/instance-type'];
  const capacityType = claim.labels['karpenter.sh/capacity-type'];
  return {
    ...nodeClaimFields(claim),
    node: nodeName ?? claim.status.nodeName ?? '',
    ...(type === undefined ? {} : { instanceType: type }),
    ...(capacityType === 'spot' || capacityType === 'on-demand' || capacityType === 'reserved'
      ? { capacityType }
      : {}),
    ...(price === undefined ? {} : { pricePerHour: price }),
    ...(price !== undefined && priceAssumed ? { priceAssumed: true } : {}),
  };
}

/** A planned replacement: its cheapest three instance types and the cheapest price. */
export function describePlan(
  name: string,
  plan: NodeClaimPlan,
  input: SchedulingInput | undefined,
): ReplacementNode {
  const cheapest = plan.instanceTypes[0];
  return {
    nodeClaim: name,
    nodePool: plan.nodePoolName,
    instanceTypes: plan.instanceTypes.slice(0, 3).map((t) => t.name),
    ...(cheapest === undefined ? {} : { pricePerHour: cheapest.priceUsdPerHour }),
    ...(planPriceAssumed(input, plan) ? { priceAssumed: true } : {}),
  };
}

/** A replacement NodeClaim as it stands (its launched type and price, once launched). */
function describeReplacementClaim(
  name: string,
  claim: ClusterNodeClaim | undefined,
  input: SchedulingInput | undefined,
): ReplacementNode {
  const type = claim?.labels['node.kubernetes.io/instance-type'];
  const price = claim === undefined ? undefined : priceFrom(input, claim);
  return {
    nodeClaim: name,
    nodePool: claim?.nodePoolName ?? '',
    instanceTypes: type === undefined ? [] : [type],
    ...(price === undefined ? {} : { pricePerHour: price }),
    ...(price !== undefined && claim !== undefined && priceAssumedFrom(input, claim)
      ? { priceAssumed: true }
      : {}),
  };
}

/** USD per hour, rounded to 1/10,000; unknown prices count as 0. */
export function sumPrices(values: readonly (number | undefined)[]): number {
  return Math.round(values.reduce<number>((s, v) => s + (v ?? 0), 0) * 10_000) / 10_000;
}

/** The decision of a new command, from what the method proposed. */
export function decisionForCommand(
  command: DisruptionCommand,
  input: SchedulingInput | undefined,
  id: string,
  names: readonly string[],
  outcome: DisruptDecision['outcome'],
  why?: string,
): DisruptDecision {
  return {
    kind: 'disrupt',
    reason: command.reason,
    method: command.method.name,
    action: command.replacements.length === 0 ? 'delete' : 'replace',
    outcome,
    commandId: id,
    candidates: command.candidates.map((c) =>
      describeClaim(c.nodeClaim, c.node.name, c.pricePerHour, priceAssumedFrom(input, c.nodeClaim)),
    ),
    replacements: command.replacements.map((plan, i) => describePlan(names[i] ?? '', plan, input)),
    pricePerHourBefore: sumPrices(command.candidates.map((c) => c.pricePerHour)),
    pricePerHourAfter: sumPrices(command.replacements.map((p) => p.instanceTypes[0]?.priceUsdPerHour)),
    ...(why === undefined ? {} : { why }),
    ...(command.policy === undefined ? {} : { policy: command.policy }),
    ...(command.podsMoved === undefined ? {} : { podsMoved: command.podsMoved }),
  };
}

/** The decision of a recorded command (of `method`, the one its record names) as a later pass finds it. */
export function decisionForRecord(
  record: CommandRecord,
  method: CommandMethod,
  live: readonly ClusterNodeClaim[],
  claims: ReadonlyMap<string, ClusterNodeClaim>,
  input: SchedulingInput | undefined,
  outcome: DisruptDecision['outcome'],
  why?: string,
): DisruptDecision {
  const replacements = record.replacements.map((n) => describeReplacementClaim(n, claims.get(n), input));
  return {
    kind: 'disrupt',
    reason: record.reason,
    method: method.name,
    action: record.replacements.length === 0 ? 'delete' : 'replace',
    outcome,
    commandId: record.id,
    candidates: live.map((c) => describeClaim(c, undefined, priceFrom(input, c), priceAssumedFrom(input, c))),
    replacements,
    pricePerHourBefore: sumPrices(live.map((c) => priceFrom(input, c))),
    pricePerHourAfter: sumPrices(replacements.map((r) => r.pricePerHour)),
    ...(why === undefined ? {} : { why }),
  };
}
