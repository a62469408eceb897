// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { repairNodes } from '../../../../shared/usecases/node-repair/repair.ts';
import { field, forgedSummaryCluster, named, type RawObject } from '../../../fixtures/forged-summary.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { defaultPool, poolNode } from './pool-node.ts';

// Node repair over a forged cluster summary: a Node the summary shows unhealthy is replaced only
// when the API server's Node is, and the 20% rule counts the API server's unhealthy nodes, not the
// summary's.

const LONG_AGO = '2020-01-01T00:00:00Z';

function world() {
  const clock = makeManualClock(new Date('2026-11-26T12:00:00Z'));
  const memory = makeMemoryCluster({ clock });
  defaultPool(memory);
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  /** A registered NodeClaim `name` of NodePool `default` on its Node `node-<name>`. */
  const node = (name: string, ready: boolean) => poolNode(memory, name, ready);
  const forged = forgedSummaryCluster(memory, clock, logger);
  const pass = () => repairNodes({ cluster: forged.cluster, logger, metrics: quietMetrics }, clock.now());
  return { clock, memory, node, forged, pass };
}

/** Sets the forged Node's Ready condition, as from long ago. */
function forgeReady(nodes: RawObject[], name: string, status: 'True' | 'False'): void {
  const conditions = field(named(nodes, name), 'status')['conditions'] as RawObject[];
  for (const c of conditions) {
    if (c['type'] !== 'Ready') continue;
    c['status'] = status;
    c['lastTransitionTime'] = LONG_AGO;
  }
}

describe('node repair over a forged cluster summary', () => {
  it('does not replace a healthy node the summary shows NotReady for hours', async () => {
    const w = world();
    await w.node('healthy', true);
    for (const n of ['a', 'b', 'c', 'd']) await w.node(n, true);
    w.clock.advance(60 * 60_000);
    w.forged.publish({ nodes: (nodes) => forgeReady(nodes, 'node-healthy', 'False') });
    expect((await w.pass()).repaired).toEqual([]);
    expect((await w.memory.nodeClaim('healthy'))?.deleting).toBe(false);
  });

  it('holds repairs back when the API server has more than 20% of the pool unhealthy, though the summary shows one', async () => {
    const w = world();
    for (const n of ['sick-1', 'sick-2', 'sick-3']) await w.node(n, false);
    for (const n of ['a', 'b']) await w.node(n, true);
    w.clock.advance(60 * 60_000);
    w.forged.publish({
      nodes: (nodes) => {
        forgeReady(nodes, 'node-sick-2', 'True');
        forgeReady(nodes, 'node-sick-3', 'True');
      },
    });
    expect((await w.pass()).repaired).toEqual([]);
    for (const n of ['sick-1', 'sick-2', 'sick-3']) {
      expect((await w.memory.nodeClaim(n))?.deleting).toBe(false);
    }
  });

  it('still replaces an unhealthy node when the API server agrees', async () => {
    const w = world();
    await w.node('sick', false);
    for (const n of ['a', 'b', 'c', 'd']) await w.node(n, true);
    w.clock.advance(60 * 60_000);
    w.forged.publish({});
    expect((await w.pass()).repaired).toEqual(['sick']);
    expect((await w.memory.nodeClaim('sick'))?.deleting).toBe(true);
  });
});
