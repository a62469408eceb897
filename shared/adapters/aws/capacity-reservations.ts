import {
  type CapacityReservation,
  DescribeCapacityReservationsCommand,
  type EC2Client,
  type Filter,
} from '@aws-sdk/client-ec2';
import {
  type CapacityReservationLifecycle,
  type CapacityReservationSelectorTerm,
  type CapacityReservationStatus,
  CloudApiError,
} from '../../ports/cloud.ts';
import { call } from './errors.ts';

/**
 * A capacity block is `expiring` from this long before its end: EC2 starts reclaiming its
 * instances 30 minutes before the end, and the margin lets their pods move first.
 */
export const CAPACITY_BLOCK_EXPIRY_WINDOW_MS = 40 * 60_000;

/** One DescribeCapacityReservations query per term; id terms together. Only active reservations. */
function termQueries(
  terms: readonly CapacityReservationSelectorTerm[],
): { ids?: string[]; filters: Filter[] }[] {
  const active: Filter = { Name: 'state', Values: ['active'] };
  const queries: { ids?: string[]; filters: Filter[] }[] = [];
  const ids = terms.flatMap((t) => (t.id === undefined ? [] : [t.id]));
  if (ids.length > 0) queries.push({ ids, filters: [active] });
  for (const term of terms) {
    if (term.id !== undefined) continue;
    const filters: Filter[] = [active];
    if (term.ownerID !== undefined) filters.push({ Name: 'owner-id', Values: [term.ownerID] });
    if (term.instanceMatchCriteria !== undefined)
      filters.push({ Name: 'instance-match-criteria', Values: [term.instanceMatchCriteria] });
    for (const [key, value] of Object.entries(term.tags ?? {})) {
      filters.push(
        value === '*' ? { Name: 'tag-key', Values: [key] } : { Name: `tag:${key}`, Values: [value] },
      );
    }
    queries.push({ filters });
  }
  return queries;
}

async function describe(ec2: EC2Client, ids: string[] | undefined, filters: Filter[]) {
  const out: CapacityReservation[] = [];
  let nextToken: string | undefined;
  do {
    const page = await call('ec2:DescribeCapacityReservations', () =>
      ec2.send(
        new DescribeCapacityReservationsCommand({
          ...(ids === undefined ? {} : { CapacityReservationIds: ids }),
          Filters: filters,
          ...(nextToken ? { NextToken: nextToken } : {}),
        }),
      ),
    );
    out.push(...(page.CapacityReservations ?? []));
    nextToken = page.NextToken;
  } while (nextToken);
  return out;
}

/** A capacity block inside the window before its end. */
function isExpiringBlock(reservation: CapacityReservation, now: Date): boolean {
  const end = reservation.EndDate;
  return (
    reservation.ReservationType === 'capacity-block' &&
    end !== undefined &&
    end.getTime() - now.getTime() <= CAPACITY_BLOCK_EXPIRY_WINDOW_MS
  );
}

/** A reservation as the EC2NodeClass status records it, or undefined when EC2 left out a key field. */
export function toCapacityReservationStatus(
  reservation: CapacityReservation,
  now: Date,
): CapacityReservationStatus | undefined {
  const { CapacityReservationId: id, AvailabilityZone: zone, InstanceType: type } = reservation;
  if (id === undefined || zone === undefined || type === undefined) return undefined;
  const block = reservation.ReservationType === 'capacity-block';
  const end = reservation.EndDate;
  const expiring = isExpiringBlock(reservation, now);
  return {
    id,
    availabilityZone: zone,
    instanceType: type,
    instanceMatchCriteria: reservation.InstanceMatchCriteria === 'targeted' ? 'targeted' : 'open',
    ownerID: reservation.OwnerId ?? '',
    reservationType: block ? 'capacity-block' : 'default',
    state: expiring ? 'expiring' : 'active',
    ...(end === undefined ? {} : { endTime: end.toISOString().replace(/\.\d{3}Z$/, 'Z') }),
    ...(reservation.Interruptible === undefined ? {} : { interruptible: reservation.Interruptible }),
  };
}

/**
 * The active capacity reservations the terms select (terms ORed), sorted by id.
 * @throws CloudApiError.
 */
export async function resolveCapacityReservations(
  ec2: EC2Client,
  terms: readonly CapacityReservationSelectorTerm[],
  now: Date,
): Promise<CapacityReservationStatus[]> {
  const found = new Map<string, CapacityReservationStatus>();
  for (const query of termQueries(terms)) {
    for (const reservation of await describe(ec2, query.ids, query.filters)) {
      const status = toCapacityReservationStatus(reservation, now);
      if (status !== undefined) found.set(status.id, status);
    }
  }
  return [...found.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * Instances each reservation can still take now (AvailableInstanceCount), by id; a reservation
 * that is no longer active, or that EC2 no longer lists, can take none. One call.
 * @throws CloudApiError.
 */
export async function reservationAvailability(
  ec2: EC2Client,
  ids: readonly string[],
): Promise<Map<string, number>> {
  const out = new Map<string, number>(ids.map((id) => [id, 0]));
  if (ids.length === 0) return out;
  for (const reservation of await describe(ec2, [...ids], [])) {
    const id = reservation.CapacityReservationId;
    if (id === undefined || !out.has(id)) continue;
    out.set(id, reservation.State === 'active' ? (reservation.AvailableInstanceCount ?? 0) : 0);
  }
  return out;
}

/** EC2's code for a reservation id it does not know (any more). */
const RESERVATION_NOT_FOUND = 'InvalidCapacityReservationId.NotFound';

function toLifecycle(reservation: CapacityReservation, now: Date): CapacityReservationLifecycle | undefined {
  const id = reservation.CapacityReservationId;
  if (id === undefined) return undefined;
  const ec2State = reservation.State ?? 'unknown';
  const block = reservation.ReservationType === 'capacity-block';
  const end = reservation.EndDate;
  const expiring = isExpiringBlock(reservation, now);
  const state =
    ec2State === 'active'
      ? expiring
        ? 'expiring'
        : 'active'
      : ec2State === 'expired' || ec2State === 'cancelled'
        ? 'ended'
        : 'other';
  return {
    id,
    reservationType: block ? 'capacity-block' : 'default',
    state,
    ec2State,
    ...(end === undefined ? {} : { endTime: end.toISOString().replace(/\.\d{3}Z$/, 'Z') }),
  };
}

/**
 * What EC2 says now of each reservation, whatever its state, by id: one call, or one per id when
 * EC2 no longer knows one of them (that one is left out, as unknown).
 * @throws CloudApiError.
 */
export async function reservationLifecycles(
  ec2: EC2Client,
  ids: readonly string[],
  now: Date,
): Promise<Map<string, CapacityReservationLifecycle>> {
  const out = new Map<string, CapacityReservationLifecycle>();
  const unique = [...new Set(ids)].sort();
  if (unique.length === 0) return out;
  const add = (found: readonly CapacityReservation[]) => {
    for (const reservation of found) {
      const lifecycle = toLifecycle(reservation, now);
      if (lifecycle !== undefined && unique.includes(lifecycle.id)) out.set(lifecycle.id, lifecycle);
    }
  };
  try {
    add(await describe(ec2, unique, []));
  } catch (error) {
    if (!(error instanceof CloudApiError) || error.awsCode !== RESERVATION_NOT_FOUND) throw error;
    for (const id of unique) {
      try {
        add(await describe(ec2, [id], []));
      } catch (one) {
        if (!(one instanceof CloudApiError) || one.awsCode !== RESERVATION_NOT_FOUND) throw one;
      }
    }
  }
  return out;
}
