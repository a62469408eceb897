import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import {
  FAILED_SCHEDULING_DEDUPE_SECONDS,
  NO_COMPATIBLE_DEDUPE_SECONDS,
} from '../../../../shared/usecases/provisioning/events.ts';
import { recordingMetrics } from '../../../fixtures/metrics.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// What provisioning tells, keyed as Karpenter keys it: a NodePool whose requirements leave no
// instance type (NoCompatibleInstanceTypes, a Warning on the NodePool, once a minute), and the pod
// nothing hosts (FailedScheduling, once in five minutes whatever its message).

describe('provisioning Events (in-memory cluster and cloud)', () => {
  it('a NodePool no instance type matches gets NoCompatibleInstanceTypes; its pods FailedScheduling', async () => {
    const world = scenarioWorld();
    const { clock, cluster } = world;
    const steps = provisionerSteps(world, makeLogger({}, { sink: () => {} }));
    const [raw] = cluster.list('NodePool') as { metadata: { name: string }; spec: Record<string, unknown> }[];
    const poolName = raw?.metadata.name ?? '';
    const spec = structuredClone(raw?.spec ?? {}) as {
      template: { spec: { requirements?: unknown[] } };
    };
    spec.template.spec.requirements = [
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['zz9'] },
    ];
    cluster.replaceSpec('NodePool', poolName, spec);
    addPendingPod(cluster, 'waiting');
    const run = async (holder: string) => {
      await steps.reconcileLifecycle(holder);
      await steps.provision(holder);
    };
    const told = (reason: string) =>
      cluster
        .events()
        .filter((e) => e.event.reason === reason)
        .map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.count]);

    await run('p-1');
    expect(told('NoCompatibleInstanceTypes')).toEqual([['NodePool', poolName, 'Warning', 1]]);
    expect(told('FailedScheduling')).toEqual([['Pod', 'waiting', 'Warning', 1]]);
    const [event] = cluster.events().filter((e) => e.event.reason === 'NoCompatibleInstanceTypes');
    expect(event?.event.message).toContain('zz9');

    // Within the NodePool's window: nothing new. Past it (and within the pod's): the NodePool again.
    clock.advance(30_000);
    await run('p-2');
    expect(told('NoCompatibleInstanceTypes')).toEqual([['NodePool', poolName, 'Warning', 1]]);
    clock.advance(NO_COMPATIBLE_DEDUPE_SECONDS * 1000);
    await run('p-3');
    expect(told('NoCompatibleInstanceTypes')).toEqual([['NodePool', poolName, 'Warning', 2]]);
    expect(told('FailedScheduling')).toEqual([['Pod', 'waiting', 'Warning', 1]]);
    clock.advance(FAILED_SCHEDULING_DEDUPE_SECONDS * 1000);
    await run('p-4');
    expect(told('FailedScheduling')).toEqual([['Pod', 'waiting', 'Warning', 2]]);
  });
});

// A spot launch EC2 refuses with AuthFailure.ServiceLinkedRoleCreationNotPermitted: Karpenter AWS
// records SpotServiceLinkedRoleCreationFailure on the NodeClaim, takes spot out for the back-off and
// handles the claim as insufficient capacity, so its pods land on on-demand.
describe('SpotServiceLinkedRoleCreationFailure (in-memory cluster and cloud)', () => {
  it('is recorded once on the NodeClaim, named by its launch decision, and the pods go on-demand', async () => {
    const world = scenarioWorld('spot-shortage.yaml', { noSpotServiceLinkedRole: true });
    const { cluster, cloud } = world;
    const lines: Record<string, unknown>[] = [];
    const steps = provisionerSteps(
      world,
      makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    );
    addPendingPod(cluster, 'web-0');
    await steps.reconcileLifecycle('p-1');
    await steps.provision('p-1');

    const launches = lines.filter((l) => l['decision'] === 'launch');
    const refused = launches.filter((l) => l['failureReason'] === 'SpotServiceLinkedRoleCreationFailure');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ outcome: 'insufficientCapacity', capacityType: 'spot' });
    const claim = String(refused[0]?.['nodeClaim']);
    const events = cluster.events().filter((e) => e.event.reason === 'SpotServiceLinkedRoleCreationFailure');
    expect(events.map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.count])).toEqual([
      ['NodeClaim', claim, 'Warning', 1],
    ]);
    expect(events[0]?.event.message).toContain('AuthFailure.ServiceLinkedRoleCreationNotPermitted');
    // Handled as insufficient capacity: Karpenter's Event too, and the claim is gone.
    expect(
      cluster
        .events()
        .some((e) => e.event.reason === 'InsufficientCapacityError' && e.event.subject.name === claim),
    ).toBe(true);
    expect(
      cluster.list('NodeClaim').map((c) => (c as { metadata: { name: string } }).metadata.name),
    ).not.toContain(claim);

    // Spot is backed off: the next launch for the pod is on-demand, and no spot launch is tried.
    await steps.provision('p-2');
    const launched = cloud.history();
    expect(launched.length).toBeGreaterThan(0);
    expect(launched.every((i) => i.capacityType === 'on-demand')).toBe(true);
    expect(lines.filter((l) => l['decision'] === 'launch' && l['failureReason'] !== undefined)).toHaveLength(
      1,
    );
  });
});

