import { GetInstanceProfileCommand, IAMClient } from '@aws-sdk/client-iam';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { managedInstanceProfileName } from '../../../shared/adapters/aws/instance-profile.ts';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { Finalizer } from '../../../shared/core/index.ts';
import { type ManualClock, makeManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { reconcileLifecycle } from '../../../shared/usecases/lifecycle/lifecycle.ts';
import { reconcileNodeClasses } from '../../../shared/usecases/nodeclass/nodeclass.ts';
import { reconcileReservedNodeClaims } from '../../../shared/usecases/nodeclass/reservations.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { STACK_NAMES } from '../../harness/aws/stack.ts';
import { forceDeleteNodeClaims } from '../../harness/cleanup.ts';
import { takeDenials } from '../../harness/iam-check.ts';
import { awsClientConfig, kube, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { waitFor } from '../../harness/proc.ts';

const SOON = { timeoutMs: 10_000 };

import { setUpAccount, TABLE } from '../aws/cloud-fixture.ts';
import {
  CLUSTER,
  DISCOVERY,
  K8S_VERSION,
  LAUNCH_SHAPING_SPEC,
  nodeClassObject,
  put,
  registerImage,
  SSM_PREFIX,
  setCapacityReservations,
} from '../aws/fixtures.ts';

// The EC2NodeClass controller's own tests, on the harness's API server (as the flotilla:controller
// group) and moto (as the provisioner's role): statuses written without any provisioning run,
// kept through AWS faults, refreshed, and finalized on deletion. EC2NodeClasses are applied as a
// user applies them; nothing here writes their status.

const classes = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' };
const pools = { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' };

let server: Moto;
let user: KubeConfig;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let cluster: Cluster;
let controller: KubeConfig;
let account: Awaited<ReturnType<typeof setUpAccount>>;
let clock: ManualClock;
let lines: Record<string, unknown>[];
let passes = 0;
const run = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  const cube = await kube();
  server = await moto();
  user = cube.userKubeConfig;
  custom = user.makeApiClient(CustomObjectsApi);
  core = user.makeApiClient(CoreV1Api);
  controller = cube.controllerKubeConfig;
  cluster = makeKubeCluster({
    connection: cube.controllerConnection(),
    logger: makeLogger({}, { sink: () => {} }),
  });
});

beforeEach(async () => {
  await resetMoto(server);
  clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
  account = await setUpAccount(server, clock);
  lines = [];
});

const logger = () => makeLogger({}, { level: 'debug', sink: (line) => lines.push(JSON.parse(line)) });

const applied: string[] = [];

/** A NodePool as a user applies it, for one EC2NodeClass and capacity type. */
const poolBody = (pool: string, nodeClass: string, capacityType = 'on-demand') => ({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: pool },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: nodeClass },
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: [capacityType] }],
      },
    },
  },
});

afterEach(async () => {
  // Uninstalled as a user would: deleted, then finalized by the controller.
  for (const name of applied.splice(0)) {
    await custom.deleteClusterCustomObject({ ...classes, name }).catch(() => undefined);
    await pass(name);
  }
});

/** One pass of the controller over `names`, as the provisioner's scheduled pass runs it. */
async function pass(...names: string[]) {
  passes += 1;
  const read = (await cluster.nodeClasses()).items.filter((c) => names.includes(c.name));
  return reconcileNodeClasses(
    {
      cluster,
      resolver: account.resolver,
      leases: new DynamoLeaseStore(account.as('provisioner').dynamodb, TABLE),
      clock,
      logger: logger(),
      metrics: quietMetrics,
    },
    { holder: `pass-${passes}`, scope: 'all' },
    { nodeClasses: read, nodeClaims: (await cluster.nodeClaims()).items },
  );
}

