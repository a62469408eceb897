import { Label } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { CapacityReservationLifecycle, NodeClassResolver } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, NodeInfo } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import { nodesByProviderId } from '../state/node-index.ts';
import { handToTermination, type TerminationHandover } from '../termination/handover.ts';

// The capacity reservations NodeClaims run in, followed on the EC2NodeClass controller's schedule
// (it is the controller that reads reservations; Karpenter's capacityreservation.capacitytype and
// .expiration controllers): a node whose reservation ended (expired or cancelled) runs on as an
// on-demand instance, so it is relabelled as one rather than replaced; the nodes of a capacity
// block are deleted, through termination's graceful drain, once the block is in the window before
// its end in which EC2 reclaims its instances.

/** What to do about one NodeClaim (and its Nodes) because of its reservation. */
export type ReservationStep =
  | {
      /** The reservation ended: `karpenter.sh/capacity-type: on-demand`, reservation labels removed. */
      readonly kind: 'relabel';
      readonly claim: ClusterNodeClaim;
      readonly reservation: CapacityReservationLifecycle;
      /** The NodeClaim still says `reserved`. */
      readonly claimLabels: boolean;
      /** Registered Nodes of the NodeClaim that still say `reserved`. */
      readonly nodes: readonly string[];
    }
  | {
      /** A capacity block ends (or ended): the NodeClaim is deleted and drained. */
      readonly kind: 'expire';
      readonly claim: ClusterNodeClaim;
      readonly reservation: CapacityReservationLifecycle;
    };

/** Labels a node in a reservation carries and an on-demand node does not. */
const RESERVATION_LABELS = [
  Label.capacityReservationId,
  Label.capacityReservationType,
  Label.capacityReservationInterruptible,
] as const;

function reservedId(labels: Readonly<Record<string, string>>): string | undefined {
  return labels[Label.capacityType] === 'reserved' ? labels[Label.capacityReservationId] : undefined;
}

/** Nodes by providerID (nodesByProviderId). */
type NodesByProviderId = ReadonlyMap<string, readonly NodeInfo[]>;

/** The registered, live Nodes of the claim. */
function nodesOf(claim: ClusterNodeClaim, nodes: NodesByProviderId): NodeInfo[] {
  const providerId = claim.status.providerId;
  if (providerId === undefined) return [];
  // A Node not registered yet takes its labels from the NodeClaim when it registers.
  return (nodes.get(providerId) ?? []).filter((n) => !n.deleting && n.labels[Label.registered] === 'true');
}

/** The reservation the claim runs in: its own label, else a registered Node's that still says so. */
function reservationOf(claim: ClusterNodeClaim, nodes: NodesByProviderId): string | undefined {
  return (
    reservedId(claim.labels) ??
    nodesOf(claim, nodes)
      .map((n) => reservedId(n.labels))
      .find((id) => id)
  );
}

/** The ids of the reservations the live NodeClaims (and their Nodes) run in, sorted. */
export function reservationIdsInUse(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly NodeInfo[],
): string[] {
  const ids = new Set<string>();
  const index = nodesByProviderId(nodes);
  for (const claim of claims) {
    if (claim.deleting) continue;
    const id = reservationOf(claim, index);
    if (id !== undefined) ids.add(id);
  }
  return [...ids].sort();
}

/**
 * What to do about each live NodeClaim in a reservation, from what EC2 says of the reservations.
 * A reservation EC2 did not answer for is left alone (nothing is known of it), as is one that is
 * active or in another state. Pure.
 */
export function decideReservedNodeClaims(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly NodeInfo[],
  reservations: ReadonlyMap<string, CapacityReservationLifecycle>,
): ReservationStep[] {
  const steps: ReservationStep[] = [];
  const index = nodesByProviderId(nodes);
  for (const claim of [...claims].sort((a, b) => a.name.localeCompare(b.name))) {
    if (claim.deleting) continue;
    const id = reservationOf(claim, index);
    const reservation = id === undefined ? undefined : reservations.get(id);
    if (reservation === undefined) continue;
    const block = reservation.reservationType === 'capacity-block';
    if (reservation.state === 'expiring' || (block && reservation.state === 'ended')) {
      steps.push({ kind: 'expire', claim, reservation });
      continue;
    }
    if (reservation.state !== 'ended') continue;
    const claimLabels = reservedId(claim.labels) === reservation.id;
    const stale = nodesOf(claim, index)
      .filter((n) => reservedId(n.labels) === reservation.id)
      .map((n) => n.name)
      .sort();
    if (claimLabels || stale.length > 0) {
      steps.push({ kind: 'relabel', claim, reservation, claimLabels, nodes: stale });
    }
  }
  return steps;
}

