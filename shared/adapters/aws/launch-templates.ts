import { createHash } from 'node:crypto';
import {
  type ConnectionTrackingSpecificationRequest,
  CreateLaunchTemplateCommand,
  CreateTagsCommand,
  DeleteLaunchTemplateCommand,
  DescribeLaunchTemplatesCommand,
  DescribeTagsCommand,
  type EC2Client,
  type LaunchTemplate,
  type LaunchTemplateBlockDeviceMappingRequest,
  type RequestLaunchTemplateData,
} from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import type { AmiFamily, BlockDeviceMapping, EC2NodeClass } from '../../ports/cloud.ts';
import type { Logger } from '../../runtime/logger.ts';
import { awsErrorCode, call, isNotFound, toCloudApiError } from './errors.ts';
import type { IpFamily } from './user-data.ts';

const GiB = 1024 ** 3;

/** Refresh Tag.lastUsed at most this often, so reuse rarely costs a CreateTags call. */
const TOUCH_INTERVAL_SECONDS = 600;

/** Default block devices per AMI family (Karpenter's resolver defaults). */
export function defaultBlockDeviceMappings(family: AmiFamily | undefined): BlockDeviceMapping[] {
  const gp3 = (sizeGiB: number) => ({
    volumeSizeBytes: sizeGiB * GiB,
    volumeType: 'gp3' as const,
    encrypted: true,
    deleteOnTermination: true,
  });
  switch (family) {
    case 'Bottlerocket':
      // The OS volume, and the data volume that holds images and ephemeral storage.
      return [
        { deviceName: '/dev/xvda', ebs: gp3(4) },
        { deviceName: '/dev/xvdb', rootVolume: true, ebs: gp3(20) },
      ];
    case 'Windows2019':
    case 'Windows2022':
    case 'Windows2025':
      return [{ deviceName: '/dev/sda1', rootVolume: true, ebs: gp3(50) }];
    case 'Custom':
      // The volumes the AMI itself defines.
      return [];
    default:
      return [{ deviceName: '/dev/xvda', rootVolume: true, ebs: gp3(20) }];
  }
}

function toBlockDevice(mapping: BlockDeviceMapping): LaunchTemplateBlockDeviceMappingRequest {
  const ebs = mapping.ebs;
  return {
    DeviceName: mapping.deviceName,
    ...(ebs === undefined
      ? {}
      : {
          Ebs: {
            ...(ebs.volumeSizeBytes === undefined
              ? {}
              : { VolumeSize: Math.ceil(ebs.volumeSizeBytes / GiB) }),
            ...(ebs.volumeType === undefined ? {} : { VolumeType: ebs.volumeType }),
            ...(ebs.encrypted === undefined ? {} : { Encrypted: ebs.encrypted }),
            ...(ebs.iops === undefined ? {} : { Iops: ebs.iops }),
            ...(ebs.throughput === undefined ? {} : { Throughput: ebs.throughput }),
            ...(ebs.kmsKeyID === undefined ? {} : { KmsKeyId: ebs.kmsKeyID }),
            ...(ebs.snapshotID === undefined ? {} : { SnapshotId: ebs.snapshotID }),
            ...(ebs.deleteOnTermination === undefined
              ? {}
              : { DeleteOnTermination: ebs.deleteOnTermination }),
          },
        }),
  };
}

export interface LaunchTemplateInput {
  readonly nodeClass: EC2NodeClass;
  readonly family: AmiFamily | undefined;
  readonly imageId: string;
  /** Plain text; base64-encoded here. */
  readonly userData: string;
  /** Tags on the template itself (cluster, NodePool, NodeClass, NodeClass tags). */
  readonly tags: Readonly<Record<string, string>>;
  /** The cluster's IP family: `ipPrefixCount` asks for IPv6 prefixes on an IPv6 cluster. Default `ipv4`. */
  readonly ipFamily?: IpFamily;
  /** The partition (`1`…N) of the class's `partition` placement group the launch targets. */
  readonly partition?: string;
  /** The capacity reservation a reserved launch targets; `interruptible` for an interruptible one. */
  readonly capacityReservation?: {
    readonly id: string;
    readonly type: 'default' | 'capacity-block';
    readonly interruptible?: boolean;
  };
  /**
   * The NodeClaim requests `eks.amazonaws.com/nitro-sandbox`: Nitro Enclaves are enabled, as
   * Karpenter v1.14 enables them. @default false
   */
  readonly enclaves?: boolean;
}