/** Applies an EC2NodeClass as a user does (kubectl apply): created, or its spec replaced. */
async function apply(name: string, spec: Record<string, unknown>): Promise<void> {
  const body = nodeClassObject(spec, name) as { metadata: Record<string, unknown> };
  delete body.metadata['generation'];
  try {
    const current = (await custom.getClusterCustomObject({ ...classes, name })) as {
      metadata: { resourceVersion: string };
    };
    await custom.replaceClusterCustomObject({
      ...classes,
      name,
      body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } },
    });
  } catch {
    await custom.createClusterCustomObject({ ...classes, body });
    applied.push(name);
  }
}

async function read(name: string): Promise<EC2NodeClass | undefined> {
  return (await cluster.nodeClasses()).items.find((c) => c.name === name);
}

const condition = (c: EC2NodeClass | undefined, type: string) =>
  c?.status?.conditions.find((x) => x.type === type);

async function events(name: string) {
  const list = await core.listNamespacedEvent({ namespace: 'default' });
  return list.items.filter((e) => e.involvedObject.kind === 'EC2NodeClass' && e.involvedObject.name === name);
}

describe('the EC2NodeClass controller', () => {
  it('writes the status of a class nobody resolved yet, with its finalizer, and follows a spec change in one pass', async () => {
    const name = `ready-${run}`;
    await apply(name, {});
    const first = await pass(name);
    expect(first.updated).toContain(name);
    const stored = await read(name);
    expect(stored?.finalizers).toContain(Finalizer.nodeClassTermination);
    expect(stored?.status?.subnets.map((s) => s.zone).sort()).toEqual([
      'us-east-1a',
      'us-east-1b',
      'us-east-1c',
    ]);
    expect(stored?.status?.amis).toHaveLength(3);
    expect(condition(stored, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 1 });

    // A user narrows the subnets: the new generation is resolved at once, lists replaced whole.
    await apply(name, { subnetSelectorTerms: [{ tags: { Name: 'private-us-east-1b' } }] });
    await pass(name);
    const narrowed = await read(name);
    expect(narrowed?.status?.subnets.map((s) => s.zone)).toEqual(['us-east-1b']);
    expect(condition(narrowed, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 2 });
  });

  it('says what to fix when a selector matches nothing, with an Event and a log line, and is Ready the pass after the fix', async () => {
    const name = `nosubnet-${run}`;
    await apply(name, { subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'wrong-cluster' } }] });
    await pass(name);
    const broken = await read(name);
    expect(condition(broken, 'SubnetsReady')).toMatchObject({ status: 'False', reason: 'SubnetsNotFound' });
    expect(condition(broken, 'SubnetsReady')?.message).toContain('wrong-cluster');
    expect(condition(broken, 'Ready')).toMatchObject({ status: 'False', reason: 'NotReady' });
    const warnings = await waitFor(
      `the Warning Event of ${name}`,
      async () => {
        const found = (await events(name)).filter((e) => e.type === 'Warning');
        return found.length > 0 ? found : undefined;
      },
      SOON,
    );
    expect(warnings[0]?.reason).toBe('SubnetsNotFound');
    expect(warnings[0]?.message).toContain('wrong-cluster');
    const resolved = lines.filter((l) => l['message'] === 'ec2NodeClass resolved' && l['nodeClass'] === name);
    expect(resolved).toHaveLength(1);
    expect(resolved[0]?.['ready']).toBe('False');

    await apply(name, { subnetSelectorTerms: [{ tags: DISCOVERY }] });
    await pass(name);
    expect(condition(await read(name), 'Ready')?.status).toBe('True');
  });

  it('takes a Karpenter v1 class with EFA interfaces, RAID0, IP prefixes, CPU options, context and a placement group, and says why it is not Ready', async () => {
    const name = `efa-${run}`;
    const launchShaping = LAUNCH_SHAPING_SPEC;
    await apply(name, { ...launchShaping, placementGroupSelector: { name: 'training' } });
    await pass(name);
    const stored = await read(name);
    // The API server keeps every field (the CRD has them) and Flotilla reads them all.
    expect(stored?.spec).toMatchObject({ ...launchShaping, placementGroupSelector: { name: 'training' } });
    expect(stored?.unsupportedFields).toBeUndefined();
    expect(condition(stored, 'ValidationSucceeded')?.status).toBe('True');
    // moto has no placement-group API (its answer reads as AWS failing for now): not Ready, and why.
    expect(condition(stored, 'PlacementGroupReady')).toMatchObject({
      status: 'Unknown',
      reason: 'AwaitingResolution',
    });
    expect(condition(stored, 'Ready')?.message).toContain('ec2:DescribePlacementGroups');
    const warning = await waitFor(
      `the Warning Event of ${name}`,
      async () => (await events(name)).find((e) => e.type === 'Warning'),
      SOON,
    );
    expect(warning.reason).toBe('AwaitingResolution');
    expect(warning.message).toContain('PlacementGroupReady=Unknown');

    // Without the selector the class is Ready, and the placement-group condition leaves its status.
    await apply(name, launchShaping);
    await pass(name);
    const ready = await read(name);
    expect(condition(ready, 'Ready')?.status).toBe('True');
    expect(condition(ready, 'PlacementGroupReady')).toBeUndefined();
    expect(takeDenials()).toEqual([]);
  });

  it('reads a Karpenter v1.15 open spec.kubelet map, refuses a bad one with Karpenter’s reason, and is Ready once it is fixed', async () => {
    const name = `kubelet-${run}`;
    await apply(name, { kubelet: { maxPods: 110, notAKubeletField: true, shutdownGracePeriod: 30 } });
    await pass(name);
    const refused = await read(name);
    // The API server keeps the whole map; Flotilla reads the class and says what is wrong with it.
    expect(refused?.spec.kubelet).toEqual({
      maxPods: 110,
      unmanaged: { notAKubeletField: true, shutdownGracePeriod: 30 },
    });
    expect(condition(refused, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'InvalidKubeletConfiguration',
    });
    expect(condition(refused, 'ValidationSucceeded')?.message).toContain('spec.kubelet.notAKubeletField');
    expect(condition(refused, 'ValidationSucceeded')?.message).toContain('spec.kubelet.shutdownGracePeriod');
    expect(condition(refused, 'Ready')?.status).toBe('False');

    await apply(name, { kubelet: { maxPods: 'vcpus * 4' } });
    await pass(name);
    expect(condition(await read(name), 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'KubeletExpressionsDisabled',
    });

    const kubelet = {
      maxPods: 110,
      shutdownGracePeriod: '30s',
      featureGates: { InPlacePodVerticalScaling: true },
    };
    await apply(name, { kubelet });
    await pass(name);
    const fixed = await read(name);
    expect(fixed?.spec.kubelet).toEqual({
      maxPods: 110,
      unmanaged: { shutdownGracePeriod: '30s', featureGates: { InPlacePodVerticalScaling: true } },
    });
    expect(condition(fixed, 'ValidationSucceeded')?.status).toBe('True');
    expect(condition(fixed, 'Ready')?.status).toBe('True');
  });

  it('keeps the last good status while DescribeSubnets is throttled, and resolves again once it recovers', async () => {
    const name = `throttled-${run}`;
    await apply(name, {});
    await pass(name);
    const good = await read(name);
    expect(condition(good, 'Ready')?.status).toBe('True');

    // AWS throttles every DescribeSubnets (beyond the SDK's own retries) for a while.
    let throttled = 0;
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'DescribeSubnetsCommand') return next(args);
        throttled += 1;
        throw Object.assign(new Error('Request limit exceeded.'), {
          name: 'RequestLimitExceeded',
          $fault: 'client',
          $metadata: { httpStatusCode: 503 },
        });
      },
      { step: 'initialize', name: 'throttle-subnets' },
    );
    clock.advance(61_000);
    const during = await pass(name);
    expect(throttled).toBeGreaterThan(0);
    expect(during.retrying).toEqual([{ nodeClass: name, conditions: ['SubnetsReady'] }]);
    const kept = await read(name);
    expect(kept?.status).toEqual(good?.status);

    // Once it recovers, the very next pass resolves again (no refresh period to wait out).
    account.lambdaEc2.middlewareStack.remove('throttle-subnets');
    clock.advance(1_000);
    const after = await pass(name);
    expect(after.resolved).toContain(name);
    expect(after.retrying).toEqual([]);
    expect(condition(await read(name), 'Ready')?.status).toBe('True');
  });

  it('picks up an AMI newly published under its alias at the next refresh, not before', async () => {
    const name = `refresh-${run}`;
    await apply(name, {});
    await pass(name);
    const before = (await read(name))?.status?.amis.map((a) => a.id) ?? [];

    const newer = await registerImage(
      account.ec2,
      `amazon-eks-node-al2023-x86_64-standard-${K8S_VERSION}-v20261201`,
    );
    await put(
      account.ssm,
      `${SSM_PREFIX}/eks/optimized-ami/${K8S_VERSION}/amazon-linux-2023/x86_64/standard/recommended/image_id`,
      newer,
    );
    clock.advance(30_000);
    const early = await pass(name);
    expect(early.resolved).not.toContain(name);
    expect((await read(name))?.status?.amis.map((a) => a.id)).toEqual(before);

    clock.advance(31_000);
    const due = await pass(name);
    expect(due.updated).toContain(name);
    const amis = (await read(name))?.status?.amis.map((a) => a.id) ?? [];
    expect(amis).toContain(newer);
    expect(amis).not.toContain(account.amis.amd64);
  });

  it('waits on deletion while a NodeClaim uses the class, then removes the instance profile it made and its finalizer', async () => {
    const name = `deleting-${run}`;
    await apply(name, { instanceProfile: undefined, role: STACK_NAMES.nodeRole });
    await pass(name);
    const profile = managedInstanceProfileName(CLUSTER, 'us-east-1', name);
    const iam = new IAMClient(awsClientConfig(server));
    expect(
      (await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: profile }))).InstanceProfile
        ?.Roles?.[0]?.RoleName,
    ).toBe(STACK_NAMES.nodeRole);
    expect((await read(name))?.status?.instanceProfile).toBe(profile);

    const claim = `${name}-claim`;
    await cluster.createNodeClaim(
      newNodeClaim(claim, {
        nodePool: { name: `pool-${run}`, uid: '00000000-0000-0000-0000-000000000000' },
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name },
      }),
    );
    await custom.deleteClusterCustomObject({ ...classes, name });
    const waiting = await pass(name);
    expect(waiting.waiting).toEqual([name]);
    expect((await read(name))?.deleting).toBe(true);
    const waitingEvent = await waitFor(
      'the WaitingOnNodeClaimTermination Event',
      async () => (await events(name)).find((e) => e.reason === 'WaitingOnNodeClaimTermination'),
      SOON,
    );
    expect(waitingEvent.message).toContain(claim);

    await forceDeleteNodeClaims(controller, [claim]);
    const finalized = await pass(name);
    expect(finalized.finalized).toEqual([name]);
    expect(await read(name)).toBeUndefined();
    const gone = await iam
      .send(new GetInstanceProfileCommand({ InstanceProfileName: profile }))
      .catch((e: Error) => e);
    expect((gone as Error).name).toBe('NoSuchEntityException');
  });

  it('reports a class whose role Flotilla may not use on that class alone; the others keep working', async () => {
    const bad = `norole-${run}`;
    const good = `fine-${run}`;
    await apply(bad, { instanceProfile: undefined, role: 'no-such-role' });
    await apply(good, {});
    const result = await pass(bad, good);
    // IAM refuses to let the provisioner pass a role other than the stack's node role to EC2, as
    // AWS would; that refusal is what this test is about.
    expect(takeDenials()).toEqual([
      expect.objectContaining({ lambda: 'provisioner', call: 'iam:AddRoleToInstanceProfile' }),
    ]);
    expect(result.failed).toEqual([]);
    expect(condition(await read(bad), 'InstanceProfileReady')).toMatchObject({
      status: 'False',
      reason: 'NodeRoleNotAllowed',
    });
    expect(condition(await read(bad), 'InstanceProfileReady')?.message).toContain('NodeRoleName');
    expect(condition(await read(good), 'Ready')?.status).toBe('True');
    const warning = await waitFor(
      'the Warning Event of the class without a role',
      async () => (await events(bad)).find((e) => e.type === 'Warning'),
      SOON,
    );
    expect(warning.reason).toBe('NodeRoleNotAllowed');
  });
  it('writes the capacity reservations a class selects through the CRD, and removes them with the terms', async () => {
    const name = `reserved-${run}`;
    await setCapacityReservations(server.endpoint, [
      {
        id: 'cr-0a1b2c3d4e5f60009',
        instanceType: 'm5.large',
        availabilityZone: 'us-east-1a',
        tags: { team: 'ml' },
      },
    ]);
    await apply(name, { capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }] });
    await pass(name);
    const stored = await read(name);
    expect(stored?.status?.capacityReservations).toEqual([
      {
        id: 'cr-0a1b2c3d4e5f60009',
        availabilityZone: 'us-east-1a',
        instanceType: 'm5.large',
        instanceMatchCriteria: 'open',
        ownerID: '123456789012',
        reservationType: 'default',
        state: 'active',
      },
    ]);
    expect(condition(stored, 'CapacityReservationsReady')).toMatchObject({ status: 'True' });
    expect(condition(stored, 'Ready')).toMatchObject({ status: 'True' });

    await apply(name, {});
    await pass(name);
    const cleared = await read(name);
    expect(cleared?.status?.capacityReservations).toBeUndefined();
    expect(condition(cleared, 'CapacityReservationsReady')).toBeUndefined();
  });

  it('relabels on-demand the NodeClaim of a reservation that ended and deletes the one of an ending capacity block', async () => {
    const ended = `cr-ended-${run}`;
    const block = `cr-block-${run}`;
    const active = `cr-active-${run}`;
    const unknown = `cr-unknown-${run}`;
    const ids = {
      ended: 'cr-0a1b2c3d4e5f60011',
      block: 'cr-0a1b2c3d4e5f60012',
      active: 'cr-0a1b2c3d4e5f60013',
      unknown: 'cr-0a1b2c3d4e5f60014',
    };
    await setCapacityReservations(server.endpoint, [
      { id: ids.ended, instanceType: 'm5.large', availabilityZone: 'us-east-1a', state: 'expired' },
      {
        id: ids.block,
        instanceType: 'p5.48xlarge',
        availabilityZone: 'us-east-1a',
        reservationType: 'capacity-block',
        endDate: new Date(clock.now().getTime() + 30 * 60_000).toISOString(),
      },
      { id: ids.active, instanceType: 'm5.large', availabilityZone: 'us-east-1a' },
    ]);
    const reserved = (id: string, type: string) => ({
      'karpenter.sh/capacity-type': 'reserved',
      'karpenter.k8s.aws/capacity-reservation-id': id,
      'karpenter.k8s.aws/capacity-reservation-type': type,
    });
    const claims = { [ended]: ids.ended, [block]: ids.block, [active]: ids.active, [unknown]: ids.unknown };
    // Their NodePool, as a user applies it: a NodeClaim owned by a NodePool that does not exist is
    // deleted by the garbage collector.
    const pool = `cr-pool-${run}`;
    const created = (await custom.createClusterCustomObject({
      ...pools,
      body: poolBody(pool, 'default', 'reserved'),
    })) as { metadata: { uid: string } };
    // As the provisioner creates them for launches into the reservations.
    for (const [claim, id] of Object.entries(claims)) {
      await cluster.createNodeClaim(
        newNodeClaim(claim, {
          nodePool: { name: pool, uid: created.metadata.uid },
          labels: reserved(id, id === ids.block ? 'capacity-block' : 'default'),
        }),
      );
    }
    try {
      const result = await reconcileReservedNodeClaims(
        { cluster, resolver: account.resolver, clock, logger: logger(), metrics: quietMetrics },
        { nodeClaims: (await cluster.nodeClaims()).items.filter((c) => c.name in claims), nodes: [] },
      );
      expect(result).toEqual({ relabelled: [ended], expired: [block] });
      const after = new Map((await cluster.nodeClaims()).items.map((c) => [c.name, c]));
      expect(after.get(ended)?.labels['karpenter.sh/capacity-type']).toBe('on-demand');
      expect(after.get(ended)?.labels['karpenter.k8s.aws/capacity-reservation-id']).toBeUndefined();
      expect(after.get(ended)?.deleting).toBe(false);
      expect(after.get(block)?.deleting).toBe(true);
      // An active reservation, and one EC2 does not know, leave their NodeClaims as they are.
      expect(after.get(active)?.labels).toMatchObject(reserved(ids.active, 'default'));
      expect(after.get(unknown)?.labels).toMatchObject(reserved(ids.unknown, 'default'));
      expect(lines.filter((l) => l['decision'] === 'reservationEnd').map((l) => l['action'])).toEqual([
        'deleteNodeClaim',
        'relabelOnDemand',
      ]);
    } finally {
      await forceDeleteNodeClaims(controller, Object.keys(claims));
      await custom.deleteClusterCustomObject({ ...pools, name: pool });
    }
  });
});