/** The ports the reservation follow-up uses. */
export interface ReservedNodeClaimsPorts {
  readonly cluster: Cluster;
  readonly resolver: Pick<NodeClassResolver, 'capacityReservations'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /** Hands a deleted NodeClaim to termination at once; without it the termination sweep finds it. */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
}

export interface ReservedNodeClaimsResult {
  /** NodeClaims relabelled on-demand (with their Nodes). */
  readonly relabelled: readonly string[];
  /** NodeClaims deleted ahead of their capacity block's end. */
  readonly expired: readonly string[];
  /** The reservations could not be read; nothing was decided (the next pass tries again). */
  readonly failed?: unknown;
  /** NodeClaims whose relabel or deletion was refused (each logged); the next pass tries again. */
  readonly stepsFailed?: readonly { readonly nodeClaim: string; readonly error: unknown }[];
}

/**
 * One pass over the NodeClaims in capacity reservations: reads what EC2 says of their
 * reservations (one call), relabels the nodes of ended reservations on-demand and deletes the
 * nodes of ending capacity blocks. Each decision is logged once. An error reading the
 * reservations is logged and returned in `failed`, a refused write in `stepsFailed`; NodeClaims or
 * Nodes gone meanwhile are skipped.
 */
export async function reconcileReservedNodeClaims(
  ports: ReservedNodeClaimsPorts,
  input: { readonly nodeClaims: readonly ClusterNodeClaim[]; readonly nodes: readonly NodeInfo[] },
): Promise<ReservedNodeClaimsResult> {
  const ids = reservationIdsInUse(input.nodeClaims, input.nodes);
  if (ids.length === 0) return { relabelled: [], expired: [] };
  let reservations: ReadonlyMap<string, CapacityReservationLifecycle>;
  try {
    reservations = await ports.resolver.capacityReservations(ids, ports.clock.now());
  } catch (error) {
    ports.logger.error('capacity reservations not read', {
      reservations: ids.slice(0, 10),
      reservationCount: ids.length,
      error,
      retry: 'next pass',
    });
    return { relabelled: [], expired: [], failed: error };
  }
  const relabelled: string[] = [];
  const expired: string[] = [];
  const stepsFailed: { nodeClaim: string; error: unknown }[] = [];
  for (const listed of decideReservedNodeClaims(input.nodeClaims, input.nodes, reservations)) {
    // A write refused for one NodeClaim (a webhook, a conflict) affects only that NodeClaim: it is
    // logged and returned, and the other NodeClaims and the rest of the pass go on. So does a
    // NodeClaim or Node the API server cannot answer for (never taken for absent).
    try {
      const step = await confirmStep(ports, listed, input.nodes, reservations);
      if (step === undefined) continue;
      if (step.kind === 'relabel') {
        if ((await ignoreNotFound(relabel(ports, step).then(() => true))) !== undefined)
          relabelled.push(step.claim.name);
      } else if ((await ignoreNotFound(expire(ports, step).then(() => true))) !== undefined) {
        expired.push(step.claim.name);
      }
    } catch (error) {
      ports.logger.error('capacity reservation step not applied', {
        nodeClaim: listed.claim.name,
        step: listed.kind,
        capacityReservationId: listed.reservation.id,
        error,
        retry: 'next pass',
      });
      stepsFailed.push({ nodeClaim: listed.claim.name, error });
    }
  }
  return { relabelled, expired, ...(stepsFailed.length === 0 ? {} : { stepsFailed }) };
}

/**
 * The step for a listed NodeClaim decided again, with the same pure decision, on the NodeClaim as
 * the API server has it (read by name, with the listed uid) and its Nodes as the API server has
 * them (read by name: the NodeClaim's `status.nodeName` and the Nodes the list gave its
 * providerID), or undefined when the API server's objects call for none. The list may come from
 * the cluster summary, which anyone holding the shim's role can write: it chooses which NodeClaims
 * are looked at, never which are deleted or relabelled. A disagreement is logged once.
 * Costs one request for the NodeClaim and one per Node.
 * @throws ClusterApiError when a read fails (nothing is taken for absent).
 */
