import { Tag } from '../../apis/aws-tags.ts';
import type { CapacityType } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { CloudInstance, InstanceState } from '../../ports/cloud.ts';

// The memory cloud's instances as EC2 keeps them: records with ids from a seeded counter, their
// state over virtual time (pending for the boot delay, then running, until terminated), the
// CloudInstance each reads as, and what capacity reservations and partitions hold.

/** The tags the memory cloud launches with: the same as the AWS adapter's. */
export const MemoryTag = Tag;

/** An instance as the memory cloud stores it. */
export interface InstanceRecord {
  readonly instanceId: string;
  /** The partition of a `partition` placement group it runs in. */
  readonly partition?: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  readonly reservationId?: string;
  readonly reservationType?: 'default' | 'capacity-block';
  readonly reservationInterruptible?: boolean;
  readonly imageId?: string;
  readonly subnetId?: string;
  readonly securityGroupIds?: readonly string[];
  readonly placementGroup?: { readonly name: string; readonly id: string };
  readonly launchTimeMs: number;
  readonly privateDnsName: string;
  /** Its tags; `Name` changes once its node registers (Cloud.nameInstance). */
  tags: Readonly<Record<string, string>>;
  terminatedAtMs?: number;
}

const hex = (value: number, width: number) => value.toString(16).padStart(width, '0').slice(-width);

/** What the instance table is built from. */
export interface InstanceTableOptions {
  readonly clock: Clock;
  readonly clusterName: string;
  readonly seed: number;
  readonly bootDelayMs: number;
  readonly capacityReservations?: Readonly<Record<string, number>> | undefined;
}

/** The instances of one memory cloud, launched or added, terminated ones included. */
export function makeInstanceTable(options: InstanceTableOptions) {
  const { clock, clusterName, seed, bootDelayMs } = options;
  const records = new Map<string, InstanceRecord>();
  let counter = 0;

  function nextId(): { instanceId: string; privateDnsName: string } {
    counter += 1;
    return {
      instanceId: `i-0${hex(seed, 4)}${hex(counter, 12)}`,
      privateDnsName: `ip-10-${(seed % 256).toString()}-${Math.floor(counter / 256) % 256}-${counter % 256}.ec2.internal`,
    };
  }

  function stateOf(record: InstanceRecord, nowMs: number): InstanceState {
    if (record.terminatedAtMs !== undefined && record.terminatedAtMs <= nowMs) return 'terminated';
    return nowMs < record.launchTimeMs + bootDelayMs ? 'pending' : 'running';
  }

  function toInstance(record: InstanceRecord): CloudInstance {
    const tags = record.tags;
    return {
      instanceId: record.instanceId,
      providerId: `aws:///${record.zone}/${record.instanceId}`,
      instanceType: record.instanceType,
      zone: record.zone,
      capacityType: record.capacityType,
      ...(record.reservationId === undefined
        ? {}
        : {
            capacityReservationId: record.reservationId,
            capacityReservationType: record.reservationType ?? 'default',
            capacityReservationInterruptible: record.reservationInterruptible === true,
          }),
      state: stateOf(record, clock.now().getTime()),
      ...(record.imageId === undefined ? {} : { imageId: record.imageId }),
      ...(record.subnetId === undefined ? {} : { subnetId: record.subnetId }),
      ...(record.securityGroupIds === undefined ? {} : { securityGroupIds: record.securityGroupIds }),
      ...(record.placementGroup === undefined
        ? {}
        : {
            placementGroup: {
              ...record.placementGroup,
              ...(record.partition === undefined ? {} : { partition: record.partition }),
            },
          }),
      launchTime: new Date(record.launchTimeMs),
      privateDnsName: record.privateDnsName,
      ...(tags[MemoryTag.nodeClaim] === undefined ? {} : { nodeClaimName: tags[MemoryTag.nodeClaim] }),
      ...(tags[MemoryTag.nodePool] ? { nodePoolName: tags[MemoryTag.nodePool] } : {}),
      ...(tags[MemoryTag.nodeClass] === undefined ? {} : { nodeClassName: tags[MemoryTag.nodeClass] }),
      tags: { ...tags },
    };
  }

  const isOwned = (record: InstanceRecord) =>
    record.tags[MemoryTag.cluster(clusterName)] === 'owned' && record.tags[MemoryTag.nodePool] !== undefined;

  function liveByNodeClaim(nodeClaimName: string): InstanceRecord | undefined {
    const nowMs = clock.now().getTime();
    for (const record of records.values()) {
      if (
        record.tags[MemoryTag.nodeClaim] === nodeClaimName &&
        record.tags[MemoryTag.clusterName] === clusterName &&
        stateOf(record, nowMs) !== 'terminated'
      ) {
        return record;
      }
    }
    return undefined;
  }

  /**
   * Instances a capacity reservation can still take: what it holds less its live instances;
   * undefined for a reservation the cloud was not told about (an offering given as it is).
   */
  function reservationRoom(reservationId: string): number | undefined {
    const held = options.capacityReservations?.[reservationId];
    if (held === undefined) return undefined;
    const nowMs = clock.now().getTime();
    let used = 0;
    for (const r of records.values())
      if (r.reservationId === reservationId && stateOf(r, nowMs) !== 'terminated') used += 1;
    return Math.max(0, held - used);
  }

  /** Where EC2 puts an instance when it chooses the partition: the one with the fewest, lowest first. */
  function leastUsedPartition(groupId: string | undefined, partitions: readonly string[]): string {
    const nowMs = clock.now().getTime();
    const count = new Map(partitions.map((p) => [p, 0]));
    for (const r of records.values()) {
      if (r.placementGroup?.id !== groupId || r.partition === undefined) continue;
      if (stateOf(r, nowMs) === 'terminated') continue;
      count.set(r.partition, (count.get(r.partition) ?? 0) + 1);
    }
    return [...count.entries()].sort((a, b) => a[1] - b[1] || Number(a[0]) - Number(b[0]))[0]?.[0] ?? '1';
  }

  function live(instanceId: string): InstanceRecord | undefined {
    const record = records.get(instanceId);
    return record === undefined || stateOf(record, clock.now().getTime()) === 'terminated'
      ? undefined
      : record;
  }

  return { records, nextId, toInstance, isOwned, live, liveByNodeClaim, reservationRoom, leastUsedPartition };
}

/** The instance table a memory cloud and its launches share. */
export type InstanceTable = ReturnType<typeof makeInstanceTable>;
