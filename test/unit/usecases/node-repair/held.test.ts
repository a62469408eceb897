import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { repairNodes } from '../../../../shared/usecases/node-repair/repair.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { defaultPool, poolNode } from './pool-node.ts';

// Due repairs held back by the node itself (karpenter.sh/do-not-repair) or by its NodePool being
// gone or unreadable, as a user sees it: nothing deleted, NodeRepairBlocked Events on the Node and
// NodeClaim, a `hold` decision line, and the NodeClaim in the pass's `held`.

function world() {
  const clock = makeManualClock(new Date('2026-11-26T12:00:00Z'));
  const memory = makeMemoryCluster({ clock });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  /** Five nodes of NodePool `default`, `sick` NotReady (within the 20% rule), an hour later. */
  const fiveWithOneSick = async () => {
    await poolNode(memory, 'sick', false);
    for (const n of ['a', 'b', 'c', 'd']) await poolNode(memory, n, true);
    clock.advance(60 * 60_000);
  };
  const pass = () => repairNodes({ cluster: memory, logger, metrics: quietMetrics }, clock.now());
  const repairEvents = () =>
    memory
      .events()
      .filter((e) => e.event.reason === 'NodeRepairBlocked')
      .map((e) => [e.event.subject.kind, e.event.subject.name, e.event.message] as const);
  const decisions = () => lines.filter((l) => l['decision'] === 'repair');
  return { clock, memory, lines, fiveWithOneSick, pass, repairEvents, decisions };
}

describe('node repair held back by karpenter.sh/do-not-repair', () => {
  it.each(['Node', 'NodeClaim'])(
    'leaves a due node annotated on its %s alone and reports it held',
    async (on) => {
      const w = world();
      defaultPool(w.memory);
      await w.fiveWithOneSick();
      const annotations = { 'karpenter.sh/do-not-repair': 'true' };
      if (on === 'Node') await w.memory.patchNode('node-sick', { annotations });
      else await w.memory.patchNodeClaimMetadata('sick', { annotations });

      const result = await w.pass();
      expect(result).toMatchObject({ repaired: [], blocked: [], held: ['sick'], failed: [] });
      expect((await w.memory.nodeClaim('sick'))?.deleting).toBe(false);
      const message = `repair of node node-sick held back: its ${on} is annotated karpenter.sh/do-not-repair="true"`;
      expect(w.repairEvents()).toEqual([
        ['Node', 'node-sick', message],
        ['NodeClaim', 'sick', message],
      ]);
      expect(w.decisions()).toEqual([
        expect.objectContaining({
          action: 'hold',
          heldBy: 'DoNotRepair',
          nodePool: 'default',
          held: 1,
          nodes: ['node-sick'],
          reason: message,
        }),
      ]);

      // Annotated "false": repaired as any other.
      if (on === 'Node')
        await w.memory.patchNode('node-sick', { annotations: { 'karpenter.sh/do-not-repair': 'false' } });
      else
        await w.memory.patchNodeClaimMetadata('sick', {
          annotations: { 'karpenter.sh/do-not-repair': null },
        });
      expect((await w.pass()).repaired).toEqual(['sick']);
    },
  );
});

describe('node repair without the NodePool', () => {
  it('never repairs a node whose NodePool does not exist, and reports it held', async () => {
    const w = world();
    await w.fiveWithOneSick();
    const result = await w.pass();
    expect(result).toMatchObject({ repaired: [], held: ['sick'] });
    expect((await w.memory.nodeClaim('sick'))?.deleting).toBe(false);
    expect(w.repairEvents().map(([kind, name]) => `${kind}/${name}`)).toEqual([
      'Node/node-sick',
      'NodeClaim/sick',
    ]);
    expect(w.decisions()).toEqual([
      expect.objectContaining({ action: 'hold', heldBy: 'NodePoolNotFound', nodePool: 'default' }),
    ]);
  });

  it('never repairs a node whose NodePool cannot be read', async () => {
    const w = world();
    w.memory.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'default', uid: 'pool-uid' },
      spec: { template: { spec: { requirements: 'not a list' } } },
    });
    expect((await w.memory.nodePools()).problems).not.toEqual([]);
    await w.fiveWithOneSick();
    const result = await w.pass();
    expect(result).toMatchObject({ repaired: [], held: ['sick'] });
    expect((await w.memory.nodeClaim('sick'))?.deleting).toBe(false);
    expect(w.decisions()).toEqual([
      expect.objectContaining({ action: 'hold', heldBy: 'NodePoolUnreadable' }),
    ]);
  });
});

