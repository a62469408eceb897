import {
  type _InstanceType,
  type CreateFleetRequest,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateTagsCommand,
  CreateVpcCommand,
  type EC2Client,
  type Instance,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { encodeFleetRequest } from '../../../shared/adapters/aws/fleet-record.ts';
import { launchTags } from '../../../shared/adapters/launch-plan.ts';
import { type InstanceType, Label } from '../../../shared/core/index.ts';
import type { EC2NodeClass, LaunchRecord, LaunchRequest } from '../../../shared/ports/cloud.ts';
import { STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { DISCOVERY, tags } from '../../integration/aws/fixtures.ts';
import type { PlannedNode } from './plan.ts';
import { forEachLimit, say } from './progress.ts';
import type { Random } from './random.ts';

// The AWS side of a loaded cluster, on moto: a VPC whose subnets hold thousands of nodes (the
// integration fixtures' /24 subnets hold about 250 instances each), and one instance per node,
// tagged as Flotilla tags its launches.

export interface BenchNetwork {
  readonly vpcId: string;
  readonly subnets: ReadonlyMap<string, { readonly id: string; readonly cidrBase: number }>;
  readonly securityGroupId: string;
}

/** A VPC with one /18 subnet per zone (a, b, c) and a security group, tagged for discovery. */
export async function makeLargeNetwork(ec2: EC2Client, zones: readonly string[]): Promise<BenchNetwork> {
  const vpc = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
  const vpcId = vpc.Vpc?.VpcId ?? '';
  const subnets = new Map<string, { id: string; cidrBase: number }>();
  for (const [index, zone] of zones.entries()) {
    const created = await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpcId,
        CidrBlock: `10.0.${index * 64}.0/18`,
        AvailabilityZone: zone,
        TagSpecifications: [
          { ResourceType: 'subnet', Tags: tags({ ...DISCOVERY, Name: `private-${zone}` }) },
        ],
      }),
    );
    subnets.set(zone, { id: created.Subnet?.SubnetId ?? '', cidrBase: (10 << 24) | ((index * 64) << 8) });
  }
  const group = await ec2.send(
    new CreateSecurityGroupCommand({ GroupName: 'nodes', Description: 'nodes', VpcId: vpcId }),
  );
  await ec2.send(new CreateTagsCommand({ Resources: [group.GroupId ?? ''], Tags: tags(DISCOVERY) }));
  return { vpcId, subnets, securityGroupId: group.GroupId ?? '' };
}

/** An IPv4 address as text. */
export function ipOf(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join('.');
}

/** The lowest on-demand price of an instance type (Infinity when it has none). */
export function onDemandPrice(type: InstanceType): number {
  return Math.min(
    ...type.offerings.filter((o) => o.capacityType === 'on-demand').map((o) => o.priceUsdPerHour),
  );
}

/**
 * A NodeClaim's candidates, cheapest first, as the scheduler lists them for the getting-started
 * NodePool: the launched type and the next 29 that are at least as big and allowed by it.
 */
export function launchCandidates(type: InstanceType, types: readonly InstanceType[]): InstanceType[] {
  const allowed = types.filter(
    (t) =>
      t.name !== type.name &&
      ['c', 'm', 'r'].includes(t.labels[Label.instanceCategory] ?? '') &&
      Number(t.labels[Label.instanceGeneration] ?? 0) > 2 &&
      t.labels[Label.arch] === 'amd64' &&
      (t.capacity['cpu'] ?? 0) >= (type.capacity['cpu'] ?? 0) &&
      (t.capacity['memory'] ?? 0) >= (type.capacity['memory'] ?? 0) &&
      Number.isFinite(onDemandPrice(t)),
  );
  allowed.sort((a, b) => onDemandPrice(a) - onDemandPrice(b) || (a.name < b.name ? -1 : 1));
  return [type, ...allowed.slice(0, 29)];
}

/** The launch request Flotilla would have made for a node's NodeClaim. */
export function launchRequestOf(
  node: PlannedNode,
  nodeClass: EC2NodeClass,
  candidates: readonly InstanceType[],
  requirements: LaunchRequest['requirements'],
  labels: LaunchRequest['labels'],
): LaunchRequest {
  return {
    nodeClaimName: node.nodeClaimName,
    nodePoolName: 'default',
    nodeClass,
    instanceTypes: candidates,
    requirements,
    labels,
    taints: [],
    startupTaints: [],
  };
}

/**
 * A launch record as Flotilla's AWS adapter writes it before CreateFleet (the request, gzipped):
 * one launch template, an override per candidate type and zone, the cluster's tags.
 */
