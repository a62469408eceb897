import { describe, expect, it } from 'vitest';
import { parseSchedules, SCHEDULES_ANNOTATION } from '../../../../shared/apis/schedules.ts';
import { allowedDisruptions, type PdbLimit } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import { buildCandidates, type CandidateInput } from '../../../../shared/usecases/disruption/candidates.ts';
import { scheduleWindow } from '../../../../shared/usecases/disruption/schedule-window.ts';
import { validateCommand } from '../../../../shared/usecases/disruption/validation.ts';
import { boundPod, clusterNode, MINUTE, nodeClaim, pool, simulation, T0 } from './builders.ts';

const HOUR = 60 * MINUTE;

// A schedule's window that holds a NodePool below what it runs empties it down to the window's
// limits: the fewest pods first, within the budgets that name no reason and the pods' PDBs.

/** A NodePool with one window, open from 09:00 to 17:00 UTC (T0 is 10:00 UTC), holding `hold`. */
function heldPool(
  name: string,
  hold: Record<string, unknown>,
  budgets = [{ nodes: '100%' }],
): ClusterNodePool {
  const annotation = JSON.stringify([
    { name: 'day', start: '0 9 * * *', end: '0 17 * * *', timeZone: 'UTC', ...hold },
  ]);
  const schedules = parseSchedules({ [SCHEDULES_ANNOTATION]: annotation }, name, false);
  return pool(name, { budgets }, schedules === undefined ? {} : { schedules });
}

/** A launched NodeClaim of 4 CPUs in `poolName`, and its Node running `pods` pods. */
function member(
  name: string,
  poolName: string,
  pods: number,
): { claim: ClusterNodeClaim; node: ClusterNode } {
  const base = nodeClaim(name, { pool: poolName });
  return {
    claim: { ...base, status: { ...base.status, capacity: { cpu: 4000, memory: 16 * 1024 ** 3 } } },
    node: clusterNode(`node-${name}`, {
      pool: poolName,
      pods: Array.from({ length: pods }, (_, i) => boundPod(`${name}-web-${i}`)),
    }),
  };
}

function setOf(
  pools: readonly ClusterNodePool[],
  members: readonly { claim: ClusterNodeClaim; node: ClusterNode }[],
  more: Partial<CandidateInput> = {},
) {
  return buildCandidates({
    nodeClaims: members.map((m) => m.claim),
    nodes: members.map((m) => m.node),
    nodePools: new Map(pools.map((p) => [p.pool.name, p])),
    pdbs: [],
    inCommand: new Set(),
    nominated: new Set(),
    priceOf: () => 0.1,
    nowMs: T0,
    ...more,
  });
}

function commandFor(set: ReturnType<typeof setOf>, pools: readonly ClusterNodePool[], nowMs = T0) {
  const allowed = new Map(
    pools.map((p) => {
      const counts = set.counts.get(p.pool.name) ?? { nodes: 0, disrupting: 0 };
      return [p.pool.name, allowedDisruptions(p.disruption.budgets, 'Scheduled', counts, nowMs).allowed];
    }),
  );
  const looked = (set.windowCandidates ?? []).filter((c) => scheduleWindow.shouldDisrupt(c, nowMs));
  return scheduleWindow.computeCommands(looked, allowed, simulation(), {
    instanceTypes: () => [],
    poolTotals: new Map(),
    nowMs,
    ...(set.windowExcess === undefined ? {} : { windowExcess: set.windowExcess }),
  });
}

const names = (commands: ReturnType<typeof commandFor>) =>
  commands.flatMap((c) => c.candidates.map((x) => x.nodeClaim.name));

