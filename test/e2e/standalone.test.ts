import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { provisionerFunction } from '../../infra/functions.ts';
import { makeProvisionerHandler } from '../../lambdas/provisioner/run.ts';
import { Finalizer, isConditionTrue, NodeClaimConditionType } from '../../shared/core/index.ts';
import { awsClientConfig, kube } from '../harness/index.ts';
import { startQueueTrigger } from '../harness/lambda-triggers.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E, RUN_LABEL } from './provisioner-fixture.ts';

// A NodeClaim a user applies outside every NodePool ("standalone", no karpenter.sh/nodepool
// label), end to end: the provisioner's run (the controller identity on the API server, the
// provisioner's role on AWS) adds the termination finalizer and launches it from its own
// EC2NodeClass and requirements; the NodeClaim lifecycle registers and initializes its Node; the
// garbage collector leaves its instance alone; deleting it drains and terminates it. A standalone
// NodeClaim nothing can launch (its class missing, or no instance type fits) is deleted with a
// Warning Event, as Karpenter deletes it. With the shim running, a new standalone NodeClaim is
// launched through its report on the pod-event queue, with no scheduled run at all.

const e2e = new ProvisionerE2E('standalone');
const { logLines } = e2e;
const karpenter = { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' } as const;

const stops: (() => Promise<void>)[] = [];
let shim: ShimProcess | undefined;
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  shim?.stop();
});

/** The NodeClaim a user applies: no NodePool label, this run's label, and `spec` over the defaults. */
async function applyNodeClaim(name: string, spec: Record<string, unknown> = {}): Promise<void> {
  await e2e.env.custom.createClusterCustomObject({
    ...karpenter,
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name, labels: { [RUN_LABEL]: e2e.id, team: 'batch' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: e2e.nodeClassName },
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
        ],
        resources: { requests: { cpu: '3', memory: '4Gi' } },
        ...spec,
      },
    },
  });
}

const launchLines = (name: string) =>
  logLines.filter((l) => l['message'] === 'launch decided' && l['nodeClaim'] === name);

