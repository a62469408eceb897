import {
  CreateTagsCommand,
  DescribeInstancesCommand,
  type EC2Client,
  type Filter,
  type Instance,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import type { CapacityType } from '../../core/index.ts';
import { type CloudInstance, InstanceNotOwnedError, type InstanceState } from '../../ports/cloud.ts';
import type { Logger } from '../../runtime/logger.ts';
import { call, isNotFound, toCloudApiError } from './errors.ts';

/** States of instances a cluster still owns (terminated ones are gone). */
const LIVE_STATES = ['pending', 'running', 'stopping', 'stopped', 'shutting-down'];

export function toCloudInstance(instance: Instance): CloudInstance {
  const tags = Object.fromEntries(
    (instance.Tags ?? []).flatMap((t) => (t.Key ? [[t.Key, t.Value ?? '']] : [])),
  );
  const zone = instance.Placement?.AvailabilityZone ?? '';
  const id = instance.InstanceId ?? '';
  const capacityType: CapacityType =
    instance.InstanceLifecycle === 'spot'
      ? 'spot'
      : instance.CapacityReservationId
        ? 'reserved'
        : 'on-demand';
  return {
    instanceId: id,
    providerId: `aws:///${zone}/${id}`,
    instanceType: instance.InstanceType ?? '',
    zone,
    capacityType,
    ...(instance.CapacityReservationId
      ? {
          capacityReservationId: instance.CapacityReservationId,
          capacityReservationType:
            instance.InstanceLifecycle === 'capacity-block' ? 'capacity-block' : 'default',
          capacityReservationInterruptible:
            instance.InstanceLifecycle === 'interruptible-capacity-reservation',
        }
      : {}),
    state: (instance.State?.Name ?? 'pending') as InstanceState,
    ...(instance.ImageId === undefined ? {} : { imageId: instance.ImageId }),
    ...(instance.SubnetId === undefined ? {} : { subnetId: instance.SubnetId }),
    ...(instance.SecurityGroups === undefined
      ? {}
      : { securityGroupIds: instance.SecurityGroups.flatMap((g) => (g.GroupId ? [g.GroupId] : [])) }),
    ...(instance.Placement?.GroupName || instance.Placement?.GroupId
      ? {
          placementGroup: {
            ...(instance.Placement.GroupName ? { name: instance.Placement.GroupName } : {}),
            ...(instance.Placement.GroupId ? { id: instance.Placement.GroupId } : {}),
            ...(instance.Placement.PartitionNumber === undefined
              ? {}
              : { partition: String(instance.Placement.PartitionNumber) }),
          },
        }
      : {}),
    ...(instance.LaunchTime === undefined ? {} : { launchTime: instance.LaunchTime }),
    ...(instance.PrivateDnsName ? { privateDnsName: instance.PrivateDnsName } : {}),
    ...(tags[Tag.nodeClaim] === undefined ? {} : { nodeClaimName: tags[Tag.nodeClaim] }),
    // Empty on the instance of a standalone NodeClaim.
    ...(tags[Tag.nodePool] ? { nodePoolName: tags[Tag.nodePool] } : {}),
    ...(tags[Tag.nodeClass] === undefined ? {} : { nodeClassName: tags[Tag.nodeClass] }),
    tags,
  };
}

/** True when Flotilla launched the instance for this cluster (the tags the IAM policy scopes on). */
export function isOwned(instance: CloudInstance, clusterName: string): boolean {
  return instance.tags[Tag.cluster(clusterName)] === 'owned' && instance.tags[Tag.nodePool] !== undefined;
}

export interface InstanceOps {
  /** DescribeInstances as asked, every page. */
  describe(input: { InstanceIds?: string[]; Filters?: Filter[] }): Promise<CloudInstance[]>;
  get(instanceId: string): Promise<CloudInstance | undefined>;
  list(): Promise<CloudInstance[]>;
  /** The live instance launched for a NodeClaim, if any. */
  findByNodeClaim(nodeClaimName: string): Promise<CloudInstance | undefined>;
  delete(instanceId: string): Promise<void>;
  /** Tags the instance `Name: <nodeName>`; one already gone counts as named. */
  name(instanceId: string, nodeName: string): Promise<void>;
}

export function makeInstanceOps(options: {
  readonly ec2: EC2Client;
  readonly clusterName: string;
  readonly logger: Logger;
}): InstanceOps {
  const { ec2, clusterName, logger } = options;

  async function describe(input: { InstanceIds?: string[]; Filters?: Filter[] }): Promise<CloudInstance[]> {
    const out: CloudInstance[] = [];
    let nextToken: string | undefined;
    do {
      const page = await call('ec2:DescribeInstances', () =>
        ec2.send(new DescribeInstancesCommand({ ...input, ...(nextToken ? { NextToken: nextToken } : {}) })),
      );
      for (const reservation of page.Reservations ?? []) {
        for (const instance of reservation.Instances ?? []) out.push(toCloudInstance(instance));
      }
      nextToken = page.NextToken;
    } while (nextToken);
    return out;
  }

  const ownedFilters = (): Filter[] => [
    { Name: `tag:${Tag.clusterName}`, Values: [clusterName] },
    { Name: 'tag-key', Values: [Tag.nodePool] },
    { Name: 'tag-key', Values: [Tag.nodeClass] },
    { Name: 'instance-state-name', Values: LIVE_STATES },
  ];

  async function get(instanceId: string): Promise<CloudInstance | undefined> {
    try {
      const [instance] = await describe({ InstanceIds: [instanceId] });
      return instance === undefined || instance.state === 'terminated' ? undefined : instance;
    } catch (error) {
      if (isNotFound(error) || isNotFound((error as { cause?: unknown }).cause)) return undefined;
      throw error;
    }
  }

  return {
    describe,
    get,
    list: () => describe({ Filters: ownedFilters() }),
    async findByNodeClaim(nodeClaimName) {
      const found = await describe({
        Filters: [
          { Name: `tag:${Tag.nodeClaim}`, Values: [nodeClaimName] },
          { Name: `tag:${Tag.clusterName}`, Values: [clusterName] },
          // Shutting down too: termination waits for it to be gone, as for an instance it knew.
          {
            Name: 'instance-state-name',
            Values: ['pending', 'running', 'shutting-down', 'stopping', 'stopped'],
          },
        ],
      });
      return found[0];
    },
    async name(instanceId, nodeName) {
      try {
        await call('ec2:CreateTags', () =>
          ec2.send(
            new CreateTagsCommand({ Resources: [instanceId], Tags: [{ Key: Tag.name, Value: nodeName }] }),
          ),
        );
      } catch (error) {
        if (isNotFound(error) || isNotFound((error as { cause?: unknown }).cause)) return;
        throw error;
      }
    },
    async delete(instanceId) {
      const instance = await get(instanceId);
      if (instance === undefined) {
        logger.info('instance already gone', { instanceId });
        return;
      }
      if (!isOwned(instance, clusterName)) throw new InstanceNotOwnedError(instanceId, clusterName);
      if (instance.state === 'shutting-down') return;
      try {
        // The termination decision (and its line) is the use case's.
        await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
      } catch (error) {
        if (isNotFound(error)) return;
        throw toCloudApiError('ec2:TerminateInstances', error);
      }
    },
  };
}
