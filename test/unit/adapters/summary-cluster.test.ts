import { describe, expect, it, vi } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { withClusterSummary } from '../../../shared/adapters/summary-cluster.ts';
import { encodeSummaryDocument, readSummaryDocument, SummaryBuilder } from '../../../shared/apis/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { ClusterSummary, SummarySource } from '../../../shared/ports/summary.ts';
import { SummaryUnavailableError } from '../../../shared/ports/summary.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { nodeManifest } from '../../fixtures/nodes.ts';

// The Cluster port over the cluster summary: when the summary is used, when the API server is read
// instead and why, and what a container's own writes look like through it. The summary is built
// with the shim's own builder and read with the Lambdas' own reader; the API server is the
// in-memory cluster.

const T0 = Date.parse('2026-11-26T12:00:00Z');

function world() {
  const clock = makeManualClock(new Date(T0));
  const cluster = makeMemoryCluster({ clock });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  let published: ClusterSummary | undefined;
  let failure: Error | undefined;
  let reads = 0;
  const source: SummarySource = {
    async read() {
      reads += 1;
      if (failure !== undefined) throw failure;
      return published;
    },
  };
  /**
   * Publishes what the shim would have seen: these Nodes, at `atMs`; with `corruptPods`, a document
   * whose pods (its second part) are cut short.
   */
  const publish = (nodes: readonly string[], atMs: number, corruptPods = false) => {
    const builder = new SummaryBuilder('prod');
    for (const n of nodes) builder.apply('nodes', 'ADDED', nodeManifest(n));
    const at = new Date(atMs).toISOString();
    const text = encodeSummaryDocument(builder.document(at, { pods: at, nodes: at, nodeClaims: at }));
    published = readSummaryDocument(corruptPods ? text.slice(0, -3) : text);
  };
  const decorated = withClusterSummary(cluster, { source, clock, logger });
  return {
    clock,
    cluster,
    lines,
    publish,
    decorated,
    fail: (error: Error) => {
      failure = error;
    },
    reads: () => reads,
    notUsed: () => lines.filter((l) => l['message'] === 'cluster summary not used').map((l) => l['why']),
  };
}

const names = (read: { items: readonly { name: string }[] }) => read.items.map((n) => n.name).sort();

