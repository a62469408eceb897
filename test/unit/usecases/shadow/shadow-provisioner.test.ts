import { describe, expect, it } from 'vitest';
import { isShadowInstance, ShadowWriteError, shadowCloud } from '../../../../shared/adapters/shadow-cloud.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { CLUSTER_WRITES, ignoringWrites } from '../../../../shared/usecases/explain/read-only.ts';
import { watched } from '../../../fixtures/watched.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from '../provisioning/world.ts';

// A shadow provisioner decides the launch a live one makes, on the same cluster, and changes
// nothing: no NodeClaim is created, no instance launched, no EC2NodeClass resolved; its launch
// line names the type, zone and price the live run launches.

/** A world whose EC2NodeClass the live autoscaler resolved, with one pending pod. */
async function pendingWorld() {
  const world = scenarioWorld();
  await provisionerSteps(world, makeLogger({}, { sink: () => {} })).reconcileLifecycle('live-resolver');
  addPendingPod(world.cluster, 'web-1');
  return world;
}

describe('a shadow provisioner', () => {
  it('decides the launch a live run makes and writes nothing to the cluster or the cloud', async () => {
    const live = await pendingWorld();
    const liveResult = await provisionerSteps(live, makeLogger({}, { sink: () => {} })).provision('live');
    expect(liveResult.kind).toBe('provisioned');
    const launched = liveResult.kind === 'provisioned' ? liveResult.claims[0] : undefined;
    expect(launched?.kind).toBe('launched');

    const world = await pendingWorld();
    const writes: string[] = [];
    const cluster = ignoringWrites(
      watched(world.cluster, (method) => {
        if (CLUSTER_WRITES.includes(method)) writes.push(method);
        return undefined;
      }),
    );
    const cloudCalls: string[] = [];
    const cloud = shadowCloud(
      watched(world.cloud, (method) => {
        cloudCalls.push(method);
        return undefined;
      }),
      () => world.clock.now(),
    );
    const resolves: string[] = [];
    const resolver = watched(world.resolver, (method) => {
      resolves.push(method);
      return undefined;
    });
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({ shadow: true }, { sink: (l) => lines.push(JSON.parse(l)) });
    const shadow = provisionerSteps(world, logger, {
      ports: { cluster, cloud, nodeClassResolver: resolver },
      config: { shadow: true },
    });
    const result = await shadow.provision('shadow');
    await shadow.reconcileLifecycle('shadow');

    expect(result.kind).toBe('provisioned');
    const proposed = result.kind === 'provisioned' ? result.claims[0] : undefined;
    expect(proposed?.kind).toBe('launched');
    if (proposed?.kind !== 'launched' || launched?.kind !== 'launched') return;
    expect(isShadowInstance(proposed.instanceId)).toBe(true);
    expect({ type: proposed.instanceType, zone: proposed.zone, capacityType: proposed.capacityType }).toEqual(
      {
        type: launched.instanceType,
        zone: launched.zone,
        capacityType: launched.capacityType,
      },
    );
    expect(proposed.pricePerHour).toBe(launched.pricePerHour);
    expect(proposed.pricePerHour).toBeGreaterThan(0);

    // Nothing reached the cluster or EC2: no write got past the shadow view, EC2 was only read.
    expect(writes).toEqual([]);
    expect((await world.cluster.nodeClaims()).items).toEqual([]);
    expect(await world.cloud.list()).toEqual([]);
    expect(
      cloudCalls.filter((m) => !['instanceTypes', 'list', 'get', 'findByNodeClaim'].includes(m)),
    ).toEqual([]);
    expect(resolves).toEqual([]);

    const launch = lines.find((l) => l['decision'] === 'launch');
    expect(launch).toMatchObject({
      shadow: true,
      outcome: 'launched',
      instanceType: launched.instanceType,
      pricePerHour: launched.pricePerHour,
    });
    expect(launch?.['pods']).toEqual(['default/web-1']);
  });

  it('resumes no unlaunched NodeClaim and plans as if the live autoscaler’s answer to its pods were not there', async () => {
    const world = await pendingWorld();
    // The live autoscaler created a NodeClaim for the pod and has not launched it yet.
    const live = provisionerSteps(world, makeLogger({}, { sink: () => {} }), {
      ports: {
        cloud: {
          ...world.cloud,
          launch: async () => {
            throw new Error('the live launch is still on its way');
          },
        },
      },
    });
    await live.provision('live');
    const unlaunched = (await world.cluster.nodeClaims()).items;
    expect(unlaunched).toHaveLength(1);
    const lines: Record<string, unknown>[] = [];
    const shadow = provisionerSteps(world, makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }), {
      ports: {
        cluster: ignoringWrites(world.cluster),
        cloud: shadowCloud(world.cloud, () => world.clock.now()),
      },
      config: { shadow: true },
    });
    await shadow.provision('shadow');
    expect(lines.filter((l) => l['decision'] === 'launch' && l['reason'] === 'resumed')).toEqual([]);
    // Nor does it count that NodeClaim, made after the pod, as capacity for it: it says what it
    // would have launched for the pod, to be compared with what the live autoscaler launched.
    expect(lines.filter((l) => l['decision'] === 'launch').map((l) => [l['reason'], l['pods']])).toEqual([
      ['provisioning', ['default/web-1']],
    ]);
  });

  it('refuses to terminate, and to send a launch record it did not plan', async () => {
    const world = await pendingWorld();
    const cloud = shadowCloud(world.cloud, () => world.clock.now());
    await expect(cloud.delete('i-0123456789abcdef0')).rejects.toBeInstanceOf(ShadowWriteError);
    const [nodeClass] = (await world.cluster.nodeClasses()).items;
    if (nodeClass === undefined) throw new Error('the scenario has an EC2NodeClass');
    const request = {
      nodeClaimName: 'default-abc',
      nodePoolName: 'default',
      nodeClass,
      instanceTypes: [],
      requirements: [],
      labels: {},
      taints: [],
      startupTaints: [],
    };
    await expect(
      cloud.launch(request, { decidedAtMs: 0, request: '{"Type":"instant"}' }),
    ).rejects.toBeInstanceOf(ShadowWriteError);
  });
});
