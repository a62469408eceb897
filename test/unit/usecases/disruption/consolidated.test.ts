import { describe, expect, it } from 'vitest';
import {
  CONSOLIDATED_TTL_MS,
  type ConsolidationMemo,
  type ConsolidationState,
  makeConsolidationMemo,
} from '../../../../shared/usecases/disruption/consolidated.ts';
import { pass, threeNodes } from './pass-world.ts';

// Karpenter's consolidated memo: a consolidation method that found nothing is not asked again
// while the cluster stays as it was, for at most five minutes.

describe('the consolidated memo', () => {
  it('holds a look that found nothing while the state is unchanged, until five minutes after its last change', () => {
    const memo = makeConsolidationMemo();
    const changedAt = 1_000;
    memo.state('state A', changedAt);
    // The look comes four minutes after the change.
    const looked = memo.state('state A', changedAt + 4 * 60_000);
    memo.markConsolidated('single-node', 'a,b', looked);
    expect(memo.isConsolidated('single-node', 'a,b', memo.state('state A', changedAt + 4.5 * 60_000))).toBe(
      true,
    );
    // Five minutes after the change (not after the look), as Karpenter renews its state.
    expect(
      memo.isConsolidated('single-node', 'a,b', memo.state('state A', changedAt + CONSOLIDATED_TTL_MS)),
    ).toBe(false);
    // Another method, other candidates or budgets, another state: not held.
    const again = memo.state('state A', changedAt + 6 * 60_000);
    memo.markConsolidated('single-node', 'a,b', again);
    expect(memo.isConsolidated('single-node', 'a,b', memo.state('state A', changedAt + 7 * 60_000))).toBe(
      true,
    );
    expect(memo.isConsolidated('multi-node', 'a,b', memo.state('state A', changedAt + 7 * 60_000))).toBe(
      false,
    );
    expect(memo.isConsolidated('single-node', 'a', memo.state('state A', changedAt + 7 * 60_000))).toBe(
      false,
    );
    expect(memo.isConsolidated('single-node', 'a,b', memo.state('state B', changedAt + 7 * 60_000))).toBe(
      false,
    );
    // Back to A: a state that changed counts from its return.
    expect(memo.isConsolidated('single-node', 'a,b', memo.state('state A', changedAt + 7 * 60_000))).toBe(
      false,
    );
  });
});

/** A memo that tells which looks it answered, as `method:looked|skipped`. */
function recording(memo: ConsolidationMemo) {
  const looks: string[] = [];
  return {
    looks,
    memo: {
      state: (key: string, nowMs: number) => memo.state(key, nowMs),
      isConsolidated(method: string, look: string, state: ConsolidationState) {
        const held = memo.isConsolidated(method, look, state);
        looks.push(`${method}:${held ? 'skipped' : 'looked'}`);
        return held;
      },
      markConsolidated: (method: string, look: string, state: ConsolidationState) =>
        memo.markConsolidated(method, look, state),
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
    // Nothing changed (the reason each node stays, which the first pass wrote on its NodeClaim, is
    // Flotilla's own note, not a change): the methods that found nothing are not asked.
    await passAt('pass-2');
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