export function launchRecordOf(request: LaunchRequest, random: Random, decidedAtMs: number): LaunchRecord {
  const allTags = launchTags(request, STACK_CLUSTER);
  const spot = request.requirements.some(
    (r) => r.key === 'karpenter.sh/capacity-type' && (r.values ?? []).includes('spot'),
  );
  const subnets = request.nodeClass.status?.subnets ?? [];
  const toTags = Object.entries(allTags).map(([Key, Value]) => ({ Key, Value }));
  const fleet: CreateFleetRequest = {
    Type: 'instant',
    TargetCapacitySpecification: {
      TotalTargetCapacity: 1,
      DefaultTargetCapacityType: spot ? 'spot' : 'on-demand',
    },
    ...(spot
      ? { SpotOptions: { AllocationStrategy: 'price-capacity-optimized' } }
      : { OnDemandOptions: { AllocationStrategy: 'lowest-price' } }),
    LaunchTemplateConfigs: [
      {
        LaunchTemplateSpecification: { LaunchTemplateId: `lt-${random.hex(17)}`, Version: '$Latest' },
        Overrides: request.instanceTypes.flatMap((type) =>
          subnets.map((s) => ({
            InstanceType: type.name as _InstanceType,
            SubnetId: s.id,
            AvailabilityZone: s.zone,
          })),
        ),
      },
    ],
    TagSpecifications: [
      { ResourceType: 'instance', Tags: toTags },
      { ResourceType: 'volume', Tags: toTags },
      { ResourceType: 'fleet', Tags: toTags },
    ],
    ClientToken: `${request.nodeClaimName}-${random.hex(12)}`,
  };
  return { decidedAtMs, request: encodeFleetRequest(fleet) };
}

/**
 * Launches one instance per planned node with RunInstances in batches (same type, zone and
 * capacity type), tagged as Flotilla's launches are; then tags each with its NodeClaim.
 */
export async function launchInstances(
  ec2: EC2Client,
  nodes: readonly PlannedNode[],
  options: {
    readonly network: BenchNetwork;
    readonly imageId: string;
    readonly instanceProfile: string | undefined;
    readonly nodeClass: EC2NodeClass;
  },
): Promise<Map<number, Instance>> {
  const groups = new Map<string, PlannedNode[]>();
  for (const node of nodes) {
    const key = `${node.shape.instanceType}/${node.zone}/${node.capacityType}`;
    groups.set(key, [...(groups.get(key) ?? []), node]);
  }
  const common = launchTags(
    {
      nodeClaimName: '',
      nodePoolName: 'default',
      nodeClass: options.nodeClass,
      instanceTypes: [],
      requirements: [],
      labels: {},
      taints: [],
      startupTaints: [],
    },
    STACK_CLUSTER,
  );
  const { 'karpenter.sh/nodeclaim': _claim, Name: _name, ...shared } = common;
  const batches: PlannedNode[][] = [];
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i += 100) batches.push(group.slice(i, i + 100));
  }
  const byIndex = new Map<number, Instance>();
  await forEachLimit('RunInstances batches', batches, 4, async (batch) => {
    const first = batch[0] as PlannedNode;
    const subnet = options.network.subnets.get(first.zone);
    const out = await ec2.send(
      new RunInstancesCommand({
        ImageId: options.imageId,
        InstanceType: first.shape.instanceType as _InstanceType,
        MinCount: batch.length,
        MaxCount: batch.length,
        SubnetId: subnet?.id,
        SecurityGroupIds: [options.network.securityGroupId],
        ...(options.instanceProfile === undefined
          ? {}
          : { IamInstanceProfile: { Name: options.instanceProfile } }),
        ...(first.capacityType === 'spot' ? { InstanceMarketOptions: { MarketType: 'spot' } } : {}),
        TagSpecifications: [
          { ResourceType: 'instance', Tags: tags(shared) },
          { ResourceType: 'volume', Tags: tags(shared) },
        ],
      }),
    );
    const instances = out.Instances ?? [];
    if (instances.length !== batch.length)
      throw new Error(`RunInstances launched ${instances.length} of ${batch.length}`);
    batch.forEach((node, i) => {
      byIndex.set(node.index, instances[i] as Instance);
    });
  });
  await forEachLimit('tagging instances with their NodeClaims', nodes, 16, async (node) => {
    const instance = byIndex.get(node.index);
    await ec2.send(
      new CreateTagsCommand({
        Resources: [instance?.InstanceId ?? ''],
        Tags: tags({ 'karpenter.sh/nodeclaim': node.nodeClaimName, Name: `default/${node.nodeClaimName}` }),
      }),
    );
  });
  say(`launched ${byIndex.size} instances on moto`);
  return byIndex;
}