async function confirmStep(
  ports: ReservedNodeClaimsPorts,
  listed: ReservationStep,
  listedNodes: readonly NodeInfo[],
  reservations: ReadonlyMap<string, CapacityReservationLifecycle>,
): Promise<ReservationStep | undefined> {
  const fresh = await ports.cluster.nodeClaim(listed.claim.name);
  let again: ReservationStep | undefined;
  let why: string | undefined;
  if (fresh === undefined) why = 'the API server has no such NodeClaim';
  else if (fresh.uid !== listed.claim.uid) why = 'the API server has another NodeClaim of that name';
  else {
    const names = new Set(nodesOf(fresh, nodesByProviderId(listedNodes)).map((n) => n.name));
    if (fresh.status.nodeName !== undefined) names.add(fresh.status.nodeName);
    const read = await Promise.all([...names].sort().map((name) => ports.cluster.node(name)));
    const nodes = read.filter((n): n is NonNullable<typeof n> => n !== undefined);
    again = decideReservedNodeClaims([fresh], nodes, reservations)[0];
    if (!sameStep(listed, again)) {
      why =
        again === undefined
          ? `nothing to do as the API server has it (capacity type ${fresh.labels[Label.capacityType] ?? '(none)'}, ${fresh.deleting ? 'deleting' : 'not deleting'})`
          : `the API server's objects call for ${again.kind} instead`;
    }
  }
  if (why !== undefined) {
    ports.logger.warn('capacity reservation step not confirmed', {
      nodeClaim: listed.claim.name,
      listedStep: listed.kind,
      capacityReservationId: listed.reservation.id,
      ...(listed.kind === 'relabel' ? { listedNodes: listed.nodes } : {}),
      ...(again === undefined ? {} : { step: again.kind }),
      why,
    });
  }
  return again;
}

function sameStep(a: ReservationStep, b: ReservationStep | undefined): boolean {
  if (b === undefined || a.kind !== b.kind || a.reservation.id !== b.reservation.id) return false;
  if (a.kind === 'expire' || b.kind === 'expire') return true;
  return a.claimLabels === b.claimLabels && a.nodes.join() === b.nodes.join();
}

const onDemandLabels: Readonly<Record<string, string | null>> = {
  [Label.capacityType]: 'on-demand',
  ...Object.fromEntries(RESERVATION_LABELS.map((key) => [key, null])),
};

async function relabel(
  ports: ReservedNodeClaimsPorts,
  step: Extract<ReservationStep, { kind: 'relabel' }>,
): Promise<void> {
  const { claim, reservation } = step;
  if (step.claimLabels) await ports.cluster.patchNodeClaimMetadata(claim.name, { labels: onDemandLabels });
  for (const node of step.nodes) {
    // A Node deleted meanwhile has no labels left to fix.
    await ignoreNotFound(ports.cluster.patchNode(node, { labels: onDemandLabels }));
  }
  writeDecision(ports, {
    kind: 'reservationEnd',
    reason: 'capacity reservation ended',
    action: 'relabelOnDemand',
    ...nodeClaimFields(claim),
    capacityReservationId: reservation.id,
    reservationState: reservation.ec2State,
    ...(reservation.endTime === undefined ? {} : { endTime: reservation.endTime }),
    nodes: step.nodes,
  });
}

async function expire(
  ports: ReservedNodeClaimsPorts,
  step: Extract<ReservationStep, { kind: 'expire' }>,
): Promise<void> {
  const { claim, reservation } = step;
  // Termination drains the node (PDBs, terminationGracePeriod) and then terminates the instance.
  await ports.cluster.deleteNodeClaim(claim.name);
  const fields = nodeClaimFields(claim);
  const handedOver: TerminationHandover = await handToTermination(
    ports.requestTermination,
    claim.name,
    ports.logger,
    fields,
  );
  writeDecision(ports, {
    kind: 'reservationEnd',
    reason: 'capacity block ending',
    action: 'deleteNodeClaim',
    ...fields,
    capacityReservationId: reservation.id,
    reservationState: reservation.ec2State,
    ...(reservation.endTime === undefined ? {} : { endTime: reservation.endTime }),
    handedOver,
  });
}
