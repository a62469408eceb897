import {
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateTagsCommand,
  CreateVpcCommand,
  type EC2Client,
  RegisterImageCommand,
} from '@aws-sdk/client-ec2';
import type { IAMClient } from '@aws-sdk/client-iam';
import { PutParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { makeNodeClassResolver } from '../../../shared/adapters/aws/nodeclass.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { STACK_CLUSTER } from '../../harness/aws/stack.ts';

/** Where AWS publishes its public parameters (the harness publishes them there on moto, see put). */
export const SSM_PREFIX = '/aws/service';
/** The cluster of the deployed stack (its policies name it). */
export const CLUSTER = STACK_CLUSTER;
export const K8S_VERSION = '1.34';
export const DISCOVERY = { 'karpenter.sh/discovery': CLUSTER };

/**
 * The EC2NodeClass fields of a Karpenter v1 manifest that shape a launch without a lookup: RAID0,
 * an EFA interface besides the primary one, IP prefixes, CPU options and a fleet context.
 */
export const LAUNCH_SHAPING_SPEC = {
  instanceStorePolicy: 'RAID0',
  networkInterfaces: [
    { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
    { networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' },
  ],
  ipPrefixCount: 2,
  cpuOptions: { nestedVirtualization: 'enabled' },
  context: 'c-0123456789abcdef0',
} as const;

export const silentLogger = makeLogger({}, { level: 'error', sink: () => {} });

export interface Network {
  readonly vpcId: string;
  /** Tagged for discovery, one per zone a, b, c. */
  readonly subnets: readonly { readonly id: string; readonly zone: string }[];
  /** In zone d, not tagged. */
  readonly untaggedSubnetId: string;
  readonly securityGroupId: string;
  readonly otherSecurityGroupId: string;
}

export async function makeNetwork(ec2: EC2Client): Promise<Network> {
  const vpc = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
  const vpcId = vpc.Vpc?.VpcId ?? '';
  const subnets: { id: string; zone: string }[] = [];
  for (const [index, zone] of ['us-east-1a', 'us-east-1b', 'us-east-1c'].entries()) {
    const subnet = await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpcId,
        CidrBlock: `10.0.${index + 1}.0/24`,
        AvailabilityZone: zone,
        TagSpecifications: [
          { ResourceType: 'subnet', Tags: tags({ ...DISCOVERY, Name: `private-${zone}` }) },
        ],
      }),
    );
    subnets.push({ id: subnet.Subnet?.SubnetId ?? '', zone });
  }
  const untagged = await ec2.send(
    new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: '10.0.9.0/24', AvailabilityZone: 'us-east-1d' }),
  );
  const group = await ec2.send(
    new CreateSecurityGroupCommand({ GroupName: 'nodes', Description: 'nodes', VpcId: vpcId }),
  );
  await ec2.send(new CreateTagsCommand({ Resources: [group.GroupId ?? ''], Tags: tags(DISCOVERY) }));
  const other = await ec2.send(
    new CreateSecurityGroupCommand({ GroupName: 'other', Description: 'other', VpcId: vpcId }),
  );
  return {
    vpcId,
    subnets,
    untaggedSubnetId: untagged.Subnet?.SubnetId ?? '',
    securityGroupId: group.GroupId ?? '',
    otherSecurityGroupId: other.GroupId ?? '',
  };
}

export function tags(map: Record<string, string>) {
  return Object.entries(map).map(([Key, Value]) => ({ Key, Value }));
}

export async function registerImage(ec2: EC2Client, name: string, imageTags: Record<string, string> = {}) {
  const image = await ec2.send(
    new RegisterImageCommand({ Name: name, Architecture: 'x86_64', RootDeviceName: '/dev/xvda' }),
  );
  const id = image.ImageId ?? '';
  if (Object.keys(imageTags).length > 0)
    await ec2.send(new CreateTagsCommand({ Resources: [id], Tags: tags(imageTags) }));
  return id;
}