/** Provisioning runs (as the 1-minute schedule's) until `done` holds. */
async function runUntil<T>(what: string, done: () => Promise<T | undefined>): Promise<T> {
  let runs = 0;
  return waitFor(
    what,
    async () => {
      runs += 1;
      await e2e.run(`standalone-${e2e.id}-${runs}`);
      return done();
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}

describe('a standalone NodeClaim', () => {
  it('is launched from its own class and requirements, registered, spared by garbage collection, and terminated on delete', async () => {
    const { cluster, account } = e2e.env;
    const name = `standalone-${e2e.id}`;
    await applyNodeClaim(name);

    const launched = await runUntil('the standalone NodeClaim launched', async () => {
      const claim = await cluster.nodeClaim(name);
      return claim?.status.providerId === undefined ? undefined : claim;
    });
    // The finalizer is Flotilla's, added before the launch; the claim stays in no NodePool.
    expect(launched.finalizers).toContain(Finalizer.termination);
    expect(launched.nodePoolName).toBeUndefined();
    expect(isConditionTrue(launched.status.conditions, NodeClaimConditionType.launched)).toBe(true);
    // The cheapest m5 that holds 3 CPUs and 4Gi, on-demand, as its requirements ask.
    expect(launched.labels).toMatchObject({
      'node.kubernetes.io/instance-type': 'm5.xlarge',
      'karpenter.sh/capacity-type': 'on-demand',
      'karpenter.k8s.aws/instance-family': 'm5',
      team: 'batch',
    });
    // One launch; a run before the EC2NodeClass resolved only waited for it.
    const lines = launchLines(name);
    const [decision, ...again] = lines.filter((l) => l['outcome'] === 'launched');
    expect(again).toEqual([]);
    for (const waited of lines.filter((l) => l['outcome'] !== 'launched')) {
      expect(waited).toMatchObject({
        outcome: 'failed',
        error: `EC2NodeClass "${e2e.nodeClassName}" is not resolved yet`,
      });
    }
    expect(decision).toMatchObject({ reason: 'standalone', outcome: 'launched', instanceType: 'm5.xlarge' });
    expect(decision).not.toHaveProperty('nodePool');
    const instanceId = String(decision?.['instanceId']);
    const described = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    const tags = Object.fromEntries(
      (described.Reservations?.[0]?.Instances?.[0]?.Tags ?? []).map((t) => [t.Key, t.Value]),
    );
    // Tagged as Karpenter tags a standalone NodeClaim's instance: an empty NodePool.
    expect(tags).toMatchObject({ 'karpenter.sh/nodepool': '', 'karpenter.sh/nodeclaim': name, Name: name });

    // Its Node joins (the node simulator plays kubelet) and the lifecycle loop takes it.
    const initialized = await waitFor(
      'the standalone NodeClaim initialized',
      async () => {
        const claim = await cluster.nodeClaim(name);
        return claim !== undefined &&
          isConditionTrue(claim.status.conditions, NodeClaimConditionType.initialized)
          ? claim
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const node = await e2e.nodeOf(initialized.status.nodeName ?? '');
    expect(node.metadata?.labels).toMatchObject({ team: 'batch', [RUN_LABEL]: e2e.id });
    expect(node.metadata?.labels?.['karpenter.sh/nodepool']).toBeUndefined();
    expect(node.spec?.taints?.some((t) => t.key === 'karpenter.sh/unregistered')).not.toBe(true);
    // Once registered, its instance is named after its node, as Karpenter's tagging names it; the
    // NodeClaim is marked tagged after the tags are written, so both are waited for.
    const nodeName = initialized.status.nodeName ?? '';
    await waitFor(
      'the instance named after its node, and its NodeClaim marked tagged',
      async () => {
        const d = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
        const tag = d.Reservations?.[0]?.Instances?.[0]?.Tags?.find((t) => t.Key === 'Name')?.Value;
        const marked = (await cluster.nodeClaim(name))?.annotations['karpenter.k8s.aws/tagged'];
        return tag === nodeName && marked === 'true' ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );

    // Garbage collection counts it as any NodeClaim's instance: nothing is collected.
    await asLambda(e2e.env.server, 'garbage-collector', () => e2e.garbageCollector().pass());
    expect((await cluster.nodeClaim(name))?.deleting).toBe(false);
    const still = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    expect(still.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('running');

    // kubectl delete nodeclaim: termination drains the node and terminates the instance.
    await e2e.env.custom.deleteClusterCustomObject({ ...karpenter, name });
    const termination = e2e.terminationLambda();
    await waitFor(
      'the standalone NodeClaim gone',
      async () => {
        await asLambda(e2e.env.server, 'termination', () => termination.terminate(name));
        return (await cluster.nodeClaim(name)) === undefined ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const gone = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    expect(gone.Reservations?.[0]?.Instances?.[0]?.State?.Name).toMatch(/shutting-down|terminated/);
    progress(`standalone: ${name} launched as ${instanceId}, registered, terminated`);
  }, 180_000);

  it('is deleted with a Warning Event when nothing can launch it', async () => {
    const { cluster, core } = e2e.env;
    const noClass = `standalone-${e2e.id}-noclass`;
    const tooBig = `standalone-${e2e.id}-toobig`;
    await applyNodeClaim(noClass, {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: `missing-${e2e.id}` },
    });
    await applyNodeClaim(tooBig, { resources: { requests: { cpu: '4000' } } });
    await runUntil('both refused NodeClaims deleted', async () =>
      (await cluster.nodeClaim(noClass)) === undefined && (await cluster.nodeClaim(tooBig)) === undefined
        ? true
        : undefined,
    );
    const events = (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
      (e) => e.involvedObject.name === noClass || e.involvedObject.name === tooBig,
    );
    expect(events.map((e) => [e.involvedObject.name, e.reason, e.type]).sort()).toEqual(
      [
        [noClass, 'InsufficientCapacityError', 'Warning'],
        [tooBig, 'InsufficientCapacityError', 'Warning'],
      ].sort(),
    );
    expect(events.find((e) => e.involvedObject.name === noClass)?.message).toContain(
      `EC2NodeClass "missing-${e2e.id}" not found`,
    );
    expect(events.find((e) => e.involvedObject.name === tooBig)?.message).toContain(
      'satisfies the requirements and fits the requests',
    );
    for (const name of [noClass, tooBig]) {
      expect(launchLines(name)).toEqual([
        expect.objectContaining({ reason: 'standalone', outcome: 'insufficientCapacity' }),
      ]);
    }
  }, 120_000);

  it('is launched at once through the shim, with no scheduled run', async () => {
    const { server, account, cluster } = e2e.env;
    const queueUrl = account.stack.queueUrls.podEvents;
    const handler = makeProvisionerHandler({
      clusterName: CLUSTER,
      ...e2e.queuedProvisioner(queueUrl, { batchIdleMs: 300, batchMaxMs: 3_000 }),
    });
    stops.push(
      startQueueTrigger({
        sqs: new SQSClient(awsClientConfig(server)),
        queueUrl,
        row: provisionerFunction,
        queue: 'podEvents',
        invoke: (event) =>
          asLambda(server, 'provisioner', () =>
            handler(event, { awsRequestId: `queue-${Math.random().toString(16).slice(2, 10)}` }),
          ),
      }),
    );
    shim = await startShimProcess({
      server,
      kubeconfigPath: (await kube()).shimKubeconfigPath,
      clusterName: CLUSTER,
      queueUrl,
    });
    const name = `standalone-${e2e.id}-shim`;
    const appliedAt = Date.now();
    await applyNodeClaim(name, { resources: { requests: { cpu: '1' } } });
    const launched = await waitFor(
      'the standalone NodeClaim launched through the shim',
      async () => {
        const claim = await cluster.nodeClaim(name);
        return claim?.status.providerId === undefined ? undefined : claim;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(launched.labels['node.kubernetes.io/instance-type']).toBe('m5.large');
    expect(shim.output()).toContain('forwarded standalone NodeClaims');
    expect(launchLines(name)).toEqual([
      expect.objectContaining({ reason: 'standalone', outcome: 'launched' }),
    ]);
    progress(`standalone through the shim: launched ${Date.now() - appliedAt} ms after it was applied`);
  }, 90_000);
});