describe('a schedule window that holds a NodePool below what it runs', () => {
  const fleet = (poolName: string) => [
    member('busy', poolName, 3),
    member('idle', poolName, 0),
    member('light', poolName, 1),
    member('mid', poolName, 2),
  ];

  it('removes every node when it holds cpu at 0, the fewest pods first, nothing launched', () => {
    const night = heldPool('night', { limits: { cpu: '0' } });
    const commands = commandFor(setOf([night], fleet('night')), [night]);
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatchObject({ reason: 'Scheduled', replacements: [] });
    expect(commands[0]?.policy).toBe(
      'nodePool night: schedule "day" holds limits cpu 0 until 2026-11-21T17:00:00Z (17:00 UTC)',
    );
    expect(names(commands)).toEqual(['idle', 'light', 'mid', 'busy']);
  });

  it('removes only as many nodes as bring it within the held limit (16 CPUs held to 8)', () => {
    const night = heldPool('night', { limits: { cpu: '8' } });
    expect(names(commandFor(setOf([night], fleet('night')), [night]))).toEqual(['idle', 'light']);
    const nodes = heldPool('night', { limits: { nodes: '3' } });
    expect(names(commandFor(setOf([nodes], fleet('night')), [nodes]))).toEqual(['idle']);
  });

  it('counts the NodeClaims a command already takes, and leaves alone a pool within its limit', () => {
    const night = heldPool('night', { limits: { cpu: '8' } });
    const set = setOf([night], fleet('night'), { inCommand: new Set(['idle']) });
    expect(names(commandFor(set, [night]))).toEqual(['light']);
    const roomy = heldPool('night', { limits: { cpu: '16' } });
    expect(setOf([roomy], fleet('night')).windowCandidates).toEqual([]);
    expect(commandFor(setOf([roomy], fleet('night')), [roomy])).toEqual([]);
  });

  it('removes nothing while its window is closed, nor for a window of no new nodes', () => {
    const night = heldPool('night', { limits: { cpu: '0' } });
    expect(
      commandFor(setOf([night], fleet('night'), { nowMs: T0 + 8 * HOUR }), [night], T0 + 8 * HOUR),
    ).toEqual([]);
    const frozen = heldPool('night', { noNewNodes: true });
    expect(commandFor(setOf([frozen], fleet('night')), [frozen])).toEqual([]);
    // Nor in another NodePool without schedules.
    const plain = pool('plain');
    expect(commandFor(setOf([night, plain], fleet('plain')), [night, plain])).toEqual([]);
  });

  it('goes through the budgets that name no reason, and past those that name only others', () => {
    const one = heldPool('night', { limits: { cpu: '0' } }, [{ nodes: '1' }]);
    expect(names(commandFor(setOf([one], fleet('night')), [one]))).toEqual(['idle']);
    const emptyOnly = heldPool('night', { limits: { cpu: '0' } }, [
      { nodes: '0', reasons: ['Empty', 'Drifted', 'Underutilized'] },
    ] as never);
    expect(names(commandFor(setOf([emptyOnly], fleet('night')), [emptyOnly]))).toHaveLength(4);
  });

  it('leaves a node whose PDB allows no eviction, and takes the next', () => {
    const night = heldPool('night', { limits: { cpu: '8' } });
    const pdbs: PdbLimit[] = [
      {
        namespace: 'apps',
        name: 'light',
        selector: { matchLabels: { app: 'light-web-0' } },
        disruptionsAllowed: 0,
      },
    ];
    expect(names(commandFor(setOf([night], fleet('night'), { pdbs }), [night]))).toEqual(['idle', 'mid']);
  });

  it('takes a node nominated for pending pods, which other methods leave', () => {
    const night = heldPool('night', { limits: { cpu: '0' } });
    const set = setOf([night], fleet('night'), { nominated: new Set(['node-idle']) });
    expect(set.candidates.map((c) => c.nodeClaim.name)).not.toContain('idle');
    expect(names(commandFor(set, [night]))).toContain('idle');
  });

  it('keeps, on the read after its wait, only the nodes the pool is still over by', () => {
    const night = heldPool('night', { limits: { cpu: '8' } });
    const [command] = commandFor(setOf([night], fleet('night')), [night]);
    if (command === undefined) throw new Error('no command');
    // Meanwhile a user deleted the busy node: the pool is over by one node now.
    const after = fleet('night').map((m) =>
      m.claim.name === 'busy' ? { ...m, claim: { ...m.claim, deleting: true } } : m,
    );
    const fresh = setOf([night], after);
    const validation = validateCommand({
      command,
      fresh,
      allowed: new Map([['night', 10]]),
      simulate: simulation(),
      nowMs: T0,
    });
    expect(validation).toMatchObject({
      kind: 'valid',
      command: { candidates: [{ nodeClaim: { name: 'idle' } }] },
    });
    expect(validation.kind === 'valid' ? validation.dropped : []).toEqual([
      { nodeClaim: 'light', why: "is no longer needed to bring nodePool night within its schedule's limits" },
    ]);
    // Once the window ends, the command is dropped whole.
    const closed = validateCommand({
      command,
      fresh: setOf([night], fleet('night'), { nowMs: T0 + 8 * HOUR }),
      allowed: new Map([['night', 10]]),
      simulate: simulation(),
      nowMs: T0 + 8 * HOUR,
    });
    expect(closed.kind).toBe('invalid');
  });
});
