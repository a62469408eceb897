import { randomBytes } from 'node:crypto';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PodEvent, parsePodEvent, parseQueueMessage } from '../../shared/messages/pod-event.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER } from '../harness/aws/stack.ts';
import { awsClientConfig, type Kube, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';

// The shim runs as deployed: the cluster's kubeconfig is its ServiceAccount's (bound by the rendered
// RBAC), its AWS keys are its Pod Identity role's, and it sends to the stack's pod-event queue.
// Pods are created as a user. Other test files share the API server, so only this file's namespace
// is looked at.
const clusterName = STACK_CLUSTER;
const namespace = `shim-${randomBytes(3).toString('hex')}`;
let server: Moto;
let cluster: Kube;
let core: CoreV1Api;
let sqs: SQSClient;
let queueUrl: string;
let shim: ShimProcess;

beforeAll(async () => {
  [server, cluster] = await Promise.all([moto(), kube()]);
  await resetMoto(server);
  queueUrl = (await deployStack(server)).queueUrls.podEvents;
  // Reading the queue is the test's own inspection (the provisioner's part), with the account's key.
  sqs = new SQSClient(awsClientConfig(server));
  core = cluster.userKubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  shim = await startShimProcess({
    // The shim's process gets the keys of its own role, as EKS Pod Identity hands them out.
    server: { ...server, credentials: awsConfigAs(server, 'shim').credentials },
    kubeconfigPath: cluster.shimKubeconfigPath,
    clusterName,
    queueUrl,
  });
});

afterAll(async () => {
  shim?.stop();
  await core?.deleteNamespace({ name: namespace });
});

/**
 * Every message on the queue must parse; the pod events about this file's namespace are returned.
 * The shim watches every pod in the cluster (and forwards Nodes and NodeClaims whose deletion
 * begins), and other test files share the API server.
 */
async function receiveOwn(expected: number): Promise<PodEvent[]> {
  const own: PodEvent[] = [];
  await waitFor(
    `${expected} pod events about namespace ${namespace} on the queue`,
    async () => {
      const page = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const message of page.Messages ?? []) {
        const parsed = parseQueueMessage(message.Body ?? '');
        if (!parsed.ok) throw new Error(`the shim sent a malformed message: ${parsed.problem}`);
        const { message: sent } = parsed;
        if (sent.kind === 'podEvent' && sent.event.namespace === namespace) own.push(sent.event);
      }
      return own.length >= expected ? true : undefined;
    },
    { timeoutMs: 30_000 },
  );
  return own;
}

function pendingPod(name: string) {
  return {
    metadata: { name, namespace },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'public.ecr.aws/docker/library/busybox:stable',
          resources: { requests: { cpu: '512' } },
        },
      ],
    },
  };
}

describe('shim', () => {
  it('forwards one versioned event per pod that kube-scheduler marks unschedulable', async () => {
    const names = [
      'big-0',
      'big-1',
      'big-2',
      'big-3',
      'big-4',
      'big-5',
      'big-6',
      'big-7',
      'big-8',
      'big-9',
      'big-10',
    ];
    const created = Date.now();
    const uids = new Map<string, string>();
    for (const name of names) {
      const pod = await core.createNamespacedPod({ namespace, body: pendingPod(name) });
      uids.set(name, pod.metadata?.uid ?? '');
    }
    const events = await receiveOwn(names.length);
    expect(events.map((e) => e.name).sort()).toEqual([...names].sort());
    for (const event of events) {
      expect(event).toMatchObject({ kind: 'PodUnschedulable', cluster: clusterName, namespace });
      expect(event.uid).toBe(uids.get(event.name));
      expect(Date.parse(event.observedAt)).toBeGreaterThanOrEqual(created - 1_000);
    }
    // Eleven pods in one burst take two SendMessageBatch calls, not eleven SendMessage calls.
    const batches = shim
      .output()
      .split('\n')
      .filter((line) => line.includes('"forwarded pod events"'));
    expect(batches.length).toBeLessThan(names.length);
  });

  it('does not forward the same pod again while it stays unschedulable', async () => {
    await core.patchNamespacedPod({
      name: 'big-0',
      namespace,
      body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }],
    });
    const again = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 3 }),
    );
    const aboutBig0 = (again.Messages ?? []).filter((m) => {
      const parsed = parsePodEvent(m.Body ?? '');
      return parsed.ok && parsed.event.namespace === namespace && parsed.event.name === 'big-0';
    });
    expect(aboutBig0).toEqual([]);
  });
});
