import { describe, expect, it } from 'vitest';
import { UNCONSOLIDATABLE_ANNOTATION } from '../../../../shared/usecases/disruption/unconsolidatable.ts';
import { pass, threeNodes } from './pass-world.ts';

// A node consolidation looks at and keeps says why: Karpenter's `Unconsolidatable` Event on its
// Node and NodeClaim, and one decision line, each when the reason changes, not every pass.

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
    cluster.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'spread', namespace: 'default' },
      spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'spread' } } },
    });
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
});