// What a launch publishes under Karpenter's names: the NodeClaim created (`provisioned`), and the
// offering and instance type it launched, as Karpenter's cloud provider metrics know them.
describe('the metrics of a launch (in-memory cluster and cloud)', () => {
  it('names the NodeClaim created and the offering launched, with its price, vCPUs and memory', async () => {
    const world = scenarioWorld();
    const metrics = recordingMetrics({ cluster: 'prod', clock: world.clock });
    const lines: Record<string, unknown>[] = [];
    const steps = provisionerSteps(
      world,
      makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
      { ports: { metrics } },
    );
    addPendingPod(world.cluster, 'web-0');
    await steps.reconcileLifecycle('p-1');
    await steps.provision('p-1');
    const [launch] = lines.filter((l) => l['decision'] === 'launch' && l['outcome'] === 'launched');
    const type = String(launch?.['instanceType']);
    const offering = {
      cluster: 'prod',
      instance_type: type,
      capacity_type: String(launch?.['capacityType']),
      zone: String(launch?.['zone']),
    };
    const catalog = world.cloud.history().find((i) => i.instanceType === type);
    expect(catalog).toBeDefined();
    // The catalog's vCPUs and memory of the type (its instance-cpu and instance-memory labels).
    expect(launch?.['instanceTypeCpu']).toBeGreaterThan(0);
    expect(Number(launch?.['instanceTypeMemoryBytes']) % (1024 * 1024)).toBe(0);
    const points = (name: string) =>
      metrics.points.filter((p) => p.name === name).map((p) => [p.dimensions, p.values]);
    expect(points('karpenter_nodeclaims_created_total')).toEqual([
      [
        {
          cluster: 'prod',
          nodepool: launch?.['nodePool'],
          reason: 'provisioned',
          min_values_relaxed: 'false',
        },
        [1],
      ],
    ]);
    expect(points('karpenter_cloudprovider_instance_type_offering_available')).toEqual([[offering, [1]]]);
    expect(points('karpenter_cloudprovider_instance_type_offering_price_estimate')).toEqual([
      [offering, [launch?.['pricePerHour']]],
    ]);
    expect(points('karpenter_cloudprovider_instance_type_cpu_cores')).toEqual([
      [{ cluster: 'prod', instance_type: type }, [launch?.['instanceTypeCpu']]],
    ]);
    expect(points('karpenter_cloudprovider_instance_type_memory_bytes')).toEqual([
      [{ cluster: 'prod', instance_type: type }, [launch?.['instanceTypeMemoryBytes']]],
    ]);
  });
});

// Karpenter's ignored pods: pending pods the run could not read, left out of its plan.
describe('the pending pods a run leaves out (in-memory cluster and cloud)', () => {
  it('counts them on its line and as karpenter_scheduler_ignored_pods_count', async () => {
    const world = scenarioWorld();
    const metrics = recordingMetrics({ cluster: 'prod', clock: world.clock });
    const lines: Record<string, unknown>[] = [];
    const steps = provisionerSteps(
      world,
      makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
      { ports: { metrics } },
    );
    // Its tolerations must be a list: the pod cannot be read.
    world.cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'odd', namespace: 'default' },
      spec: { containers: [{ name: 'app', image: 'app' }], tolerations: 'all' },
    });
    world.cluster.markPodUnschedulable('default', 'odd', '0/0 nodes are available');
    await steps.reconcileLifecycle('p-1');
    await steps.provision('p-1');
    expect(lines.filter((l) => l['decision'] === 'skip')).toEqual([
      expect.objectContaining({ reason: 'no provisionable pods', ignoredPods: 1 }),
    ]);
    expect(
      metrics.points.filter((p) => p.name === 'karpenter_scheduler_ignored_pods_count').map((p) => p.values),
    ).toEqual([[1]]);
  });
});