describe('the Cluster port over the cluster summary', () => {
  it('reads Nodes from a fresh summary, not from the API server', async () => {
    const w = world();
    w.cluster.create(nodeManifest('in-api-only'));
    w.publish(['from-summary'], T0 - 5_000);
    expect(names(await w.decorated.nodes())).toEqual(['from-summary']);
    expect(names(await w.decorated.nodeInfos())).toEqual(['from-summary']);
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 2, direct: 0 });
  });

  it.each([
    ['none published', () => {}, 'none published yet (is the shim running?)'],
    [
      'older than a minute',
      (w: ReturnType<typeof world>) => w.publish(['from-summary'], T0 - 61_000),
      'stale',
    ],
    [
      'unreadable',
      (w: ReturnType<typeof world>) => w.fail(new SummaryUnavailableError('no such bucket')),
      'unreadable',
    ],
  ] as const)('reads the API server when the summary is %s, and says why', async (_, arrange, why) => {
    const w = world();
    w.cluster.create(nodeManifest('in-api'));
    arrange(w);
    expect(names(await w.decorated.nodes())).toEqual(['in-api']);
    expect(w.notUsed()).toEqual([why]);
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 0, direct: 1 });
  });

  it('reads Nodes without pods and NodeClaims from a summary whose pods do not parse, and Nodes with pods from the API server', async () => {
    const w = world();
    w.cluster.create(nodeManifest('in-api'));
    await w.cluster.createNodeClaim(newNodeClaim('in-api'));
    w.publish(['from-summary'], T0 - 5_000, true);
    expect(names(await w.decorated.nodeInfos())).toEqual(['from-summary']);
    expect(names(await w.decorated.nodeClaims())).toEqual([]);
    expect(names(await w.decorated.nodes())).toEqual(['in-api']);
    expect(w.notUsed()).toEqual(['unreadable']);
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 2, direct: 1 });
  });

  it('says why once a minute, not on every read', async () => {
    const w = world();
    await w.decorated.nodes();
    await w.decorated.nodes();
    expect(w.notUsed()).toHaveLength(1);
    w.clock.advance(61_000);
    await w.decorated.nodes();
    expect(w.notUsed()).toHaveLength(2);
  });

  it('asks the API server for consistent reads, whatever the summary', async () => {
    const w = world();
    w.cluster.create(nodeManifest('in-api'));
    w.publish(['from-summary'], T0);
    expect(names(await w.decorated.nodeInfos({ consistent: true }))).toEqual(['in-api']);
    expect(w.reads()).toBe(0);
  });

  it('reads back from the API server what this container wrote to NodeClaims lately', async () => {
    const w = world();
    w.publish([], T0);
    await w.decorated.createNodeClaim(newNodeClaim('fresh'));
    // The summary does not show it yet; the read does.
    expect(names(await w.decorated.nodeClaims())).toEqual(['fresh']);
    // Two minutes on, and behind a summary current since, it is the summary's to show.
    w.clock.advance(121_000);
    w.publish([], T0 + 121_000);
    expect(names(await w.decorated.nodeClaims())).toEqual([]);
  });

  it('reads back its own writes of the last two minutes whatever the summary says of its currency', async () => {
    const w = world();
    await w.decorated.createNodeClaim(newNodeClaim('mine'));
    await w.decorated.patchNodeClaimMetadata('mine', { annotations: { 'example.com/mark': 'set' } });
    // A summary that says it is current 30 s after the writes, and shows neither.
    w.clock.advance(60_000);
    w.publish([], T0 + 30_000);
    const read = await w.decorated.nodeClaims();
    expect(names(read)).toEqual(['mine']);
    expect(read.items[0]?.annotations['example.com/mark']).toBe('set');
  });

  it('lists the NodeClaims once, instead of reading each, after writing more than 20 lately', async () => {
    const w = world();
    w.publish([], T0);
    for (let i = 0; i < 21; i++) {
      await w.decorated.createNodeClaim(newNodeClaim(`c${String(i).padStart(2, '0')}`));
    }
    const gets = vi.spyOn(w.cluster, 'nodeClaim');
    const lists = vi.spyOn(w.cluster, 'nodeClaims');
    expect(names(await w.decorated.nodeClaims())).toHaveLength(21);
    expect(gets).not.toHaveBeenCalled();
    expect(lists).toHaveBeenCalledTimes(1);
  });

  it('reads NodeClaims from the API server when the summary is not yet current as of a given time', async () => {
    const w = world();
    await w.cluster.createNodeClaim(newNodeClaim('marked-by-the-last-pass'));
    w.publish([], T0 - 20_000);
    expect(names(await w.decorated.nodeClaims({ freshAsOfMs: T0 - 15_000 }))).toEqual([
      'marked-by-the-last-pass',
    ]);
    expect(names(await w.decorated.nodeClaims({ freshAsOfMs: T0 - 60_000 }))).toEqual([]);
  });

  it("reads Nodes without pods and NodeClaims from the source's head, Nodes with pods from its whole summary, and judges the head's age as the summary's", async () => {
    const clock = makeManualClock(new Date(T0));
    const cluster = makeMemoryCluster({ clock });
    cluster.create(nodeManifest('in-api'));
    const doc = (nodes: readonly string[], atMs: number) => {
      const builder = new SummaryBuilder('prod');
      for (const n of nodes) builder.apply('nodes', 'ADDED', nodeManifest(n));
      const at = new Date(atMs).toISOString();
      return readSummaryDocument(
        encodeSummaryDocument(builder.document(at, { pods: at, nodes: at, nodeClaims: at })),
      );
    };
    let head = doc(['held-head'], T0 - 5_000);
    const calls: string[] = [];
    const source: SummarySource = {
      read: async () => {
        calls.push('read');
        return doc(['whole'], T0 - 5_000);
      },
      readHead: async () => {
        calls.push('readHead');
        return head;
      },
    };
    const decorated = withClusterSummary(cluster, {
      source,
      clock,
      logger: makeLogger({}, { sink: () => {} }),
    });
    expect(names(await decorated.nodeInfos())).toEqual(['held-head']);
    expect(names(await decorated.nodeClaims())).toEqual([]);
    expect(names(await decorated.nodes())).toEqual(['whole']);
    expect(calls).toEqual(['readHead', 'readHead', 'read']);
    // A head whose summary is stale is not used either.
    head = doc(['held-head'], T0 - 61_000);
    expect(names(await decorated.nodeInfos())).toEqual(['in-api']);
  });
});
