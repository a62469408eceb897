import { describe, expect, it } from 'vitest';
import {
  CONSOLIDATED_TTL_MS,
  type ConsolidationMemo,
  makeConsolidationMemo,
} from '../../../../shared/usecases/disruption/consolidated.ts';
import { pass, threeNodes } from './pass-world.ts';

// Karpenter's consolidated memo: a consolidation method that found nothing is not asked again
// while the cluster stays as it was, for at most five minutes.

describe('the consolidated memo', () => {
  it('holds a look that found nothing for the same state, less than five minutes', () => {
    const memo = makeConsolidationMemo();
    memo.markConsolidated('single-node', 'state A', 1_000);
    expect(memo.isConsolidated('single-node', 'state A', 1_000 + CONSOLIDATED_TTL_MS - 1)).toBe(true);
    expect(memo.isConsolidated('single-node', 'state A', 1_000 + CONSOLIDATED_TTL_MS)).toBe(false);
    expect(memo.isConsolidated('single-node', 'state B', 2_000)).toBe(false);
    expect(memo.isConsolidated('multi-node', 'state A', 2_000)).toBe(false);
    // A clock that went back proves nothing.
    expect(memo.isConsolidated('single-node', 'state A', 999)).toBe(false);
  });
});

/** A memo that tells which looks it answered, as `method:looked|skipped`. */
function recording(memo: ConsolidationMemo) {
  const looks: string[] = [];
  return {
    looks,
    memo: {
      isConsolidated(method: string, key: string, nowMs: number) {
        const held = memo.isConsolidated(method, key, nowMs);
        looks.push(`${method}:${held ? 'skipped' : 'looked'}`);
        return held;
      },
      markConsolidated: (method: string, key: string, nowMs: number) =>
        memo.markConsolidated(method, key, nowMs),
    } satisfies ConsolidationMemo,
  };
}

describe('disruption passes with the memo', () => {
  it('look again only once the cluster changes or five minutes pass', async () => {
    const world = await threeNodes();
    const { looks, memo } = recording(makeConsolidationMemo());
    const passAt = async (holder: string) => {
      looks.length = 0;
      const result = await pass(world, {}, { consolidationMemo: memo }, holder);
      world.clock.advance(30_000);
      return result;
    };
    // Three pods that cannot share a node, on three nodes: nothing to consolidate.
    const first = await passAt('pass-1');
    expect(first.decisions).toEqual([]);
    expect(looks).toContain('single-node:looked');
    // The first pass wrote what it found on the NodeClaims (conditions, the reason each stays):
    // the second reads them, and looks once more. Then nothing changes: the methods that found
    // nothing are not asked.
    await passAt('pass-2');
    expect(looks).toContain('single-node:looked');
    await passAt('pass-3');
    expect(looks.length).toBeGreaterThan(0);
    expect(looks.every((l) => l.endsWith(':skipped'))).toBe(true);
    // Five minutes with no change: they look again, as Karpenter does for what no object shows
    // (prices, capacity), and rest again after.
    world.clock.advance(CONSOLIDATED_TTL_MS);
    await passAt('pass-4');
    expect(looks.some((l) => l.endsWith(':looked'))).toBe(true);
    await passAt('pass-5');
    expect(looks.every((l) => l.endsWith(':skipped'))).toBe(true);
    // A pod goes: the cluster changed, and the methods look again (and empty its node).
    world.cluster.removePod('default', 'c');
    const after = await passAt('pass-6');
    expect(looks.some((l) => l.endsWith(':looked'))).toBe(true);
    expect(after.decisions.map((d) => d.method)).toEqual(['emptiness']);
    // While that node is on its way out, the NodePool's budget allows no other: a look a budget
    // held back is not a look that found nothing, and the methods look every pass (as Karpenter).
    for (const holder of ['pass-7', 'pass-8']) {
      await passAt(holder);
      expect(looks).toContain('single-node:looked');
    }
  });
});