/** Publishes the AL2023 `recommended` parameters (x86_64 and arm64 standard, x86_64 nvidia). */
export async function publishAl2023(ec2: EC2Client, ssm: SSMClient) {
  const ids = {
    amd64: await registerImage(ec2, `amazon-eks-node-al2023-x86_64-standard-${K8S_VERSION}-v20261101`),
    arm64: await registerImage(ec2, `amazon-eks-node-al2023-arm64-standard-${K8S_VERSION}-v20261101`),
    nvidia: await registerImage(ec2, `amazon-eks-node-al2023-x86_64-nvidia-${K8S_VERSION}-v20261101`),
  };
  const base = `${SSM_PREFIX}/eks/optimized-ami/${K8S_VERSION}/amazon-linux-2023`;
  await put(ssm, `${base}/x86_64/standard/recommended/image_id`, ids.amd64);
  await put(ssm, `${base}/arm64/standard/recommended/image_id`, ids.arm64);
  await put(ssm, `${base}/x86_64/nvidia/recommended/image_id`, ids.nvidia);
  return ids;
}

export async function publishBottlerocket(ec2: EC2Client, ssm: SSMClient) {
  const amd64 = await registerImage(ec2, 'bottlerocket-aws-k8s-1.34-x86_64-v1.50.0');
  await put(ssm, `${SSM_PREFIX}/bottlerocket/aws-k8s-${K8S_VERSION}/x86_64/latest/image_id`, amd64);
  return { amd64 };
}

/**
 * Puts an SSM parameter. AWS's own public parameters (under /aws/) nobody else may write, moto
 * included: the harness publishes those into moto's store as AWS would (test/harness/moto_server.py).
 */
export async function put(ssm: SSMClient, name: string, value: string) {
  if (!name.startsWith('/aws/')) {
    await ssm.send(new PutParameterCommand({ Name: name, Value: value, Type: 'String', Overwrite: true }));
    return;
  }
  const endpoint = await ssm.config.endpoint?.();
  const region = await ssm.config.region();
  if (endpoint === undefined) throw new Error("publishing a public AWS parameter needs moto's endpoint");
  const url = `${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}/flotilla-harness/aws-parameters`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region, parameters: { [name]: value } }),
  });
  if (!response.ok)
    throw new Error(`publishing ${name} on moto failed: HTTP ${response.status} ${await response.text()}`);
}

/**
 * Sets the account's capacity reservations. moto does not model them; the harness answers
 * DescribeCapacityReservations from these as EC2 would (test/harness/moto_server.py).
 */
export async function setCapacityReservations(
  endpoint: string,
  reservations: readonly Record<string, unknown>[],
): Promise<void> {
  const response = await fetch(`${endpoint}/flotilla-harness/capacity-reservations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reservations }),
  });
  if (!response.ok)
    throw new Error(
      `setting capacity reservations on moto failed: HTTP ${response.status} ${await response.text()}`,
    );
}

/**
 * Sets what EC2 reports of instances' status checks and scheduled events. moto reports every
 * instance healthy; the harness answers DescribeInstanceStatus's health filters from these as EC2
 * would (test/harness/moto_server.py). An instance left out is healthy.
 */
export async function setInstanceHealth(
  endpoint: string,
  statuses: Readonly<Record<string, Record<string, unknown>>>,
): Promise<void> {
  const response = await fetch(`${endpoint}/flotilla-harness/instance-status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ statuses }),
  });
  if (!response.ok)
    throw new Error(
      `setting instance statuses on moto failed: HTTP ${response.status} ${await response.text()}`,
    );
}

/** An EC2NodeClass object as the API server would return it (`undefined` in `spec` removes a default). */
export function nodeClassObject(spec: Record<string, unknown>, name = 'default') {
  return JSON.parse(
    JSON.stringify({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name, generation: 1 },
      spec: {
        subnetSelectorTerms: [{ tags: DISCOVERY }],
        securityGroupSelectorTerms: [{ tags: DISCOVERY }],
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        instanceProfile: 'KarpenterNodeInstanceProfile',
        ...spec,
      },
    }),
  ) as Record<string, unknown>;
}

/** The NodeClass resolver as the Lambdas build it, for the test cluster in us-east-1. */
export function testNodeClassResolver(ec2: EC2Client, ssm: SSMClient, iam?: IAMClient) {
  return makeNodeClassResolver({
    ec2,
    ssm,
    ...(iam === undefined ? {} : { iam }),
    clusterName: CLUSTER,
    region: 'us-east-1',
    kubernetesVersion: K8S_VERSION,
    ssmParameterPrefix: SSM_PREFIX,
  });
}
