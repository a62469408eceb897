import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeClusterAccess } from '../../../shared/adapters/aws/eks-cluster.ts';
import { CloudApiError } from '../../../shared/ports/cloud.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

let server: Moto;
let eks: EKSClient;

beforeAll(async () => {
  server = await moto();
  eks = new EKSClient(awsClientConfig(server));
});

beforeEach(async () => {
  await resetMoto(server);
});

describe('describeClusterAccess', () => {
  it('finds the endpoint, CA and Kubernetes version of an EKS cluster by name', async () => {
    await eks.send(
      new CreateClusterCommand({
        name: 'prod-eu',
        version: '1.34',
        roleArn: 'arn:aws:iam::123456789012:role/eks',
        resourcesVpcConfig: { subnetIds: ['subnet-1', 'subnet-2'] },
      }),
    );
    const access = await describeClusterAccess(eks, 'prod-eu');
    expect(access.endpoint).toMatch(/^https:\/\//);
    expect(access.caData.length).toBeGreaterThan(0);
    expect(access.kubernetesVersion).toBe('1.34');
  });

  it('says which cluster it could not find', async () => {
    const failure = await describeClusterAccess(eks, 'missing').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CloudApiError);
    expect((failure as Error).message).toContain('"missing"');
  });
});
