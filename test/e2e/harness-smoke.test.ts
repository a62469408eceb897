import { randomBytes } from 'node:crypto';
import { EC2Client, RunInstancesCommand, TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsClientConfig, type Kube, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { NodeSimulator } from '../harness/node-sim.ts';
import { waitFor } from '../harness/proc.ts';

const clusterName = `smoke-${randomBytes(3).toString('hex')}`;
const namespace = clusterName;
let server: Moto;
let cluster: Kube;
let ec2: EC2Client;
let core: CoreV1Api;
let simulator: NodeSimulator;

beforeAll(async () => {
  [server, cluster] = await Promise.all([moto(), kube()]);
  await resetMoto(server);
  ec2 = new EC2Client(awsClientConfig(server));
  core = cluster.userKubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  simulator = NodeSimulator.start({ ec2, kubeConfig: cluster.userKubeConfig, clusterName });
});

afterAll(async () => {
  await simulator?.stop();
  await core?.deleteNamespace({ name: namespace });
});

function nodeConfig(
  labels: Record<string, string>,
  taints: Array<{ key: string; value: string; effect: string }>,
) {
  const yaml = [
    'apiVersion: node.eks.aws/v1alpha1',
    'kind: NodeConfig',
    'spec:',
    '  cluster:',
    `    name: ${clusterName}`,
    '  kubelet:',
    '    config:',
    '      maxPods: 29',
    `      registerWithTaints: ${JSON.stringify(taints)}`,
    '    flags:',
    `      - --node-labels=${Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')}`,
  ].join('\n');
  const boundary = 'BOUNDARY';
  return [
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: application/node.eks.aws',
    '',
    yaml,
    `--${boundary}--`,
    '',
  ].join('\n');
}

async function launch(
  userData: string,
  instanceType: 'm5.large' | 'c5.xlarge' = 'm5.large',
): Promise<string> {
  const result = await ec2.send(
    new RunInstancesCommand({
      ImageId: 'ami-12c6146b',
      InstanceType: instanceType,
      MinCount: 1,
      MaxCount: 1,
      UserData: Buffer.from(userData).toString('base64'),
      Placement: { AvailabilityZone: 'us-east-1a' },
      TagSpecifications: [
        { ResourceType: 'instance', Tags: [{ Key: `kubernetes.io/cluster/${clusterName}`, Value: 'owned' }] },
      ],
    }),
  );
  const id = result.Instances?.[0]?.InstanceId;
  if (!id) throw new Error('RunInstances returned no instance');
  return id;
}

function pod(name: string, extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return {
    metadata: { name, namespace },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'public.ecr.aws/docker/library/busybox:stable',
          resources: { requests: { cpu: '500m', memory: '256Mi' } },
        },
      ],
      ...extra,
    },
  };
}

async function podState(name: string) {
  const current = await core.readNamespacedPod({ name, namespace });
  const scheduled = current.status?.conditions?.find((c) => c.type === 'PodScheduled');
  return { phase: current.status?.phase, nodeName: current.spec?.nodeName, scheduled };
}

describe('harness: kube-scheduler places pods on nodes registered for moto instances', () => {
  it('keeps a pod Pending with no nodes, then runs it on the node of a launched instance', async () => {
    await core.createNamespacedPod({ namespace, body: pod('web') });
    const unschedulable = await waitFor(
      'kube-scheduler to mark the pod unschedulable',
      async () => {
        const state = await podState('web');
        return state.scheduled?.reason === 'Unschedulable' ? state : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(unschedulable.phase).toBe('Pending');
    expect(unschedulable.nodeName).toBeUndefined();

    const instanceId = await launch(
      nodeConfig({ 'team/role': 'web', 'karpenter.sh/nodepool': 'default' }, []),
    );
    const nodeName = await waitFor(
      'the Node of the instance',
      async () => simulator.nodes().get(instanceId),
      {
        timeoutMs: 30_000,
      },
    );
    const node = await core.readNode({ name: nodeName });
    expect(node.spec?.providerID).toBe(`aws:///us-east-1a/${instanceId}`);
    expect(node.metadata?.labels).toMatchObject({
      'team/role': 'web',
      'karpenter.sh/nodepool': 'default',
      'node.kubernetes.io/instance-type': 'm5.large',
      'topology.kubernetes.io/zone': 'us-east-1a',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': nodeName,
    });
    expect(node.status?.capacity).toMatchObject({ cpu: '2', pods: '29' });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

    const running = await waitFor(
      'the pod to be bound and Running',
      async () => {
        const state = await podState('web');
        return state.phase === 'Running' ? state : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(running.nodeName).toBe(nodeName);
  });

  it('keeps a pod Pending when its toleration does not match the node taint, and runs one that tolerates it', async () => {
    const instanceId = await launch(
      nodeConfig({ pool: 'gpu' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]),
      'c5.xlarge',
    );
    const nodeName = await waitFor('the tainted Node', async () => simulator.nodes().get(instanceId), {
      timeoutMs: 30_000,
    });
    const node = await core.readNode({ name: nodeName });
    // kube-controller-manager may briefly add node.kubernetes.io/not-ready until it sees the node Ready.
    expect(node.spec?.taints?.filter((t) => !t.key.startsWith('node.kubernetes.io/'))).toEqual([
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    ]);

    const selector = { nodeSelector: { pool: 'gpu' } };
    await core.createNamespacedPod({
      namespace,
      body: pod('wrong-toleration', {
        ...selector,
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'other', effect: 'NoSchedule' }],
      }),
    });
    await core.createNamespacedPod({
      namespace,
      body: pod('right-toleration', {
        ...selector,
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      }),
    });
    const running = await waitFor(
      'the tolerating pod to run',
      async () => {
        const state = await podState('right-toleration');
        return state.phase === 'Running' ? state : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(running.nodeName).toBe(nodeName);
    const refused = await waitFor(
      'the other pod to be marked unschedulable',
      async () => {
        const state = await podState('wrong-toleration');
        return state.scheduled?.reason === 'Unschedulable' ? state : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(refused.phase).toBe('Pending');
    expect(refused.scheduled?.message).toMatch(/untolerated taint/);
  });

  it('deletes the Node when its instance terminates', async () => {
    const instanceId = await launch(nodeConfig({ short: 'lived' }, []));
    const nodeName = await waitFor('the Node', async () => simulator.nodes().get(instanceId), {
      timeoutMs: 30_000,
    });
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    await waitFor(
      'the Node to be deleted',
      async () => {
        try {
          await core.readNode({ name: nodeName });
          return undefined;
        } catch (error) {
          return (error as { code?: number }).code === 404 ? true : undefined;
        }
      },
      { timeoutMs: 30_000 },
    );
    expect(simulator.nodes().has(instanceId)).toBe(false);
    expect(simulator.problems()).toEqual([]);
  });
});
