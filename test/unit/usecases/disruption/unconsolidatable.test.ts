import { describe, expect, it } from 'vitest';
import type { MetadataPatch } from '../../../../shared/ports/cluster.ts';
import { UNCONSOLIDATABLE_ANNOTATION } from '../../../../shared/usecases/disruption/unconsolidatable.ts';
import { watched } from '../../../fixtures/watched.ts';
import { pass, threeNodes } from './pass-world.ts';

// A node consolidation looks at and keeps says why: Karpenter's `Unconsolidatable` Event on its
// Node and NodeClaim, and one decision line, each when the reason changes, not every pass.

/** A PodDisruptionBudget that allows no eviction of the three pods. */
function noEvictions(cluster: { create(object: object): unknown }, name: string): void {
  cluster.create({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: 'default' },
    spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'spread' } } },
  });
}

describe('Unconsolidatable', () => {
  it('is told once per reason across passes, and again when the reason changes', async () => {
    const lines: Record<string, unknown>[] = [];
    const world = await threeNodes((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const { cluster, clock } = world;
    const told = () => lines.filter((l) => l['decision'] === 'unconsolidatable');
    const unconsolidatableEvents = () =>
      cluster.events().filter((e) => e.event.reason === 'Unconsolidatable');
    const claims = (await cluster.nodeClaims()).items;
    expect(claims).toHaveLength(3);

    // Three pods that may not share a node, each on the cheapest node for it: nothing to gain. The
    // budget (10% of 3 nodes) lets consolidation look at one of them a pass.
    lines.length = 0;
    await pass(world);
    const first = told();
    expect(first).toHaveLength(1);
    const looked = first[0]?.['nodeClaim'];
    expect(claims.map((c) => c.name)).toContain(looked);
    const why = first[0]?.['reason'];
    expect(typeof why).toBe('string');
    expect(
      first.every((l) => l['message'] === 'nodeclaim unconsolidatable' && l['previous'] === undefined),
    ).toBe(true);
    // On the Node and the NodeClaim of each, with the reason as the message.
    const events = unconsolidatableEvents();
    expect(events).toHaveLength(2);
    expect(new Set(events.map((e) => e.event.subject.kind))).toEqual(new Set(['Node', 'NodeClaim']));
    expect(events.every((e) => e.event.message === why && e.count === 1)).toBe(true);
    const after = (await cluster.nodeClaims()).items;
    expect(after.find((c) => c.name === looked)?.annotations[UNCONSOLIDATABLE_ANNOTATION]).toBe(why);

    // The next pass, the same reasons: no line, no Event, no write.
    clock.advance(10 * 60_000);
    lines.length = 0;
    await pass(world);
    expect(lines.some((l) => l['decision'] === 'disruptionPass')).toBe(true);
    expect(told()).toEqual([]);
    expect(unconsolidatableEvents()).toEqual(events);

    // A PodDisruptionBudget that allows no eviction now keeps all three (whatever the budget): a
    // new reason, told once for each.
    noEvictions(cluster, 'spread');
    clock.advance(60_000);
    lines.length = 0;
    await pass(world);
    const second = told();
    expect(second).toHaveLength(3);
    for (const l of second) {
      expect(l['reason']).toBe('pdb default/spread prevents pod evictions');
      expect(l['previous']).toBe(l['nodeClaim'] === looked ? why : undefined);
    }
    clock.advance(60_000);
    lines.length = 0;
    await pass(world);
    expect(told()).toEqual([]);
    expect(unconsolidatableEvents()).toHaveLength(8);
  });

  it('tells several at once, its lines in the order of the NodeClaims, and stops at a failure', async () => {
    const lines: Record<string, unknown>[] = [];
    const world = await threeNodes((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const { cluster, clock } = world;
    // A PodDisruptionBudget that allows no eviction keeps all three nodes: three reasons to tell.
    noEvictions(cluster, 'spread');
    clock.advance(60_000);
    let inFlight = 0;
    let most = 0;
    const notes = (patch: MetadataPatch | undefined) =>
      patch?.annotations?.[UNCONSOLIDATABLE_ANNOTATION] !== undefined;
    const slow = watched(cluster, (method, args) => {
      if (method !== 'patchNodeClaimMetadata' || !notes(args[1] as MetadataPatch)) return undefined;
      inFlight += 1;
      most = Math.max(most, inFlight);
      return new Promise((resolve) => setTimeout(resolve, 20)).then(() => {
        inFlight -= 1;
        return cluster.patchNodeClaimMetadata(args[0] as string, args[1] as MetadataPatch);
      });
    });
    await pass(world, { cluster: slow });
    const told = lines.filter((l) => l['decision'] === 'unconsolidatable').map((l) => String(l['nodeClaim']));
    expect(told).toHaveLength(3);
    expect(most).toBe(3);
    expect(told).toEqual([...told].sort());

    // A write that fails: the pass fails with it, and what was not told is told by a later pass.
    noEvictions(cluster, 'spread-2');
    clock.advance(60_000);
    const failing = watched(cluster, (method, args) =>
      method === 'patchNodeClaimMetadata' && notes(args[1] as MetadataPatch)
        ? Promise.reject(new Error('the API server is unavailable'))
        : undefined,
    );
    await expect(pass(world, { cluster: failing }, {}, 'pass-2')).rejects.toThrow(
      'the API server is unavailable',
    );
    clock.advance(60_000);
    lines.length = 0;
    await pass(world, {}, {}, 'pass-3');
    expect(lines.filter((l) => l['decision'] === 'unconsolidatable')).toHaveLength(3);
  });
});
