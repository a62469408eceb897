import type { CreateFleetCommandInput } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { isConditionTrue } from '../../shared/core/index.ts';
import { waitFor } from '../harness/proc.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { noCapacityFor } from '../integration/aws/ice.ts';
import { launched, ProvisionerE2E, RUN_LABEL } from './provisioner-fixture.ts';

// Pods go Pending → the provisioner (in-process, as the Lambda runs it) creates NodeClaims and
// launches instances in moto → the node simulator registers their Nodes → the NodeClaim lifecycle
// registers and initializes them → kube-scheduler binds. See provisioner-fixture.ts for the scope.

const e2e = new ProvisionerE2E('provisioner');
const { id, namespace, nodeClassName, logLines } = e2e;
const createPool = e2e.createPool.bind(e2e);
const deploy = e2e.deploy.bind(e2e);
const run = (holder: string) => e2e.run(holder);
const podsOf = e2e.podsOf.bind(e2e);
const allRunning = e2e.allRunning.bind(e2e);
const instancesOf = e2e.instancesOf.bind(e2e);
const nodeClaimsOf = e2e.nodeClaimsOf.bind(e2e);
const nodePoolOfNode = e2e.nodePoolOfNode.bind(e2e);

describe('provisioner end to end (moto + kube-apiserver + kube-scheduler + node simulator)', () => {
  it('launches NodeClaims for a Deployment of 6 × 1 cpu and kube-scheduler runs every pod on them', async () => {
    const pool = await createPool('main', 'main', { instanceTypes: ['m5.large', 'm5.xlarge', 'm5.2xlarge'] });
    await deploy('main', 'web', 6, '1');

    const result = await run(`main-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.unschedulable.filter((u) => u.pod.namespace === namespace)).toEqual([]);
    const ours = result.claims.filter((c) => c.nodePool === pool);
    const launches = launched(ours);
    expect(launches.length).toBeGreaterThan(0);
    expect(launches.length).toBe(ours.length);
    expect(launches.flatMap((l) => l.pods.map((p) => p.name)).sort()).toEqual(
      (await podsOf('web')).map((p) => p.metadata?.name).sort(),
    );

    // NodeClaims are Launched with the instance's identity and resolved labels.
    const claims = await nodeClaimsOf(pool);
    expect(claims.map((c) => c.name).sort()).toEqual(launches.map((l) => l.nodeClaim).sort());
    for (const claim of claims) {
      const outcome = launches.find((l) => l.nodeClaim === claim.name);
      expect(claim.name).toMatch(new RegExp(`^${pool}-[0-9a-f]{10}$`));
      expect(claim.status.providerId).toBe(`aws:///${outcome?.zone}/${outcome?.instanceId}`);
      expect(claim.status.imageId).toBe(e2e.env.account.amis.amd64);
      expect(claim.status.conditions.find((c) => c.type === 'Launched')?.status).toBe('True');
      expect(claim.status.capacity?.['cpu']).toBeGreaterThan(0);
      expect(claim.labels).toMatchObject({
        'karpenter.sh/nodepool': pool,
        'karpenter.k8s.aws/ec2nodeclass': nodeClassName,
        'node.kubernetes.io/instance-type': outcome?.instanceType,
        'topology.kubernetes.io/zone': outcome?.zone,
        'karpenter.sh/capacity-type': 'on-demand',
        [RUN_LABEL]: id,
      });
      expect(claim.finalizers).toContain('karpenter.sh/termination');
    }

    // The instances in moto are tagged for the cluster, pool and claim.
    const instances = await instancesOf(pool);
    expect(instances).toHaveLength(launches.length);
    for (const instance of instances) {
      const tags = Object.fromEntries((instance.Tags ?? []).map((t) => [t.Key, t.Value]));
      expect(tags).toMatchObject({
        [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
        'karpenter.sh/nodepool': pool,
        'karpenter.k8s.aws/ec2nodeclass': nodeClassName,
      });
      expect(launches.map((l) => l.nodeClaim)).toContain(tags['karpenter.sh/nodeclaim']);
    }

    // The simulator registers their Nodes and kube-scheduler binds every pod there.
    const pods = await allRunning('web', 6);
    for (const p of pods) expect(await nodePoolOfNode(p.spec?.nodeName ?? '')).toBe(pool);

    // The lifecycle registered and initialized each NodeClaim and synced its Node.
    const ready = await waitFor(
      'NodeClaims Registered and Initialized',
      async () => {
        const current = await nodeClaimsOf(pool);
        const done = (c: (typeof current)[number]) =>
          isConditionTrue(c.status.conditions, 'Registered') &&
          isConditionTrue(c.status.conditions, 'Initialized');
        return current.every(done) ? current : undefined;
      },
      { timeoutMs: 15_000 },
    );
    for (const claim of ready) {
      const node = await e2e.nodeOf(claim.status.nodeName ?? '');
      expect(node.spec?.providerID).toBe(claim.status.providerId);
      expect(node.metadata?.labels).toMatchObject({
        'karpenter.sh/registered': 'true',
        'karpenter.sh/initialized': 'true',
        'karpenter.sh/nodepool': pool,
      });
      expect(node.metadata?.finalizers).toContain('karpenter.sh/termination');
      expect(node.spec?.taints?.some((t) => t.key === 'karpenter.sh/unregistered')).toBe(false);
    }

    // Each pod was told which NodeClaim it is for.
    const nominated = (await e2e.env.core.listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === 'Nominated',
    );
    expect(nominated.map((e) => e.involvedObject.name).sort()).toEqual(
      launches.flatMap((l) => l.pods.map((p) => p.name)).sort(),
    );
    for (const event of nominated) {
      const claim = launches.find((l) => l.pods.some((p) => p.name === event.involvedObject.name))?.nodeClaim;
      expect(event.message).toBe(`Pod should schedule on: nodeclaim/${claim}`);
    }

    const decisions = logLines.filter((l) => l['message'] === 'launch decided' && l['nodePool'] === pool);
    expect(decisions).toHaveLength(launches.length);
    expect(decisions[0]).toMatchObject({ outcome: 'launched', capacityType: 'on-demand' });
    expect(decisions[0]?.['instanceTypes']).toEqual(expect.arrayContaining([expect.stringMatching(/^m5\./)]));

    // A second run finds nothing left to do: no new claims, no new instances.
    const again = await run(`again-${id}`);
    // (Pods other test files left pending may still be provisionable, but none of ours.)
    const againClaims = again.kind === 'provisioned' ? again.claims : [];
    expect(againClaims.filter((c) => c.nodePool === pool)).toEqual([]);
    expect(await instancesOf(pool)).toHaveLength(launches.length);
  });

  it('routes pods by taints and tolerations to the right NodePool', async () => {
    const general = await createPool('taints', 'general', { instanceTypes: ['m5.large'] });
    const dedicated = await createPool('taints', 'dedicated', {
      instanceTypes: ['c5.large'],
      weight: 100,
      taints: [{ key: 'dedicated', value: 'batch', effect: 'NoSchedule' }],
    });
    // 1.5 cpu each: the two pods cannot share a node. The plain pod cannot go to the dedicated
    // pool despite its weight. The tolerating pod also selects its pool, as dedicated workloads do:
    // a toleration alone would let kube-scheduler bind it to the general node if that joined
    // first, leaving the plain pod nowhere to go.
    await deploy('taints', 'plain', 1, '1500m');
    await deploy('taints', 'batch', 1, '1500m', {
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' }],
      nodeSelector: { 'karpenter.sh/nodepool': dedicated },
    });

    const result = await run(`taints-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    const byPod = new Map(launched(result.claims).flatMap((l) => l.pods.map((p) => [p.name, l] as const)));
    const [plain] = await podsOf('plain');
    const [batch] = await podsOf('batch');
    expect(byPod.get(plain?.metadata?.name ?? '')).toMatchObject({
      nodePool: general,
      instanceType: 'm5.large',
    });
    expect(byPod.get(batch?.metadata?.name ?? '')).toMatchObject({
      nodePool: dedicated,
      instanceType: 'c5.large',
    });

    const [plainRunning] = await allRunning('plain', 1);
    const [batchRunning] = await allRunning('batch', 1);
    expect(await nodePoolOfNode(plainRunning?.spec?.nodeName ?? '')).toBe(general);
    expect(await nodePoolOfNode(batchRunning?.spec?.nodeName ?? '')).toBe(dedicated);
  });

  it('re-plans in the same run when the cheapest choice has no capacity', async () => {
    const preferred = await createPool('ice', 'preferred', { instanceTypes: ['t3.large'], weight: 90 });
    const fallback = await createPool('ice', 'fallback', { instanceTypes: ['m5.large'], weight: 10 });
    const restore = noCapacityFor(e2e.env.account.lambdaEc2, 't3.large');
    try {
      await deploy('ice', 'ice', 1, '1');
      const result = await run(`ice-${id}`);
      expect(result.kind).toBe('provisioned');
      if (result.kind !== 'provisioned') return;
      expect(result.rounds).toBe(2);
      const [first, second] = result.claims;
      expect(first).toMatchObject({ kind: 'insufficientCapacity', nodePool: preferred });
      expect(first?.kind === 'insufficientCapacity' ? first.offerings : []).toEqual(
        expect.arrayContaining(['on-demand:t3.large:us-east-1a']),
      );
      expect(second).toMatchObject({ kind: 'launched', nodePool: fallback, instanceType: 'm5.large' });
      expect(result.claims).toHaveLength(2);

      // The ICE'd claim is gone, with an event saying why; no t3.large was launched.
      expect(await nodeClaimsOf(preferred)).toEqual([]);
      expect(await instancesOf(preferred)).toEqual([]);
      const events = await e2e.env.core.listNamespacedEvent({ namespace: 'default' });
      expect(
        events.items.some(
          (e) => e.reason === 'InsufficientCapacityError' && e.involvedObject.name === first?.nodeClaim,
        ),
      ).toBe(true);
      const [pod] = await allRunning('ice', 1);
      expect(await nodePoolOfNode(pod?.spec?.nodeName ?? '')).toBe(fallback);
    } finally {
      restore();
    }
  });

  it('ten concurrent runs launch what one run would: the lease admits one decision at a time', async () => {
    const pool = await createPool('lease', 'lease', { instanceTypes: ['m5.xlarge'] });
    await deploy('lease', 'burst', 3, '1');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => run(`burst-${i}-${id}`)));

    expect(results.filter((r) => r.kind === 'skipped' && r.why === 'lease held').length).toBeGreaterThan(0);
    const launches = results.flatMap((r) => (r.kind === 'provisioned' ? launched(r.claims) : []));
    // 3 × 1 cpu fit one m5.xlarge (3.92 cpu allocatable).
    expect(launches).toHaveLength(1);
    expect(await instancesOf(pool)).toHaveLength(1);
    expect(await nodeClaimsOf(pool)).toHaveLength(1);
    await allRunning('burst', 3);
  });

  it('stops at the NodePool cpu limit and tells the remaining pods why', async () => {
    const pool = await createPool('limits', 'limited', {
      instanceTypes: ['m5.xlarge'],
      limits: { cpu: '4' },
    });
    await deploy('limits', 'capped', 6, '1');

    const result = await run(`limits-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims)).toHaveLength(1);
    expect(await instancesOf(pool)).toHaveLength(1);
    const stuck = result.unschedulable.filter((u) => u.pod.namespace === namespace);
    expect(stuck).toHaveLength(3);
    for (const u of stuck) {
      expect(u.reasons.find((r) => r.nodePool === pool)?.reason).toMatch(/limit/);
    }

    const events = await e2e.failedSchedulingEvents('capped', 3);
    expect(new Set(events.map((e) => e.involvedObject.name))).toEqual(new Set(stuck.map((u) => u.pod.name)));
    expect(events[0]?.message).toMatch(new RegExp(`${pool}.*limit`));
    // One unschedulable decision per reason: the three capped pods share theirs.
    expect(
      logLines.some(
        (l) =>
          l['message'] === 'pods unschedulable' &&
          l['decision'] === 'unschedulable' &&
          Number(l['podCount']) >= 3 &&
          String(l['reason']).includes(pool),
      ),
    ).toBe(true);

    const pods = await podsOf('capped');
    await waitFor(
      '3 capped pods Running',
      async () =>
        (await podsOf('capped')).filter((p) => p.status?.phase === 'Running').length === 3 ? true : undefined,
      { timeoutMs: 90_000 },
    );
    expect(pods).toHaveLength(6);

    // The NodePool status (written by the lifecycle's NodePool status pass) shows the usage that
    // reached spec.limits, next to a Ready condition: no separate "limit reached" condition exists.
    const status = await waitFor(
      'NodePool status counting the launched node',
      async () => {
        const found = (await e2e.env.cluster.nodePools()).items.find((p) => p.pool.name === pool);
        return found?.nodes === 1 ? found : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(status.resources?.['cpu']).toBe(4000);
    expect(status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });
});

describe('NodeOverlays applied as a user applies them (karpenter.sh/v1alpha1)', () => {
  const overlays = { group: 'karpenter.sh', version: 'v1alpha1', plural: 'nodeoverlays' };

  /** A NodeOverlay a user applies: `weight` 10, selecting `instanceType` in NodePool `pool` only. */
  async function applyOverlay(name: string, pool: string, instanceType: string, price: string) {
    await e2e.env.custom.createClusterCustomObject({
      ...overlays,
      body: {
        apiVersion: 'karpenter.sh/v1alpha1',
        kind: 'NodeOverlay',
        metadata: { name },
        spec: {
          weight: 10,
          requirements: [
            { key: 'karpenter.sh/nodepool', operator: 'In', values: [pool] },
            { key: 'node.kubernetes.io/instance-type', operator: 'In', values: [instanceType] },
          ],
          price,
        },
      },
    });
  }

  async function conditionsOf(name: string): Promise<Record<string, { status: string; reason: string }>> {
    const raw = (await e2e.env.custom.getClusterCustomObject({ ...overlays, name })) as {
      status?: { conditions?: { type: string; status: string; reason: string }[] };
    };
    return Object.fromEntries((raw.status?.conditions ?? []).map((c) => [c.type, c]));
  }

  it('launches the type a savings-plan price makes cheapest, and marks a same-weight rival as a conflict', async () => {
    const pool = await createPool('overlay', 'overlay', { instanceTypes: ['m5.large', 'm5.xlarge'] });
    // Same weight, same offerings: the later name applies first, so "savings" wins, "list-price" conflicts.
    const savings = `prov-${id}-savings`;
    const rival = `prov-${id}-list-price`;
    await applyOverlay(savings, pool, 'm5.xlarge', '0.001');
    await applyOverlay(rival, pool, 'm5.xlarge', '5');
    // The CreateFleet requests sent, as the SDK sends them (observed, not changed).
    const fleets: CreateFleetCommandInput[] = [];
    const observer = `fleets-${id}`;
    e2e.env.account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CreateFleetCommand') fleets.push(args.input as CreateFleetCommandInput);
        return next(args);
      },
      { step: 'initialize', name: observer },
    );
    try {
      await e2e.createPod('overlay', 'overlaid', 'overlaid-0', '500m');
      const result = await run(`overlay-${id}`);
      expect(result.kind).toBe('provisioned');
      if (result.kind !== 'provisioned') return;
      // Without the overlay m5.large is the cheaper fit for 500m.
      expect(launched(result.claims).filter((c) => c.nodePool === pool)).toEqual([
        expect.objectContaining({ instanceType: 'm5.xlarge', pricePerHour: 0.001 }),
      ]);
      // EC2 does not know the overlay's price: the fleet follows the plan's order instead.
      const fleet = fleets.find((f) =>
        f.LaunchTemplateConfigs?.some((c) => c.Overrides?.some((o) => o.InstanceType === 'm5.xlarge')),
      );
      expect(fleet?.OnDemandOptions?.AllocationStrategy).toBe('prioritized');
      const overrides = (fleet?.LaunchTemplateConfigs ?? []).flatMap((c) => c.Overrides ?? []);
      const first = overrides.find((o) => o.Priority === 0);
      expect(first?.InstanceType).toBe('m5.xlarge');

      // The controllers pass (the flotilla:controller identity) writes both overlays' status.
      const [won, lost] = await waitFor(
        'NodeOverlay status written',
        async () => {
          const both = await Promise.all([conditionsOf(savings), conditionsOf(rival)]);
          return both.every((c) => c['Ready'] !== undefined) ? both : undefined;
        },
        { timeoutMs: 15_000 },
      );
      expect(won).toMatchObject({
        ValidationSucceeded: { status: 'True', reason: 'ValidationSucceeded' },
        Ready: { status: 'True', reason: 'Ready' },
      });
      expect(lost).toMatchObject({
        ValidationSucceeded: { status: 'False', reason: 'Conflict' },
        Ready: { status: 'False', reason: 'UnhealthyDependents' },
      });
    } finally {
      e2e.env.account.lambdaEc2.middlewareStack.remove(observer);
      for (const name of [savings, rival])
        await e2e.env.custom.deleteClusterCustomObject({ ...overlays, name });
    }
  });
});
