import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { ClusterNodeClaim, NodeClaimStatusPatch } from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import {
  type ClaimWrite,
  CONDITION_WRITERS,
  startConditionWrites,
  WRITE_MARGIN_MS,
} from '../../../../shared/usecases/disruption/condition-writes.ts';
import type { ClaimChanges } from '../../../../shared/usecases/disruption/conditions.ts';
import { recordingMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';
import { watched } from '../../../fixtures/watched.ts';
import { T0 } from './builders.ts';

// A disruption pass writes the conditions it computed in the background while its commands start:
// a few NodeClaims at a time, each against the NodeClaim as listed, until the deadline.

const status: NodeClaimStatusPatch = {
  conditions: [{ type: 'Consolidatable', status: 'True', reason: 'Consolidatable', message: '' }],
};

/**
 * The in-memory cluster with NodeClaims `names`, its writes held until `open()` and recorded as they
 * start (with the resourceVersion of the NodeClaim they were given as listed); `write` makes the
 * change of one NodeClaim as a pass computes it.
 */
async function gatedCluster(names: readonly string[]) {
  const memory = makeMemoryCluster({ clock: makeManualClock(new Date(T0)) });
  for (const name of names) await memory.createNodeClaim(newNodeClaim(name));
  const listed = new Map((await memory.nodeClaims()).items.map((c) => [c.name, c]));
  const started: string[] = [];
  const done: string[] = [];
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let failOn: string | undefined;
  const cluster = watched(memory, (method, args) => {
    const name = String(args[0]);
    if (method === 'patchNodeClaimStatus') {
      started.push(
        `status ${name} ${(args[2] as ClusterNodeClaim | undefined)?.resourceVersion ?? 'read first'}`,
      );
      return gate.then(async () => {
        if (name === failOn) throw new Error(`the API server refused ${name}`);
        await memory.patchNodeClaimStatus(name, args[1] as NodeClaimStatusPatch);
        done.push(name);
      });
    }
    if (method === 'patchNodeClaimMetadata') started.push(`metadata ${name}`);
    return undefined;
  });
  const write = (name: string, more: Partial<ClaimChanges> = {}): ClaimWrite => {
    const claim = { ...(listed.get(name) as ClusterNodeClaim), resourceVersion: `rv-${name}` };
    return {
      claim,
      changes: { status, view: claim, ...more },
      recompute: () => ({ status, view: claim, ...more }),
    };
  };
  /** Whether the NodeClaim now carries the Consolidatable condition. */
  const written = async (name: string) =>
    (await memory.nodeClaim(name))?.status.conditions.some((c) => c.type === 'Consolidatable') === true;
  return {
    cluster,
    started,
    done,
    write,
    written,
    open: () => open(),
    failOn: (name: string) => {
      failOn = name;
    },
  };
}

const named = (count: number) => Array.from({ length: count }, (_, i) => `c${i}`);

function sink() {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) });
  return { lines, out: { logger, metrics: recordingMetrics() } };
}

