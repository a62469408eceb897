import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { NodePoolConditionType } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { repairNodes } from '../../../../shared/usecases/node-repair/repair.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { defaultPool, poolNode } from './pool-node.ts';

// Node repair held back by the NodePool's disruption budget for Unhealthy (Karpenter v1.15), as a
// user sees it: the NodePool's NodeRepairBlocked condition and Events, the decision line, and the
// held node repaired once the budget frees up.

function world(budgets: readonly Record<string, unknown>[]) {
  const clock = makeManualClock(new Date('2026-11-26T12:00:00Z'));
  const memory = makeMemoryCluster({ clock });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  defaultPool(memory, budgets);
  /** An initialized NodeClaim `name` of NodePool `default` on its Node `node-<name>`. */
  const node = (name: string, ready: boolean) =>
    poolNode(memory, name, ready, [
      { type: 'Initialized', status: 'True', reason: 'Initialized', message: '' },
    ]);
  const pass = () => repairNodes({ cluster: memory, logger, metrics: quietMetrics }, clock.now());
  const blocked = async () =>
    (await memory.nodePools()).items[0]?.conditions.find(
      (c) => c.type === NodePoolConditionType.nodeRepairBlocked,
    );
  const repairEvents = () =>
    memory
      .events()
      .filter((e) => e.event.reason === 'NodeRepairBlocked')
      .map((e) => e.event.subject.name);
  return { clock, memory, lines, node, pass, blocked, repairEvents };
}

describe('node repair within the disruption budgets for Unhealthy', () => {
  it('repairs one of two NotReady nodes under a budget of one, reports the other held, and repairs it once the first is gone', async () => {
    const w = world([{ nodes: '1', reasons: ['Unhealthy'] }]);
    // Ten nodes: two NotReady are within the 20% rule; the budget allows one disruption at a time.
    for (const n of ['sick-a', 'sick-b']) await w.node(n, false);
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) await w.node(n, true);
    w.clock.advance(60 * 60_000);
    const first = await w.pass();
    expect(first.repaired).toHaveLength(1);
    expect(first.blocked).toEqual(['default']);
    const [done] = first.repaired;
    const other = done === 'sick-a' ? 'sick-b' : 'sick-a';
    expect(await w.blocked()).toMatchObject({
      status: 'True',
      reason: 'DisruptionBudgetExhausted',
      message:
        'disruption budgets of nodepool "default" allow 1 more node for reason Unhealthy (0 of 10 nodes being disrupted, budgets[0] nodes "1"): 1 due repair held back',
    });
    expect(w.repairEvents().sort()).toEqual(['default', other, `node-${other}`].sort());
    expect(w.lines.filter((l) => l['decision'] === 'repair').map((l) => [l['action'], l['heldBy']])).toEqual([
      ['replace', undefined],
      ['block', 'DisruptionBudgetExhausted'],
    ]);

    // The repaired NodeClaim is still terminating: it uses the one disruption, nothing changes.
    expect(await w.pass()).toMatchObject({ repaired: [], blocked: [], unblocked: [] });
    expect((await w.memory.nodeClaim(other))?.deleting).toBe(false);

    // Terminated (as termination leaves it): the budget has room again.
    await w.memory.deleteNode(`node-${done}`);
    await w.memory.patchNodeClaimMetadata(done ?? '', { removeFinalizers: ['karpenter.sh/termination'] });
    expect(await w.memory.nodeClaim(done ?? '')).toBeUndefined();
    const last = await w.pass();
    expect(last).toMatchObject({ repaired: [other], unblocked: ['default'] });
    expect(await w.blocked()).toMatchObject({ status: 'False', reason: 'UnhealthyThresholdNotExceeded' });
  });
});