/** The launch template data for one distinct NodeClass configuration. */
export function launchTemplateData(input: LaunchTemplateInput): RequestLaunchTemplateData {
  const { spec, status } = input.nodeClass;
  const groups = (status?.securityGroups ?? []).map((g) => g.id);
  const mappings = spec.blockDeviceMappings ?? defaultBlockDeviceMappings(input.family);
  const placementGroupId = status?.placementGroups?.[0]?.id;
  const nestedVirtualization = spec.cpuOptions?.nestedVirtualization;
  return {
    ImageId: input.imageId,
    // A Custom AMI without user data launches with none.
    ...(input.userData === '' ? {} : { UserData: Buffer.from(input.userData, 'utf8').toString('base64') }),
    ...(status?.instanceProfile === undefined
      ? {}
      : { IamInstanceProfile: { Name: status.instanceProfile } }),
    ...(mappings.length === 0 ? {} : { BlockDeviceMappings: mappings.map(toBlockDevice) }),
    MetadataOptions: {
      HttpEndpoint: spec.metadataOptions.httpEndpoint,
      HttpProtocolIpv6: spec.metadataOptions.httpProtocolIPv6,
      HttpPutResponseHopLimit: spec.metadataOptions.httpPutResponseHopLimit,
      HttpTokens: spec.metadataOptions.httpTokens,
    },
    Monitoring: { Enabled: spec.detailedMonitoring ?? false },
    ...networkSettings(spec, groups, input.ipFamily ?? 'ipv4'),
    ...(placementGroupId === undefined
      ? {}
      : {
          Placement: {
            GroupId: placementGroupId,
            ...(input.partition === undefined ? {} : { PartitionNumber: Number(input.partition) }),
          },
        }),
    ...(nestedVirtualization === undefined
      ? {}
      : { CpuOptions: { NestedVirtualization: nestedVirtualization } }),
    // Said whenever the class sets it or the NodeClaim asks for enclaves (Karpenter always says
    // it): part of the data the template's name hashes, so an enclave template is never shared
    // with one without. Left out otherwise, which EC2 launches without enclaves too, so existing
    // templates keep their names.
    ...(spec.enclaveOptions === undefined && input.enclaves !== true
      ? {}
      : { EnclaveOptions: { Enabled: spec.enclaveOptions?.enabled === true || input.enclaves === true } }),
    ...(input.capacityReservation === undefined
      ? {}
      : {
          CapacityReservationSpecification: {
            CapacityReservationTarget: { CapacityReservationId: input.capacityReservation.id },
          },
          ...(input.capacityReservation.type === 'capacity-block'
            ? { InstanceMarketOptions: { MarketType: 'capacity-block' as const } }
            : input.capacityReservation.interruptible === true
              ? { InstanceMarketOptions: { MarketType: 'interruptible-capacity-reservation' as const } }
              : {}),
        }),
    // The network interface EC2 creates with each instance carries the ownership tags too (the
    // fleet's own TagSpecifications cannot name it), as the launch policy requires at creation.
    TagSpecifications: [
      {
        ResourceType: 'network-interface',
        Tags: Object.entries(input.tags).map(([Key, Value]) => ({ Key, Value })),
      },
    ],
  };
}