describe('node repair with NodeClaims that cannot be read', () => {
  it('counts an unreadable NodeClaim of the pool as being disrupted in its Unhealthy budget', async () => {
    const w = world();
    defaultPool(w.memory, [{ nodes: '1' }]);
    await w.fiveWithOneSick();
    await w.memory.patchNodeClaimStatus('sick', {
      conditions: [{ type: 'Initialized', status: 'True', reason: 'Initialized', message: '' }],
    });
    // Maybe deleting, maybe not: it may be using the pool's one disruption.
    w.memory.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'garbled', labels: { 'karpenter.sh/nodepool': 'default' } },
      spec: { requirements: 'not a list' },
    });
    expect((await w.memory.nodeClaims()).unreadable).toEqual([
      expect.objectContaining({ nodePool: 'default' }),
    ]);

    const result = await w.pass();
    expect(result).toMatchObject({ repaired: [], blocked: ['default'] });
    expect(w.decisions()).toEqual([
      expect.objectContaining({
        action: 'block',
        heldBy: 'DisruptionBudgetExhausted',
        allowedDisruptions: 0,
      }),
    ]);
  });
});

describe('node repair of a standalone NodeClaim (in no NodePool)', () => {
  /** A NodeClaim a user made outside every NodePool, on its Node (no NodePool label), NotReady. */
  async function standaloneSick(memory: ReturnType<typeof makeMemoryCluster>): Promise<void> {
    const providerId = 'aws:///us-east-1a/i-0by-hand';
    memory.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'by-hand', finalizers: ['karpenter.sh/termination'] },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [],
      },
    });
    memory.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-by-hand', labels: { team: 'batch' } },
      spec: { providerID: providerId },
    });
    memory.setNodeReady('node-by-hand', false);
    await memory.patchNodeClaimStatus('by-hand', { providerId, nodeName: 'node-by-hand', conditions: [] });
  }

  it("is replaced while at most 20% of the cluster's nodes are unhealthy, its decision naming no NodePool", async () => {
    const w = world();
    defaultPool(w.memory);
    await standaloneSick(w.memory);
    for (const n of ['a', 'b', 'c', 'd']) await poolNode(w.memory, n, true);
    w.memory.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'unmanaged' }, spec: {} });
    w.memory.setNodeReady('unmanaged', true);
    w.clock.advance(60 * 60_000);
    const result = await w.pass();
    expect(result).toMatchObject({ repaired: ['by-hand'], failed: [] });
    expect((await w.memory.nodeClaim('by-hand'))?.deleting).toBe(true);
    const [decision, ...more] = w.decisions();
    expect(more).toEqual([]);
    expect(decision).toMatchObject({
      action: 'replace',
      nodeClaim: 'by-hand',
      poolNodes: 6,
      unhealthyNodes: 1,
    });
    expect(decision).not.toHaveProperty('nodePool');
  });

  it("is held back while more than 20% of the cluster's nodes are unhealthy", async () => {
    const w = world();
    defaultPool(w.memory);
    await standaloneSick(w.memory);
    for (const n of ['sick', 'sick2']) await poolNode(w.memory, n, false);
    for (const n of ['a', 'b', 'c']) await poolNode(w.memory, n, true);
    w.memory.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'unmanaged' }, spec: {} });
    w.memory.setNodeReady('unmanaged', true);
    w.clock.advance(60 * 60_000);
    const result = await w.pass();
    expect(result.repaired).not.toContain('by-hand');
    expect(result.held).toContain('by-hand');
    expect(w.repairEvents()).toContainEqual([
      'NodeClaim',
      'by-hand',
      "repair of node node-by-hand held back: more than 20% of the cluster's nodes are unhealthy (3 of 7, at most 2 may be), and its NodeClaim is in no NodePool",
    ]);
  });
});
