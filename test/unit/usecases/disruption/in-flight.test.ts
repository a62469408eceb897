import { describe, expect, it } from 'vitest';
import { makeMemoryCluster, makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import { DISRUPTED_TAINT, NodeClaimConditionType } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { Confirmation } from '../../../../shared/usecases/disruption/confirm.ts';
import { progressCommands, removeStaleMarks } from '../../../../shared/usecases/disruption/in-flight.ts';
import type { PassView } from '../../../../shared/usecases/disruption/pass-view.ts';
import { SPOT_FAILED_ANNOTATION } from '../../../../shared/usecases/disruption/replacement-capacity.ts';
import type { ClusterState } from '../../../../shared/usecases/state/cluster-state.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  encodeCommand,
  pendingReplacements,
} from '../../../../shared/usecases/state/command-record.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { watched } from '../../../fixtures/watched.ts';
import { clusterNode, condition, iso, nodeClaim, READY_CONDITIONS, T0 } from './builders.ts';

// A command still in flight is repeated by every pass (its marks and its launch request), and a
// repeat writes only what a read shows missing: a Node that shows the taint is not written again.

const record: CommandRecord = {
  id: 'c1',
  method: 'single-node',
  reason: 'Underutilized',
  candidates: ['a', 'b'],
  replacements: ['r1'],
  startedAt: iso(T0),
};

function view(nodes: readonly ClusterNode[], carried: CommandRecord = record) {
  const clock = makeManualClock(new Date(T0 + 60_000));
  const memory = makeMemoryCluster({ clock });
  const written: string[] = [];
  /** Every write to the cluster, patches or not. */
  const writes: string[] = [];
  const metadata: [string, unknown][] = [];
  const logged: Record<string, unknown>[] = [];
  const decisions: unknown[] = [];
  let claims: ClusterNodeClaim[] = [];
  const cluster = watched(memory, (method, args) => {
    if (method.startsWith('patch')) written.push(`${method} ${String(args[0])}`);
    if (/^(create|patch|delete|evict|record)/.test(method)) writes.push(`${method} ${String(args[0])}`);
    if (method === 'patchNodeClaimMetadata') metadata.push([String(args[0]), args[1]]);
    // The API server has the NodeClaims the pass listed.
    if (method === 'nodeClaim') return Promise.resolve(claims.find((c) => c.name === args[0]));
    return undefined;
  });
  const marked = { annotations: { [COMMAND_ANNOTATION]: encodeCommand(carried) } };
  const reason = condition(NodeClaimConditionType.disruptionReason, 'True', T0, 'Underutilized');
  claims = [
    nodeClaim('a', { ...marked, conditions: [...READY_CONDITIONS, reason] }),
    nodeClaim('b', { ...marked, conditions: [...READY_CONDITIONS, reason] }),
    // The replacement: launched, not initialized yet.
    nodeClaim('r1', { nodeName: null, conditions: [condition('Launched', 'True')] }),
  ];
  const launches: string[][] = [];
  const passView: PassView = {
    ports: {
      cluster,
      terminationQueue: makeMemoryTerminationQueue(clock),
      requestLaunch: async (names) => {
        launches.push([...names]);
      },
      logger: makeLogger({}, { sink: (line) => logged.push(JSON.parse(line) as Record<string, unknown>) }),
      metrics: quietMetrics,
    },
    state: { nodes } as unknown as ClusterState,
    claims,
    input: undefined,
    pools: new Map(),
    classes: new Map(),
    leaseToken: 1,
    nowMs: clock.now().getTime(),
    record: (decision) => decisions.push(decision),
    confirmation: () =>
      new Confirmation(cluster, { state: passView.state, claims, input: undefined }, (c) => ({ view: c }), {
        nowMs: passView.nowMs,
      }),
  };
  return {
    passView,
    written,
    writes,
    launches,
    metadata,
    logged,
    decisions,
    /** The API server no longer has the NodeClaim. */
    drop: (name: string) => {
      claims = claims.filter((c) => c.name !== name);
    },
  };
}

describe('a disruption command in flight, repeated by the next pass', () => {
  it('writes nothing to Nodes that show the taint already', async () => {
    const tainted = { taints: [DISRUPTED_TAINT] };
    const w = view([clusterNode('node-a', tainted), clusterNode('node-b', tainted)]);
    // Nothing changed: the pass does not read the cluster again for it.
    expect(await progressCommands(w.passView)).toBe(0);
    expect(w.written).toEqual([]);
  });

  it('taints again a Node that shows no taint (it was removed, or never written)', async () => {
    const w = view([clusterNode('node-a', { taints: [DISRUPTED_TAINT] }), clusterNode('node-b')]);
    expect(await progressCommands(w.passView)).toBe(1);
    expect(w.written).toEqual(['patchNode node-b']);
  });

  it('undoes a consolidation command whose replacement is gone, and records the failure on its candidates', async () => {
    const w = view([clusterNode('node-a', { taints: [DISRUPTED_TAINT] }), clusterNode('node-b')]);
    w.drop('r1');
    const withoutReplacement = { ...w.passView, claims: w.passView.claims.filter((c) => c.name !== 'r1') };
    expect(await progressCommands(withoutReplacement)).toBe(1);
    const failedAt = { annotations: { [SPOT_FAILED_ANNOTATION]: iso(T0 + 60_000) } };
    expect(w.metadata).toEqual(
      expect.arrayContaining([
        ['a', failedAt],
        ['b', failedAt],
      ]),
    );
  });
});

describe('a disruption command whose record names a method this version does not know', () => {
  const unknown: CommandRecord = { ...record, method: 'defragment' };

  it('is left as it is, even with its replacement gone, and logged with what to do', async () => {
    const w = view([clusterNode('node-a', { taints: [DISRUPTED_TAINT] }), clusterNode('node-b')], unknown);
    w.drop('r1');
    const withoutReplacement = { ...w.passView, claims: w.passView.claims.filter((c) => c.name !== 'r1') };
    // Looked at, not acted on (a known method's command here is undone, above): nothing changed.
    expect(await progressCommands(withoutReplacement)).toBe(0);
    expect(w.writes).toEqual([]);
    expect(w.launches).toEqual([]);
    expect(w.decisions).toEqual([]);
    expect(w.logged).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'disruption command left alone',
        commandId: 'c1',
        method: 'defragment',
        error: expect.stringMatching(/names method "defragment", which this version does not know/),
      }),
    ]);
  });

  it('keeps its NodeClaims in the command: its replacement waits for it, its candidates keep their marks', async () => {
    const w = view([clusterNode('node-a', { taints: [DISRUPTED_TAINT] }), clusterNode('node-b')], unknown);
    // Not a NodeClaim free for another command (the replacement is no empty node to reclaim).
    expect(pendingReplacements(w.passView.claims)).toEqual(new Set(['r1']));
    await removeStaleMarks(w.passView);
    expect(w.writes).toEqual([]);
  });
});