/** `spec.connectionTracking` as EC2 takes it, or undefined when the class sets no timeout. */
function connectionTrackingSpecification(
  spec: EC2NodeClass['spec'],
): ConnectionTrackingSpecificationRequest | undefined {
  const tracking = spec.connectionTracking;
  if (tracking === undefined) return undefined;
  const out: ConnectionTrackingSpecificationRequest = {
    ...(tracking.tcpEstablishedTimeout === undefined
      ? {}
      : { TcpEstablishedTimeout: tracking.tcpEstablishedTimeout }),
    ...(tracking.udpStreamTimeout === undefined ? {} : { UdpStreamTimeout: tracking.udpStreamTimeout }),
    ...(tracking.udpTimeout === undefined ? {} : { UdpTimeout: tracking.udpTimeout }),
  };
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * The security groups, or the network interfaces that carry them: those of
 * `spec.networkInterfaces` (EFA), else one primary interface when a public IP choice, IP
 * prefixes or connection-tracking timeouts are asked for. The primary interface (card 0, device 0)
 * carries the public IP choice and the prefixes: IPv4 prefixes, or on an IPv6 cluster IPv6
 * prefixes next to the interface's primary IPv6 address (as Karpenter asks for them). Every
 * interface but an `efa-only` one carries the connection-tracking timeouts.
 */
function networkSettings(
  spec: EC2NodeClass['spec'],
  groups: readonly string[],
  ipFamily: IpFamily,
): Pick<RequestLaunchTemplateData, 'SecurityGroupIds' | 'NetworkInterfaces'> {
  const listed = spec.networkInterfaces ?? [];
  const tracking = connectionTrackingSpecification(spec);
  if (
    listed.length === 0 &&
    spec.associatePublicIPAddress === undefined &&
    spec.ipPrefixCount === undefined &&
    tracking === undefined
  )
    return { SecurityGroupIds: [...groups] };
  const interfaces =
    listed.length > 0 ? listed : [{ networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' }];
  return {
    NetworkInterfaces: interfaces.map((n) => {
      const primary = n.networkCardIndex === 0 && n.deviceIndex === 0;
      return {
        ...(listed.length > 0 ? { NetworkCardIndex: n.networkCardIndex } : {}),
        DeviceIndex: n.deviceIndex,
        ...(listed.length > 0 ? { InterfaceType: n.interfaceType, DeleteOnTermination: true } : {}),
        ...(primary && spec.associatePublicIPAddress !== undefined
          ? { AssociatePublicIpAddress: spec.associatePublicIPAddress }
          : {}),
        ...(primary && spec.ipPrefixCount !== undefined
          ? ipFamily === 'ipv6'
            ? { Ipv6PrefixCount: spec.ipPrefixCount }
            : { Ipv4PrefixCount: spec.ipPrefixCount }
          : {}),
        ...(primary && ipFamily === 'ipv6' ? { PrimaryIpv6: true, Ipv6AddressCount: 1 } : {}),
        ...(tracking === undefined || n.interfaceType === 'efa-only'
          ? {}
          : { ConnectionTrackingSpecification: tracking }),
        Groups: [...groups],
      };
    }),
  };
}

/** `flotilla/<cluster>/<hash of data and tags>`: equal configurations share one template. */
export function launchTemplateName(
  clusterName: string,
  data: RequestLaunchTemplateData,
  tags: Readonly<Record<string, string>>,
): string {
  const sortedTags = Object.fromEntries(Object.entries(tags).sort(([a], [b]) => a.localeCompare(b)));
  const hash = createHash('sha256')
    .update(JSON.stringify({ clusterName, data, tags: sortedTags }))
    .digest('hex');
  return `flotilla/${clusterName}/${hash.slice(0, 20)}`;
}

export interface LaunchTemplateStore {
  /** Finds the template by name or creates it; returns its id and name. */
  ensure(input: LaunchTemplateInput): Promise<{ readonly id: string; readonly name: string }>;
  /** Deletes this cluster's templates not used for `maxIdleSeconds`; returns the names deleted. */
  deleteUnused(maxIdleSeconds: number): Promise<string[]>;
}

export function makeLaunchTemplateStore(options: {
  readonly ec2: EC2Client;
  readonly clusterName: string;
  readonly now: () => Date;
  readonly logger: Logger;
}): LaunchTemplateStore {
  const { ec2, clusterName, logger } = options;
  const nowSeconds = () => Math.floor(options.now().getTime() / 1000);

  async function find(name: string): Promise<LaunchTemplate | undefined> {
    try {
      const result = await ec2.send(new DescribeLaunchTemplatesCommand({ LaunchTemplateNames: [name] }));
      return result.LaunchTemplates?.[0];
    } catch (error) {
      if (isNotFound(error) || awsErrorCode(error) === 'InvalidLaunchTemplateName.NotFoundException')
        return undefined;
      throw toCloudApiError('ec2:DescribeLaunchTemplates', error);
    }
  }

  return {
    async ensure(input) {
      const data = launchTemplateData(input);
      const name = launchTemplateName(clusterName, data, input.tags);
      const existing = await find(name);
      if (existing?.LaunchTemplateId) {
        const lastUsed = Number(existing.Tags?.find((t) => t.Key === Tag.lastUsed)?.Value ?? '0');
        if (nowSeconds() - lastUsed > TOUCH_INTERVAL_SECONDS) {
          await call('ec2:CreateTags', () =>
            ec2.send(
              new CreateTagsCommand({
                Resources: [existing.LaunchTemplateId ?? ''],
                Tags: [{ Key: Tag.lastUsed, Value: String(nowSeconds()) }],
              }),
            ),
          );
        }
        return { id: existing.LaunchTemplateId, name };
      }
      const tags = { ...input.tags, [Tag.lastUsed]: String(nowSeconds()) };
      try {
        const created = await ec2.send(
          new CreateLaunchTemplateCommand({
            LaunchTemplateName: name,
            LaunchTemplateData: data,
            TagSpecifications: [
              {
                ResourceType: 'launch-template',
                Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
              },
            ],
          }),
        );
        logger.info('launch template created', { launchTemplate: name, imageId: input.imageId });
        return { id: created.LaunchTemplate?.LaunchTemplateId ?? '', name };
      } catch (error) {
        // Another launch created it first: use theirs.
        if (awsErrorCode(error) === 'InvalidLaunchTemplateName.AlreadyExistsException') {
          const raced = await find(name);
          if (raced?.LaunchTemplateId) return { id: raced.LaunchTemplateId, name };
        }
        throw toCloudApiError('ec2:CreateLaunchTemplate', error);
      }
    },

    /**
     * Deletes this cluster's templates unused for `maxIdleSeconds`: Flotilla's by their last-use
     * tag, and Karpenter's (`karpenter.k8s.aws/<hash>`, after a takeover; Flotilla never launches
     * from them) from their creation. Templates of other makers are left alone.
     */
    async deleteUnused(maxIdleSeconds) {
      const deleted: string[] = [];
      let nextToken: string | undefined;
      const templates: LaunchTemplate[] = [];
      do {
        const page = await call('ec2:DescribeLaunchTemplates', () =>
          ec2.send(
            new DescribeLaunchTemplatesCommand({
              // Flotilla's templates carry their last use; Karpenter's (a cluster taken over) do not.
              Filters: [{ Name: 'tag:eks:eks-cluster-name', Values: [clusterName] }],
              ...(nextToken ? { NextToken: nextToken } : {}),
            }),
          ),
        );
        templates.push(...(page.LaunchTemplates ?? []));
        nextToken = page.NextToken;
      } while (nextToken);
      // Read the last-use times with DescribeTags: it always reflects CreateTags (moto's
      // DescribeLaunchTemplates keeps the tags a template was created with).
      const lastUsedById = new Map<string, number>();
      let tagToken: string | undefined;
      do {
        const page = await call('ec2:DescribeTags', () =>
          ec2.send(
            new DescribeTagsCommand({
              Filters: [
                { Name: 'resource-type', Values: ['launch-template'] },
                { Name: 'key', Values: [Tag.lastUsed] },
              ],
              ...(tagToken ? { NextToken: tagToken } : {}),
            }),
          ),
        );
        for (const tag of page.Tags ?? []) {
          if (tag.ResourceId) lastUsedById.set(tag.ResourceId, Number(tag.Value ?? '0'));
        }
        tagToken = page.NextToken;
      } while (tagToken);
      for (const template of templates) {
        const lastUsed = lastUseOf(template, lastUsedById);
        if (lastUsed === undefined || nowSeconds() - lastUsed < maxIdleSeconds || !template.LaunchTemplateId)
          continue;
        try {
          await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: template.LaunchTemplateId }));
          deleted.push(template.LaunchTemplateName ?? template.LaunchTemplateId);
        } catch (error) {
          if (!isNotFound(error)) throw toCloudApiError('ec2:DeleteLaunchTemplate', error);
        }
      }
      if (deleted.length > 0)
        logger.info('launch templates deleted', {
          launchTemplates: deleted.slice(0, 10),
          count: deleted.length,
        });
      return deleted;
    },
  };
}

/** Templates Karpenter names, which it tags for the cluster as Flotilla does. */
const KARPENTER_TEMPLATE_PREFIX = 'karpenter.k8s.aws/';

/**
 * When a template was last used, in seconds: Flotilla's last-use tag, or for one of Karpenter's its
 * creation time; undefined for a template of another maker.
 */
function lastUseOf(template: LaunchTemplate, lastUsedById: ReadonlyMap<string, number>): number | undefined {
  const tagged =
    lastUsedById.get(template.LaunchTemplateId ?? '') ??
    template.Tags?.find((t) => t.Key === Tag.lastUsed)?.Value;
  if (tagged !== undefined) return Number(tagged);
  if (!(template.LaunchTemplateName ?? '').startsWith(KARPENTER_TEMPLATE_PREFIX)) return undefined;
  return template.CreateTime === undefined ? undefined : Math.floor(template.CreateTime.getTime() / 1000);
}
