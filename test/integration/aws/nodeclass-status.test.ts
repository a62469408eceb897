import { EC2Client } from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseEC2NodeClass } from '../../../shared/adapters/aws/nodeclass-schema.ts';
import {
  makeNodeClassStatusWriter,
  NodeClassStatusWriteError,
} from '../../../shared/adapters/aws/nodeclass-status-writer.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { awsClientConfig, kube, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { DISCOVERY, makeNetwork, nodeClassObject, publishAl2023, testNodeClassResolver } from './fixtures.ts';

let server: Moto;
let kubeConfig: KubeConfig;
let api: CustomObjectsApi;
let ec2: EC2Client;
let ssm: SSMClient;
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
const group = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' };

beforeAll(async () => {
  server = await moto();
  ({ kubeConfig } = await kube());
  api = kubeConfig.makeApiClient(CustomObjectsApi);
  ec2 = new EC2Client(awsClientConfig(server));
  ssm = new SSMClient(awsClientConfig(server));
});

beforeEach(async () => {
  await resetMoto(server);
  await makeNetwork(ec2);
  await publishAl2023(ec2, ssm);
});

async function createNodeClass(name: string, spec: Record<string, unknown>) {
  await api.deleteClusterCustomObject({ ...group, name }).catch(() => undefined);
  for (let i = 0; i < 50; i++) {
    const gone = await api.getClusterCustomObject({ ...group, name }).then(
      () => false,
      () => true,
    );
    if (gone) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const body = nodeClassObject(spec, name);
  return api.createClusterCustomObject({ ...group, body: { ...body, metadata: { name } } });
}

function resolver() {
  return testNodeClassResolver(ec2, ssm, clock);
}

describe('EC2NodeClass status write-back to the API server', () => {
  it('writes the resolved status through the status subresource, replacing lists on the next write', async () => {
    const created = await createNodeClass('status-ready', {});
    const nodeClass = parseEC2NodeClass(created);
    const status = await resolver().resolve(nodeClass);
    const writer = makeNodeClassStatusWriter(kubeConfig);
    await writer.write('status-ready', status);

    const stored = parseEC2NodeClass(await api.getClusterCustomObject({ ...group, name: 'status-ready' }));
    expect(stored.status?.subnets.map((s) => s.zone).sort()).toEqual([
      'us-east-1a',
      'us-east-1b',
      'us-east-1c',
    ]);
    expect(stored.status?.amis).toHaveLength(3);
    expect(stored.status?.instanceProfile).toBe('KarpenterNodeInstanceProfile');
    expect(stored.status?.conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Ready',
    });
    // The spec is untouched by a status write.
    expect(stored.spec.subnetSelectorTerms).toEqual([{ tags: DISCOVERY }]);

    const narrowed = await resolver().resolve({
      ...stored,
      spec: { ...stored.spec, subnetSelectorTerms: [{ tags: { Name: 'private-us-east-1b' } }] },
    });
    await writer.write('status-ready', narrowed);
    const again = parseEC2NodeClass(await api.getClusterCustomObject({ ...group, name: 'status-ready' }));
    expect(again.status?.subnets.map((s) => s.zone)).toEqual(['us-east-1b']);
  });

  it('shows a malformed NodeClass as not ready with messages that say what to fix', async () => {
    const created = await createNodeClass('status-broken', {
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'wrong-cluster' } }],
      amiSelectorTerms: [{ alias: 'al2023@v19990101' }],
    });
    const status = await resolver().resolve(parseEC2NodeClass(created));
    await makeNodeClassStatusWriter(kubeConfig).write('status-broken', status);
    const stored = parseEC2NodeClass(await api.getClusterCustomObject({ ...group, name: 'status-broken' }));
    const conditions = new Map(stored.status?.conditions.map((c) => [c.type, c]));
    expect(conditions.get('SubnetsReady')).toMatchObject({ status: 'False', reason: 'SubnetsNotFound' });
    expect(conditions.get('SubnetsReady')?.message).toContain('wrong-cluster');
    expect(conditions.get('AMIsReady')).toMatchObject({ status: 'False', reason: 'AMINotFound' });
    expect(conditions.get('AMIsReady')?.message).toContain('al2023@v19990101');
    expect(conditions.get('Ready')).toMatchObject({ status: 'False', reason: 'NotReady' });
  });

  it('names the NodeClass when it does not exist', async () => {
    const error = await makeNodeClassStatusWriter(kubeConfig)
      .write('does-not-exist', { subnets: [], securityGroups: [], amis: [], conditions: [] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeClassStatusWriteError);
    expect((error as Error).message).toContain('"does-not-exist"');
    expect((error as Error).message).toContain('HTTP 404');
  });
});
