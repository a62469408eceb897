import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isConditionTrue } from '../../shared/core/index.ts';
import type { Lease } from '../../shared/ports/lease.ts';
import type { ProvisionResult } from '../../shared/usecases/provisioning/provision.ts';
import { quietMetrics } from '../fixtures/metrics.ts';
import { terminateThroughFlotilla } from '../harness/cleanup.ts';
import { waitFor } from '../harness/proc.ts';
import { silentLogger } from '../integration/aws/fixtures.ts';
import { noCapacityFor } from '../integration/aws/ice.ts';
import { disruptionLambdaPass, relabelNodePool } from './disruption-lambda.ts';
import { countCalls, launched, ProvisionerE2E, ZONE_LABEL } from './provisioner-fixture.ts';

// More of the provisioner end to end (see provisioner-fixture.ts): the batching windows, lease
// fencing, zone spread, GPUs, startup taints, the spot to on-demand fallback and static NodePools.

const e2e = new ProvisionerE2E('provisioner-more');
const { id } = e2e;

function provisioned(result: ProvisionResult) {
  expect(result.kind).toBe('provisioned');
  if (result.kind !== 'provisioned') throw new Error(`run was ${result.kind}: ${result.why}`);
  return result;
}

/**
 * The node's agent lifting its startup taint as `kubectl taint node <node> <key>:<effect>-` does
 * (read, then the taints without it), with the cluster user's identity: Flotilla never removes a
 * startup taint.
 */
