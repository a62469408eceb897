import { describe, expect, it } from 'vitest';
import {
  bundledCatalog,
  bundledCatalogRecords,
  makeMemoryCloud,
  makeMemoryNodeClassResolver,
} from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { describeCloudContract } from '../../contract/cloud-contract.ts';
import { CLUSTER, DEFAULT_NODE_CLASS } from './fixtures.ts';

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

describeCloudContract('in-memory cloud', async () => {
  const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
  const cloud = makeMemoryCloud({ clock, clusterName: CLUSTER, catalog: bundledCatalog('us-east-1', ZONES) });
  const resolver = makeMemoryNodeClassResolver({ zones: ZONES });
  const nodeClass = {
    ...DEFAULT_NODE_CLASS,
    status: await resolveNodeClassStatus(resolver, DEFAULT_NODE_CLASS, clock.now()),
  };
  return {
    cloud,
    nodeClass,
    clock,
    clusterName: CLUSTER,
    zones: ZONES,
    noCapacityFor: (instanceType, zones) => {
      const removers = (zones ?? [undefined]).map((zone) =>
        cloud.addCapacityWindow({ instanceType, ...(zone === undefined ? {} : { zone }), from: clock.now() }),
      );
      return () => {
        for (const remove of removers) remove();
      };
    },
    async launchForeignInstance() {
      return cloud.addForeignInstance({ instanceType: 't3.micro', zone: 'us-east-1a' }).instanceId;
    },
  };
});

describe('the in-memory subject of the contract', () => {
  it('offers every bundled type that runs on the NodeClass AMIs, in each of its zones, on-demand and spot', async () => {
    const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
    const cloud = makeMemoryCloud({
      clock,
      clusterName: CLUSTER,
      catalog: bundledCatalog('us-east-1', ZONES),
    });
    const resolver = makeMemoryNodeClassResolver({ zones: ZONES });
    const nodeClass = {
      ...DEFAULT_NODE_CLASS,
      status: await resolveNodeClassStatus(resolver, DEFAULT_NODE_CLASS, clock.now()),
    };
    const types = await cloud.instanceTypes(nodeClass);
    // Every type but the arm64 GPU ones, for which the resolver's AL2023 AMIs have no NVIDIA variant.
    const runnable = bundledCatalogRecords().filter((r) => !(r.arch === 'arm64' && r.gpuCount > 0));
    expect(types.map((t) => t.name).sort()).toEqual(runnable.map((r) => r.name).sort());
    const m5 = types.find((t) => t.name === 'm5.large');
    expect(m5?.offerings.map((o) => `${o.zone}/${o.capacityType}`).sort()).toEqual(
      ZONES.flatMap((zone) => [`${zone}/on-demand`, `${zone}/spot`]).sort(),
    );
  });
});