describe('NodePool status without any provisioning run', () => {
  it('is Ready once its class is, and names a missing class in its condition, an Event and one log line', async () => {
    const name = `pooled-${run}`;
    await apply(name, {});
    const ok = `ok-${run}`;
    const orphan = `orphan-${run}`;
    await custom.createClusterCustomObject({ ...pools, body: poolBody(ok, name) });
    await custom.createClusterCustomObject({ ...pools, body: poolBody(orphan, `missing-${run}`) });
    try {
      passes += 1;
      await reconcileLifecycle(
        {
          cluster,
          logger: logger(),
          metrics: quietMetrics,
          nodeClasses: {
            resolver: account.resolver,
            leases: new DynamoLeaseStore(account.as('provisioner').dynamodb, TABLE),
            clock,
            holder: `lifecycle-${passes}`,
          },
        },
        clock.now(),
      );
      const stored = (await cluster.nodePools()).items;
      const ready = (pool: string) =>
        stored.find((p) => p.pool.name === pool)?.conditions.find((c) => c.type === 'Ready');
      const nodeClassReady = (pool: string) =>
        stored.find((p) => p.pool.name === pool)?.conditions.find((c) => c.type === 'NodeClassReady');
      expect(ready(ok)?.status).toBe('True');
      expect(nodeClassReady(orphan)).toMatchObject({ status: 'False', reason: 'NodeClassNotFound' });
      expect(nodeClassReady(orphan)?.message).toContain(`missing-${run}`);
      expect(ready(orphan)).toMatchObject({ status: 'False', reason: 'NodeClassNotFound' });
      const event = await waitFor(
        'the Warning Event of the orphaned NodePool',
        async () => {
          const list = await core.listNamespacedEvent({ namespace: 'default' });
          return list.items.find(
            (e) => e.involvedObject.kind === 'NodePool' && e.involvedObject.name === orphan,
          );
        },
        SOON,
      );
      expect(event.reason).toBe('NodeClassNotFound');
      const logged = lines.filter(
        (l) => l['message'] === 'updated nodepool status' && l['nodePool'] === orphan,
      );
      expect(logged).toHaveLength(1);
      expect(String(logged[0]?.['reason'])).toContain(`missing-${run}`);
    } finally {
      await custom.deleteClusterCustomObject({ ...pools, name: ok }).catch(() => undefined);
      await custom.deleteClusterCustomObject({ ...pools, name: orphan }).catch(() => undefined);
    }
  });
});