async function agentRemovesTaint(nodeName: string, taint: { key: string; effect: string }): Promise<void> {
  const node = await e2e.env.core.readNode({ name: nodeName });
  const taints = (node.spec?.taints ?? []).filter((t) => !(t.key === taint.key && t.effect === taint.effect));
  await e2e.env.core.patchNode(
    { name: nodeName, body: { spec: { taints } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

function batchLog(holder: string) {
  return e2e.logLines.filter((l) => l['message'] === 'batch closed' && l['holder'] === holder);
}

describe('provisioner batching windows (real API server, pods created during the batch)', () => {
  it('keeps the batch open for a pod created inside the idle window, then closes it after a quiet one', async () => {
    const pool = await e2e.createPool('idle', 'idle', { instanceTypes: ['m5.xlarge'] });
    await e2e.createPod('idle', 'idle', 'idle-first', '500m');
    const holder = `idle-${id}`;
    let waits = 0;
    // Real waits; the first one sees a pod arrive 200 ms in (created and marked Unschedulable by
    // kube-scheduler before the wait ends).
    const waitAndArrive = async (ms: number) => {
      waits += 1;
      const began = Date.now();
      if (waits === 1) {
        await sleep(200);
        await e2e.createPod('idle', 'idle', 'idle-in-window', '500m');
      }
      await sleep(Math.max(0, ms - (Date.now() - began)));
    };

    const result = provisioned(await e2e.run(holder, { batchIdleMs: 1_000 }, { sleep: waitAndArrive }));

    // The arrival kept the batch open for one more idle window, which then closed it.
    expect(waits).toBe(2);
    expect(batchLog(holder)).toEqual([
      expect.objectContaining({ decision: 'batch', reason: 'idle', batchIdleMs: 1_000 }),
    ]);
    expect(Number(batchLog(holder)[0]?.['podCount'])).toBeGreaterThanOrEqual(2);
    const ours = launched(result.claims).filter((c) => c.nodePool === pool);
    expect(ours).toHaveLength(1);
    expect(ours[0]?.pods.map((p) => p.name).sort()).toEqual(['idle-first', 'idle-in-window']);
  });

  it('closes the batch after batchMaxMs while pods keep arriving, with every arrival in it', async () => {
    const pool = await e2e.createPool('max', 'max', { instanceTypes: ['m5.xlarge'] });
    await e2e.createPod('max', 'stream', 'stream-0', '100m');
    const holder = `max-${id}`;
    const arrivals: string[] = [];
    // Every wait sees a new pod arrive, so the idle window never passes quietly.
    const waitAndArrive = async (ms: number) => {
      const began = Date.now();
      const name = `stream-${arrivals.length + 1}`;
      await e2e.createPod('max', 'stream', name, '100m');
      arrivals.push(name);
      await sleep(Math.max(0, ms - (Date.now() - began)));
    };

    const result = provisioned(
      await e2e.run(holder, { batchIdleMs: 500, batchMaxMs: 2_500 }, { sleep: waitAndArrive }),
    );

    expect(arrivals.length).toBeGreaterThanOrEqual(2);
    expect(batchLog(holder)).toEqual([
      expect.objectContaining({ decision: 'batch', reason: 'max', batchMaxMs: 2_500 }),
    ]);
    const ours = launched(result.claims).filter((c) => c.nodePool === pool);
    expect(ours).toHaveLength(1);
    expect(ours[0]?.pods.map((p) => p.name).sort()).toEqual(['stream-0', ...arrivals].sort());
  });
});

describe('provisioner lease fencing (DynamoDB lease store on moto)', () => {
  async function fencedRun(
    pool: string,
    holder: string,
    leaseName: string,
    sleepFor: (ms: number) => Promise<void>,
  ) {
    const fleets = countCalls(e2e.env.account.lambdaEc2, 'CreateFleetCommand');
    try {
      const result = provisioned(
        await e2e.run(holder, { leaseName, leaseTtlSeconds: 1, batchIdleMs: 300 }, { sleep: sleepFor }),
      );
      // The claim was planned and created, but the lease check before the launch stopped it.
      expect(result.leaseLost).toBe(true);
      expect(result.claims).toEqual([expect.objectContaining({ kind: 'fenced', nodePool: pool })]);
      expect(fleets.count()).toBe(0);
    } finally {
      fleets.stop();
    }
    expect(await e2e.nodeClaimsOf(pool)).toEqual([]);
    expect(await e2e.instancesOf(pool)).toEqual([]);
    expect(
      e2e.logLines.some(
        (l) => l['message'] === 'launch decided' && l['holder'] === holder && l['outcome'] === 'fenced',
      ),
    ).toBe(true);
  }

  it('makes no EC2 call once another holder took the expired lease during the batch', async () => {
    const pool = await e2e.createPool('stolen', 'stolen', { instanceTypes: ['m5.large'] });
    await e2e.deploy('stolen', 'stolen', 1, '500m');
    const leases = e2e.leases();
    const leaseName = `stolen#${id}`;
    let thief: Lease | undefined;
    // After the batch's first wait, another invocation takes the lease as soon as it has expired.
    const waitWhileStolen = async (ms: number) => {
      await sleep(ms);
      thief ??= await waitFor(
        'the lease taken by another holder',
        () => leases.acquire(leaseName, `thief-${id}`, new Date(), 60),
        { timeoutMs: 10_000, intervalMs: 100 },
      );
    };

    await fencedRun(pool, `stolen-${id}`, leaseName, waitWhileStolen);
    expect(thief?.holder).toBe(`thief-${id}`);

    // While the other holder keeps it, runs are refused; once it lets go, the pod gets its node.
    expect(await e2e.run(`refused-${id}`, { leaseName })).toEqual({ kind: 'skipped', why: 'lease held' });
    if (thief !== undefined) await leases.release(thief);
    const next = provisioned(await e2e.run(`next-${id}`, { leaseName }));
    expect(launched(next.claims).filter((c) => c.nodePool === pool)).toHaveLength(1);
    await e2e.allRunning('stolen', 1);
  });

  it('lets a run that may wait for the lease go once the holder lets go, instead of skipping', async () => {
    const pool = await e2e.createPool('turns', 'turns', { instanceTypes: ['m5.large'] });
    await e2e.createPod('turns', 'turns', 'turns-0', '1500m');
    const leaseName = `turns#${id}`;
    const leases = e2e.leases();
    const holder = await leases.acquire(leaseName, `holder-${id}`, new Date(), 60);
    expect(holder).toBeDefined();
    const patient = e2e.run(`patient-${id}`, { leaseName, batchIdleMs: 200, leaseWaitMs: 30_000 });
    expect(await e2e.run(`impatient-${id}`, { leaseName, batchIdleMs: 200 })).toEqual({
      kind: 'skipped',
      why: 'lease held',
    });
    if (holder !== undefined) await leases.release(holder);
    const result = provisioned(await patient);
    expect(
      launched(result.claims)
        .filter((c) => c.nodePool === pool)
        .flatMap((c) => c.pods.map((p) => p.name)),
    ).toEqual(['turns-0']);
    await e2e.allRunning('turns', 1);
  });

  it('makes no EC2 call when the lease expired during the batch', async () => {
    const pool = await e2e.createPool('expired', 'expired', { instanceTypes: ['m5.large'] });
    await e2e.deploy('expired', 'expired', 1, '500m');
    // The lease lasts 1 s; the batch's quiet window lasts longer.
    await fencedRun(pool, `expired-${id}`, `expired#${id}`, (ms) => sleep(Math.max(ms, 1_500)));
  });
});

describe('provisioner placement end to end', () => {
  it('spreads pods with a zone topology spread over nodes in three zones', async () => {
    const pool = await e2e.createPool('spread', 'spread', { instanceTypes: ['m5.large'] });
    // 1.5 cpu each: one pod per m5.large, so kube-scheduler can only follow the planned nodes.
    await e2e.deploy('spread', 'spread', 3, '1500m', { spreadOverZones: true });

    const result = provisioned(await e2e.run(`spread-${id}`));
    const ours = launched(result.claims).filter((c) => c.nodePool === pool);
    expect(ours).toHaveLength(3);
    expect(ours.map((c) => c.zone).sort()).toEqual(['us-east-1a', 'us-east-1b', 'us-east-1c']);
    const instances = await e2e.instancesOf(pool);
    expect(instances.map((i) => i.Placement?.AvailabilityZone).sort()).toEqual([
      'us-east-1a',
      'us-east-1b',
      'us-east-1c',
    ]);

    const pods = await e2e.allRunning('spread', 3);
    const zones = await Promise.all(
      pods.map(async (p) => (await e2e.nodeOf(p.spec?.nodeName ?? '')).metadata?.labels?.[ZONE_LABEL]),
    );
    expect(zones.sort()).toEqual(['us-east-1a', 'us-east-1b', 'us-east-1c']);
  });

  it('launches a GPU instance type with the NVIDIA AMI for a pod requesting a GPU', async () => {
    const pool = await e2e.createPool('gpu', 'gpu', {
      instanceTypes: ['m5.large', 'm5.xlarge', 'g4dn.xlarge'],
    });
    await e2e.deploy('gpu', 'cuda', 1, '500m', { gpus: 1 });

    const result = provisioned(await e2e.run(`gpu-${id}`));
    const [claim] = launched(result.claims).filter((c) => c.nodePool === pool);
    expect(claim).toMatchObject({ instanceType: 'g4dn.xlarge' });
    const [stored] = await e2e.nodeClaimsOf(pool);
    expect(stored?.status.imageId).toBe(e2e.env.account.amis.nvidia);
    expect(stored?.labels['karpenter.k8s.aws/instance-gpu-count']).toBe('1');

    // Initialized only once the node reports the GPU; then the pod runs there.
    const [pod] = await e2e.allRunning('cuda', 1);
    const node = await e2e.nodeOf(pod?.spec?.nodeName ?? '');
    expect(node.metadata?.labels?.['node.kubernetes.io/instance-type']).toBe('g4dn.xlarge');
    expect(node.status?.allocatable?.['nvidia.com/gpu']).toBe('1');
    // The lifecycle pass that lifts the registration taint may initialize the claim a pass later.
    const initialized = await waitFor(
      'the GPU NodeClaim Initialized',
      async () => {
        const [c] = await e2e.nodeClaimsOf(pool);
        return isConditionTrue(c?.status.conditions ?? [], 'Initialized') ? c : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(initialized.status.allocatable?.['nvidia.com/gpu']).toBe(1);
  });

  it('launches no second node while the first waits for its startup taint to go', async () => {
    const agentTaint = { key: 'flotilla-e2e/agent-not-ready', effect: 'NoSchedule' } as const;
    const pool = await e2e.createPool('startup', 'startup', {
      instanceTypes: ['m5.xlarge'],
      startupTaints: [agentTaint],
    });
    await e2e.deploy('startup', 'agent-wait', 2, '1');
    const ourClaims = (r: ProvisionResult) =>
      (r.kind === 'provisioned' ? r.claims : []).filter((c) => c.nodePool === pool);

    const first = provisioned(await e2e.run(`startup-${id}`));
    expect(launched(ourClaims(first))).toHaveLength(1);
    // Triggered again while the NodeClaim is in flight: nothing new.
    expect(ourClaims(await e2e.run(`in-flight-${id}`))).toEqual([]);

    // The Node registers carrying the startup taint: Registered, but not Initialized.
    const waiting = await waitFor(
      'NodeClaim registered and waiting for its startup taint',
      async () => {
        const [claim] = await e2e.nodeClaimsOf(pool);
        const initialized = claim?.status.conditions.find((c) => c.type === 'Initialized');
        return claim !== undefined &&
          isConditionTrue(claim.status.conditions, 'Registered') &&
          initialized?.reason === 'StartupTaintsExist'
          ? claim
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const nodeName = waiting.status.nodeName ?? '';
    const node = await e2e.nodeOf(nodeName);
    expect(node.spec?.taints).toEqual(expect.arrayContaining([expect.objectContaining(agentTaint)]));
    expect(node.spec?.taints?.some((t) => t.key === 'karpenter.sh/unregistered')).toBe(false);
    expect(node.metadata?.labels?.['karpenter.sh/initialized']).toBeUndefined();

    // The pods stay Pending behind the taint; a run now counts the uninitialized node as their capacity.
    expect((await e2e.podsOf('agent-wait')).every((p) => p.spec?.nodeName === undefined)).toBe(true);
    const during = provisioned(await e2e.run(`during-startup-${id}`));
    expect(ourClaims(during)).toEqual([]);
    expect(during.unschedulable.filter((u) => u.pod.name.startsWith('agent-wait-'))).toEqual([]);

    // The agent removes its taint a few seconds after registration.
    const agent = sleep(2_000).then(() => agentRemovesTaint(nodeName, agentTaint));
    const pods = await e2e.allRunning('agent-wait', 2);
    await agent;
    expect(new Set(pods.map((p) => p.spec?.nodeName))).toEqual(new Set([nodeName]));
    const initialized = await waitFor(
      'NodeClaim Initialized',
      async () => {
        const [claim] = await e2e.nodeClaimsOf(pool);
        return claim !== undefined && isConditionTrue(claim.status.conditions, 'Initialized')
          ? claim
          : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(initialized.name).toBe(waiting.name);
    expect(await e2e.instancesOf(pool)).toHaveLength(1);
    expect(await e2e.nodeClaimsOf(pool)).toHaveLength(1);
  });

  it('falls back from spot to on-demand in the same run when spot has no capacity', async () => {
    const pool = await e2e.createPool('spot', 'spot', {
      instanceTypes: ['m5.large'],
      capacityTypes: ['spot', 'on-demand'],
    });
    const restore = noCapacityFor(e2e.env.account.lambdaEc2, 'm5.large', undefined, 'spot');
    try {
      await e2e.deploy('spot', 'spot', 1, '1');
      const result = provisioned(await e2e.run(`spot-${id}`));
      const ours = result.claims.filter((c) => c.nodePool === pool);
      expect(result.rounds).toBe(2);
      expect(ours).toHaveLength(2);
      const [iced, fallback] = ours;
      expect(iced?.kind).toBe('insufficientCapacity');
      const icedOfferings = iced?.kind === 'insufficientCapacity' ? iced.offerings : [];
      expect(icedOfferings.length).toBeGreaterThan(0);
      expect(icedOfferings.every((o) => o.startsWith('spot:m5.large:'))).toBe(true);
      expect(fallback).toMatchObject({
        kind: 'launched',
        instanceType: 'm5.large',
        capacityType: 'on-demand',
      });

      // The spot offerings are backed off in the ICE cache; on-demand is not.
      const backedOff = [
        ...(await e2e.env.account.cloud.unavailableOfferings.list(e2e.env.awsClock.now())).keys(),
      ];
      expect(backedOff).toEqual(expect.arrayContaining([...icedOfferings]));
      expect(backedOff.some((k) => k.startsWith('on-demand:m5.large:'))).toBe(false);

      const [instance] = await e2e.instancesOf(pool);
      expect(instance?.InstanceLifecycle).not.toBe('spot');
      const [claim] = await e2e.nodeClaimsOf(pool);
      expect(claim?.labels['karpenter.sh/capacity-type']).toBe('on-demand');
      const [pod] = await e2e.allRunning('spot', 1);
      expect(await e2e.nodePoolOfNode(pod?.spec?.nodeName ?? '')).toBe(pool);
    } finally {
      restore();
    }
  });
});

/**
 * A static NodePool: a user applies one with replicas 2, the provisioner launches two instances
 * with no pod pending, a pod only a new node of the pool could host launches nothing, and
 * `kubectl scale nodepool --replicas=1` (the scale subresource) has one NodeClaim and its instance
 * removed through termination. An edit of its template then drifts the replica left: the
 * disruption Lambda replaces it (StaticDrift), the replacement initialized before it goes.
 */
const nodePoolScale = { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' };

describe('a static NodePool (real API server, moto, node simulator)', () => {
  it('holds its replicas, launches nothing for pods, and scales down through the scale subresource', async () => {
    // The cheapest type is 2 cpus; a 3-cpu pod fits only the larger one.
    const pool = await e2e.createPool('static', 'fixed', {
      instanceTypes: ['m5.large', 'm5.2xlarge'],
      replicas: 2,
    });
    const terminated: string[] = [];
    const requestTermination = async (nodeClaim: string) => {
      terminated.push(nodeClaim);
    };

    const first = provisioned(await e2e.run(`static-1-${id}`, {}, { requestTermination }));
    const ours = launched(first.claims).filter((c) => c.nodePool === pool);
    expect(ours.map((c) => c.instanceType)).toEqual(['m5.large', 'm5.large']);
    expect(await e2e.instancesOf(pool)).toHaveLength(2);
    // The NodePool status controller counts them, and the scale subresource reads that count.
    await waitFor(
      'the scale subresource to report 2 nodes',
      async () => {
        const s = (await e2e.env.custom.getClusterCustomObjectScale({ ...nodePoolScale, name: pool })) as {
          spec?: { replicas?: number };
          status?: { replicas?: number };
        };
        return s.spec?.replicas === 2 && s.status?.replicas === 2 ? s : undefined;
      },
      { timeoutMs: 30_000 },
    );

    await e2e.createPod('static', 'big', 'big', '3');
    const second = provisioned(await e2e.run(`static-2-${id}`, {}, { requestTermination }));
    expect(second.claims).toEqual([]);
    expect(second.unschedulable.map((u) => u.pod.name)).toEqual(['big']);
    expect((await e2e.nodeClaimsOf(pool)).filter((c) => !c.deleting)).toHaveLength(2);

    // `kubectl scale nodepool <pool> --replicas=1`, as the cluster user.
    await e2e.env.custom.patchClusterCustomObjectScale(
      { ...nodePoolScale, name: pool, body: { spec: { replicas: 1 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const third = provisioned(await e2e.run(`static-3-${id}`, {}, { requestTermination }));
    expect(third.staticDeleted).toHaveLength(1);
    expect(terminated).toEqual(third.staticDeleted);
    expect(e2e.logLines).toContainEqual(
      expect.objectContaining({ decision: 'staticCapacity', action: 'delete', nodePool: pool, replicas: 1 }),
    );
    // Termination drains and terminates the NodeClaim it was handed; one instance is left.
    await terminateThroughFlotilla(
      {
        cluster: e2e.env.cluster,
        cloud: e2e.env.termination.cloud,
        logger: silentLogger,
        metrics: quietMetrics,
      },
      (claim) => terminated.includes(claim.name),
    );
    expect(await e2e.instancesOf(pool)).toHaveLength(1);
    expect((await e2e.nodeClaimsOf(pool)).map((c) => c.name)).not.toContain(terminated[0]);
    const [kept] = await e2e.nodeClaimsOf(pool);
    expect(kept).toBeDefined();

    // `kubectl edit nodepool`: a template label changes, and the replica left drifts.
    await relabelNodePool(e2e, pool, 'release', 'next');
    const started = await disruptionLambdaPass(e2e, pool, `static-drift-1-${id}`);
    expect(started.decisions).toEqual([
      expect.objectContaining({
        method: 'static-drift',
        reason: 'Drifted',
        action: 'replace',
        outcome: 'started',
      }),
    ]);
    expect(started.decisions[0]?.candidates.map((c) => c.nodeClaim)).toEqual([kept?.name]);
    const replacement = started.decisions[0]?.replacements[0]?.nodeClaim;
    // The provisioner launches the replacement; its static pass takes neither for a surplus.
    const fourth = provisioned(await e2e.run(`static-4-${id}`, {}, { requestTermination }));
    expect(fourth.staticDeleted).toBeUndefined();
    await waitFor(
      'the replacement initialized beside the drifted replica',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        const up = claims.filter((c) => !c.deleting && isConditionTrue(c.status.conditions, 'Initialized'));
        return claims.length === 2 && up.length === 2 ? true : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const finished = await disruptionLambdaPass(e2e, pool, `static-drift-2-${id}`);
    expect(finished.decisions).toEqual([
      expect.objectContaining({ method: 'static-drift', outcome: 'deleted' }),
    ]);
    const left = await e2e.nodeClaimsOf(pool);
    expect(left.filter((c) => !c.deleting).map((c) => [c.name, c.labels['release']])).toEqual([
      [replacement, 'next'],
    ]);
  }, 240_000);
});