describe('the condition writes of a disruption pass', () => {
  it('run in the background, a few at a time, each against the NodeClaim as listed', async () => {
    const g = await gatedCluster(named(20));
    const { out } = sink();
    const writes = named(20).map((n) => g.write(n));
    const running = startConditionWrites({ cluster: g.cluster, ...out }, writes, {
      deadlineMs: () => undefined,
      nowMs: () => T0,
    });
    // The caller goes on while the writes wait: no more than the writers have started.
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.started).toHaveLength(CONDITION_WRITERS);
    expect(g.done).toEqual([]);
    expect(g.started[0]).toBe('status c0 rv-c0');
    g.open();
    await running.finished();
    expect(g.done).toHaveLength(20);
    expect(await g.written('c19')).toBe(true);
  });

  it('writes the status before the annotations that record what it was computed from', async () => {
    const g = await gatedCluster(['a']);
    g.open();
    const running = startConditionWrites(
      { cluster: g.cluster, ...sink().out },
      [g.write('a', { metadata: { annotations: { 'flotilla.io/pod-set': 'x' } } })],
      { deadlineMs: () => undefined, nowMs: () => T0 },
    );
    await running.finished();
    expect(g.started).toEqual(['status a rv-a', 'metadata a']);
  });

  it('starts none inside the margin before the deadline, and says how many it left to the next pass', async () => {
    const g = await gatedCluster(named(12));
    g.open();
    const { lines, out } = sink();
    let now = T0;
    const deadline = T0 + WRITE_MARGIN_MS + 5_000;
    const writes = named(12).map((n) => g.write(n));
    const running = startConditionWrites({ cluster: g.cluster, ...out }, writes, {
      deadlineMs: () => deadline,
      // Each check of the clock finds a second gone: the margin is reached after a few writes.
      nowMs: () => {
        now += 1_000;
        return now;
      },
    });
    const counts = await running.finished();
    const deferred = lines.find((l) => l['message'] === 'nodeclaim conditions deferred');
    expect(g.done.length).toBeGreaterThan(0);
    expect(g.done.length).toBeLessThan(12);
    expect(deferred).toMatchObject({ count: 12 - g.done.length, why: 'the pass deadline is near' });
    // What the pass's line counts.
    expect(counts).toEqual({ written: g.done.length, deferred: 12 - g.done.length });
    expect(now - 1_000).toBeGreaterThan(deadline - WRITE_MARGIN_MS);
  });

  it("starts none after the end of the pass's planned work, long before its deadline", async () => {
    const g = await gatedCluster(named(12));
    g.open();
    const { lines, out } = sink();
    let now = T0;
    const writes = named(12).map((n) => g.write(n));
    const running = startConditionWrites({ cluster: g.cluster, ...out }, writes, {
      deadlineMs: () => T0 + 10 * 60_000,
      workEndMs: () => T0 + 5_500,
      nowMs: () => {
        now += 1_000;
        return now;
      },
    });
    const counts = await running.finished();
    expect(counts.written).toBeGreaterThan(0);
    expect(counts.written).toBeLessThan(12);
    expect(counts).toEqual({ written: g.done.length, deferred: 12 - g.done.length });
    expect(lines.find((l) => l['message'] === 'nodeclaim conditions deferred')).toMatchObject({
      count: 12 - g.done.length,
      why: "the pass's planned work time is over",
    });
  });

  it('starts none once the pass has lost its lease', async () => {
    const g = await gatedCluster(named(12));
    g.open();
    const { lines, out } = sink();
    let lost = false;
    const writes = named(12).map((n) => g.write(n));
    const running = startConditionWrites({ cluster: g.cluster, ...out }, writes, {
      deadlineMs: () => undefined,
      nowMs: () => T0,
      stopped: () => {
        // The lease is found lost after the first few writes.
        if (g.started.length >= 3) lost = true;
        return lost;
      },
    });
    await running.finished();
    expect(g.done).toHaveLength(3);
    expect(lines.find((l) => l['message'] === 'nodeclaim conditions deferred')).toMatchObject({
      count: 9,
      why: 'the pass lost its lease',
    });
  });

  it('stops at the first failure and throws it once every writer is done', async () => {
    const g = await gatedCluster(named(30));
    g.failOn('c0');
    const writes = named(30).map((n) => g.write(n));
    const running = startConditionWrites({ cluster: g.cluster, ...sink().out }, writes, {
      deadlineMs: () => undefined,
      nowMs: () => T0,
    });
    g.open();
    await expect(running.finished()).rejects.toThrow('the API server refused c0');
    // The writers in flight finished theirs; none started another after the failure.
    expect(g.started).toHaveLength(CONDITION_WRITERS);
  });

  it('logs a drift decision for a NodeClaim once its write is done', async () => {
    const g = await gatedCluster(['d']);
    g.open();
    const { lines, out } = sink();
    const running = startConditionWrites(
      { cluster: g.cluster, ...out },
      [g.write('d', { drifted: { reason: 'NodePoolDrifted', message: 'the template changed' } })],
      { deadlineMs: () => undefined, nowMs: () => T0 },
    );
    await running.finished();
    expect(lines.filter((l) => l['decision'] === 'drifted')).toEqual([
      expect.objectContaining({
        message: 'nodeclaim drifted',
        reason: 'NodePoolDrifted',
        nodeClaim: 'd',
        detail: 'the template changed',
      }),
    ]);
    expect(out.metrics.observed.map(([decision]) => decision)).toEqual([
      {
        kind: 'drifted',
        reason: 'NodePoolDrifted',
        nodeClaim: 'd',
        nodePool: expect.any(String),
        detail: 'the template changed',
      },
    ]);
  });
});
