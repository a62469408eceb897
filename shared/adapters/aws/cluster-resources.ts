import {
  DeleteLaunchTemplateCommand,
  DescribeLaunchTemplatesCommand,
  type EC2Client,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import type { ClusterResources, OwnedLaunchTemplate } from '../../ports/cluster-resources.ts';
import type { Logger } from '../../runtime/logger.ts';
import { call, isNotFound, toCloudApiError } from './errors.ts';
import { isOwned, makeInstanceOps } from './instances.ts';

// What Flotilla launched for one cluster, for the clean-up when the cluster goes: its instances
// (DescribeInstances on the cluster's tags, each checked for ownership again) terminated a
// thousand at a time, and its launch templates (DescribeLaunchTemplates on the ownership tags)
// deleted one by one.

/** Instance ids per TerminateInstances call (EC2 takes up to 1000). */
const TERMINATE_BATCH = 1000;

export function makeClusterResources(options: {
  readonly ec2: EC2Client;
  readonly clusterName: string;
  readonly logger: Logger;
}): ClusterResources {
  const { ec2, clusterName } = options;
  const ops = makeInstanceOps(options);
  return {
    async instances() {
      // The ownership tags alone (not the other tags Flotilla also writes): an instance adopted
      // from Karpenter carries them too.
      return (
        await ops.describe({
          Filters: [
            { Name: `tag:${Tag.cluster(clusterName)}`, Values: ['owned'] },
            { Name: 'tag-key', Values: [Tag.nodePool] },
            { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] },
          ],
        })
      )
        .filter((i) => isOwned(i, clusterName))
        .map((i) => ({
          instanceId: i.instanceId,
          state: i.state,
          nodePool: i.tags[Tag.nodePool] ?? '',
          ...(i.nodeClaimName === undefined ? {} : { nodeClaim: i.nodeClaimName }),
        }));
    },
    async launchTemplates() {
      const found: OwnedLaunchTemplate[] = [];
      let nextToken: string | undefined;
      do {
        const token = nextToken;
        const page = await call('ec2:DescribeLaunchTemplates', () =>
          ec2.send(
            new DescribeLaunchTemplatesCommand({
              Filters: [
                { Name: `tag:${Tag.cluster(clusterName)}`, Values: ['owned'] },
                { Name: 'tag-key', Values: [Tag.nodePool] },
              ],
              ...(token === undefined ? {} : { NextToken: token }),
            }),
          ),
        );
        for (const t of page.LaunchTemplates ?? []) {
          if (t.LaunchTemplateId !== undefined) {
            found.push({ id: t.LaunchTemplateId, name: t.LaunchTemplateName ?? t.LaunchTemplateId });
          }
        }
        nextToken = page.NextToken;
      } while (nextToken !== undefined);
      return found;
    },
    async terminate(instanceIds) {
      for (let i = 0; i < instanceIds.length; i += TERMINATE_BATCH) {
        const batch = instanceIds.slice(i, i + TERMINATE_BATCH);
        await call('ec2:TerminateInstances', () =>
          ec2.send(new TerminateInstancesCommand({ InstanceIds: [...batch] })),
        );
      }
    },
    async deleteLaunchTemplate(id) {
      try {
        await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: id }));
      } catch (error) {
        if (!isNotFound(error)) throw toCloudApiError('ec2:DeleteLaunchTemplate', error);
      }
    },
  };
}
