import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeClusterAccess } from '../../../shared/adapters/aws/eks-cluster.ts';
import { CloudApiError } from '../../../shared/ports/cloud.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_ACCOUNT, STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// Cluster discovery at a Lambda's cold start, with the provisioner's role: its policy allows
// eks:DescribeCluster on the stack's own cluster only, so both cases ask for that one.

let server: Moto;
let eks: EKSClient;

beforeAll(async () => {
  server = await moto();
  eks = new EKSClient(awsConfigAs(server, 'provisioner'));
});

beforeEach(async () => {
  await resetMoto(server);
});

describe('describeClusterAccess', () => {
  it('finds the endpoint, CA and Kubernetes version of an EKS cluster by name', async () => {
    await deployStack(server, { eksCluster: true });
    const access = await describeClusterAccess(eks, STACK_CLUSTER);
    expect(access.endpoint).toMatch(/^https:\/\//);
    expect(access.caData.length).toBeGreaterThan(0);
    expect(access.kubernetesVersion).toBe('1.34');
  });

  it('reports an IPv6 cluster as one (its nodes get IPv6 prefixes) and an IPv4 one with its service CIDR', async () => {
    await deployStack(server, { eksCluster: true });
    expect(await describeClusterAccess(eks, STACK_CLUSTER)).toMatchObject({ serviceCidr: '172.20.0.0/16' });
    await resetMoto(server);
    await deployStack(server);
    await new EKSClient(awsClientConfig(server)).send(
      new CreateClusterCommand({
        name: STACK_CLUSTER,
        version: '1.34',
        roleArn: `arn:aws:iam::${STACK_ACCOUNT}:role/eks`,
        resourcesVpcConfig: { subnetIds: ['subnet-1'] },
        kubernetesNetworkConfig: { ipFamily: 'ipv6' },
      }),
    );
    const access = await describeClusterAccess(eks, STACK_CLUSTER);
    expect(access.ipFamily).toBe('ipv6');
    expect(access.serviceCidr).toBeUndefined();
  });

  it('says which cluster it could not find', async () => {
    // The stack is deployed for a cluster that does not exist (yet) in this region.
    await deployStack(server);
    const failure = await describeClusterAccess(eks, STACK_CLUSTER).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CloudApiError);
    expect((failure as Error).message).toContain(`"${STACK_CLUSTER}"`);
  });
});
