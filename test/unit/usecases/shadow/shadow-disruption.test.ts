import { describe, expect, it } from 'vitest';
import { shadowCloud } from '../../../../shared/adapters/shadow-cloud.ts';
import { shadowQueues } from '../../../../shared/usecases/disruption/setup.ts';
import { CLUSTER_WRITES, ignoringWrites } from '../../../../shared/usecases/explain/read-only.ts';
import { watched } from '../../../fixtures/watched.ts';
import { pass, threeNodes, type World } from '../disruption/pass-world.ts';

// A shadow disruption pass proposes the command a live pass would start, and changes nothing: no
// condition, mark, NodeClaim or instance; passes after it propose the same command again until
// the live autoscaler acts.

function shadowPass(world: World, writes: string[], holder: string) {
  const cluster = ignoringWrites(
    watched(world.cluster, (method) => {
      if (CLUSTER_WRITES.includes(method)) writes.push(method);
      return undefined;
    }),
  );
  const cloud = shadowCloud(world.cloud, () => world.clock.now());
  return pass(world, { cluster, cloud, ...shadowQueues() }, { shadow: true }, holder);
}

describe('a shadow disruption pass', () => {
  it('proposes deleting a node emptied since, writes nothing, and proposes it again next pass', async () => {
    const lines: Record<string, unknown>[] = [];
    const world = await threeNodes((l) => lines.push(JSON.parse(l)));
    const { clock, cluster } = world;
    const claims = (await cluster.nodeClaims()).items;
    const pods = cluster.list('Pod') as { metadata: { name: string }; spec: { nodeName: string } }[];
    const emptiedNode = pods.find((p) => p.metadata.name === 'b')?.spec.nodeName;
    const emptied = claims.find((c) => c.status.nodeName === emptiedNode)?.name;
    cluster.removePod('default', 'b');
    clock.advance(60_000);
    await world.step();
    const instancesBefore = (await world.cloud.list()).map((i) => `${i.instanceId} ${i.state}`).sort();

    const writes: string[] = [];
    const first = await shadowPass(world, writes, 'shadow-1');
    expect(first.kind).toBe('pass');
    expect(first.decisions).toHaveLength(1);
    expect(first.decisions[0]).toMatchObject({
      reason: 'Empty',
      action: 'delete',
      outcome: 'deleted',
      candidates: [expect.objectContaining({ nodeClaim: emptied })],
    });
    expect(first.decisions[0]?.pricePerHourBefore).toBeGreaterThan(0);

    // Nothing reached the cluster: no condition, no mark, no delete, no Event.
    expect(writes).toEqual([]);
    const after = (await cluster.nodeClaims()).items;
    expect(after.map((c) => [c.name, c.deleting, c.status.conditions.map((x) => x.type).sort()])).toEqual(
      claims.map((c) => [c.name, false, c.status.conditions.map((x) => x.type).sort()]),
    );
    expect((await world.cloud.list()).map((i) => `${i.instanceId} ${i.state}`).sort()).toEqual(
      instancesBefore,
    );

    clock.advance(60_000);
    const second = await shadowPass(world, writes, 'shadow-2');
    expect(second.decisions.map((d) => d.candidates.map((c) => c.nodeClaim))).toEqual([[emptied]]);
    expect(writes).toEqual([]);
  });
});
