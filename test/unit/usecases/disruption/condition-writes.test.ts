import { describe, expect, it } from 'vitest';
import type {
  ClusterNodeClaim,
  MetadataPatch,
  NodeClaimStatusPatch,
} from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import {
  type ClaimWrite,
  CONDITION_WRITERS,
  startConditionWrites,
  WRITE_MARGIN_MS,
} from '../../../../shared/usecases/disruption/condition-writes.ts';
import type { ClaimChanges } from '../../../../shared/usecases/disruption/conditions.ts';
import { nodeClaim, T0 } from './builders.ts';

// A disruption pass writes the conditions it computed in the background while its commands start:
// a few NodeClaims at a time, each against the NodeClaim as listed, until the deadline.

const status: NodeClaimStatusPatch = {
  conditions: [{ type: 'Consolidatable', status: 'True', reason: 'Consolidatable', message: '' }],
};

function write(name: string, more: Partial<ClaimChanges> = {}): ClaimWrite {
  const claim = { ...nodeClaim(name), resourceVersion: `rv-${name}` };
  return { claim, changes: { status, view: claim, ...more } };
}

/** A cluster whose writes wait until `open()`; records each write with the basis it was given. */
function gatedCluster() {
  const started: string[] = [];
  const done: string[] = [];
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let failOn: string | undefined;
  const cluster = {
    async patchNodeClaimStatus(name: string, _patch: NodeClaimStatusPatch, asRead?: ClusterNodeClaim) {
      started.push(`status ${name} ${asRead?.resourceVersion ?? 'read first'}`);
      await gate;
      if (name === failOn) throw new Error(`the API server refused ${name}`);
      done.push(name);
    },
    async patchNodeClaimMetadata(name: string, _patch: MetadataPatch) {
      started.push(`metadata ${name}`);
      await gate;
    },
  };
  return {
    cluster,
    started,
    done,
    open: () => open(),
    failOn: (name: string) => {
      failOn = name;
    },
  };
}

function sink() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) }) };
}

describe('the condition writes of a disruption pass', () => {
  it('run in the background, a few at a time, each against the NodeClaim as listed', async () => {
    const g = gatedCluster();
    const { logger } = sink();
    const writes = Array.from({ length: 20 }, (_, i) => write(`c${i}`));
    const running = startConditionWrites({ cluster: g.cluster, logger }, writes, {
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
  });

  it('writes the status before the annotations that record what it was computed from', async () => {
    const g = gatedCluster();
    g.open();
    const running = startConditionWrites(
      { cluster: g.cluster, logger: sink().logger },
      [write('a', { metadata: { annotations: { 'flotilla.io/pod-set': 'x' } } })],
      { deadlineMs: () => undefined, nowMs: () => T0 },
    );
    await running.finished();
    expect(g.started).toEqual(['status a rv-a', 'metadata a']);
  });

  it('starts none inside the margin before the deadline, and says how many it left to the next pass', async () => {
    const g = gatedCluster();
    g.open();
    const { lines, logger } = sink();
    let now = T0;
    const deadline = T0 + WRITE_MARGIN_MS + 5_000;
    const writes = Array.from({ length: 12 }, (_, i) => write(`c${i}`));
    const running = startConditionWrites({ cluster: g.cluster, logger }, writes, {
      deadlineMs: () => deadline,
      // Each check of the clock finds a second gone: the margin is reached after a few writes.
      nowMs: () => {
        now += 1_000;
        return now;
      },
    });
    await running.finished();
    const deferred = lines.find((l) => l['message'] === 'nodeclaim conditions deferred');
    expect(g.done.length).toBeGreaterThan(0);
    expect(g.done.length).toBeLessThan(12);
    expect(deferred).toMatchObject({ count: 12 - g.done.length, why: 'the pass deadline is near' });
    expect(now - 1_000).toBeGreaterThan(deadline - WRITE_MARGIN_MS);
  });

  it('starts none once the pass has lost its lease', async () => {
    const g = gatedCluster();
    g.open();
    const { lines, logger } = sink();
    let lost = false;
    const writes = Array.from({ length: 12 }, (_, i) => write(`c${i}`));
    const running = startConditionWrites({ cluster: g.cluster, logger }, writes, {
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
    const g = gatedCluster();
    g.failOn('c0');
    const writes = Array.from({ length: 30 }, (_, i) => write(`c${i}`));
    const running = startConditionWrites({ cluster: g.cluster, logger: sink().logger }, writes, {
      deadlineMs: () => undefined,
      nowMs: () => T0,
    });
    g.open();
    await expect(running.finished()).rejects.toThrow('the API server refused c0');
    // The writers in flight finished theirs; none started another after the failure.
    expect(g.started).toHaveLength(CONDITION_WRITERS);
  });

  it('logs a drift decision for a NodeClaim once its write is done', async () => {
    const g = gatedCluster();
    g.open();
    const { lines, logger } = sink();
    const running = startConditionWrites(
      { cluster: g.cluster, logger },
      [write('d', { drifted: { reason: 'NodePoolDrifted', message: 'the template changed' } })],
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
  });
});
