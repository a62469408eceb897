import { describe, expect, it } from 'vitest';
import type { NodeClaimStatusPatch } from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { watched } from '../../../fixtures/watched.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// A disruption pass decides from the conditions it computes and starts its commands while it
// writes them: on a large cluster the writes (one per NodeClaim whose conditions changed) take
// longer than a pass, and a node that became empty must not wait for them. Nor does it wait for
// the cluster reads before asking EC2 for its instances.

/** The world with pod b's node emptied a minute ago, and a logger whose lines are kept. */
async function emptiedWorld() {
  const world = await threeNodes();
  world.cluster.removePod('default', 'b');
  world.clock.advance(60_000);
  await world.step();
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) });
  const passLine = () => lines.find((l) => l['decision'] === 'disruptionPass');
  return { world, logger, passLine };
}

/** The cluster, counting the pass's reads of every NodeClaim (a confirmation lists one NodePool's). */
function countingReads(cluster: World['cluster']) {
  const counter = { reads: 0, cluster };
  counter.cluster = watched(cluster, (method, args) => {
    if (method === 'nodeClaims' && (args[0] as { nodePool?: string } | undefined)?.nodePool === undefined)
      counter.reads += 1;
    return undefined;
  });
  return counter;
}

describe('a disruption pass and its condition writes', () => {
  it('starts the command for a node emptied since the last pass before its condition writes are done', async () => {
    const world = await threeNodes();
    const { clock, cluster } = world;
    const claims = (await cluster.nodeClaims()).items;
    expect(claims).toHaveLength(3);
    // The pod of one node goes; a minute later the pass runs, having never written a condition.
    const pods = cluster.list('Pod') as { metadata: { name: string }; spec: { nodeName: string } }[];
    const gone = pods.find((p) => p.metadata.name === 'b');
    cluster.removePod('default', 'b');
    clock.advance(60_000);
    await world.step();
    const emptied = claims.find((c) => c.status.nodeName === gone?.spec.nodeName);
    expect(emptied).toBeDefined();

    // The Consolidatable writes hang until the command has started, or for 2 s at most.
    const order: string[] = [];
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
      setTimeout(resolve, 2_000);
    });
    const gated = watched(cluster, (method, args) => {
      if (method === 'deleteNodeClaim') {
        order.push(`delete ${String(args[0])}`);
        open();
      }
      const patch = args[1] as NodeClaimStatusPatch | undefined;
      if (method === 'patchNodeClaimStatus' && patch?.conditions?.some((c) => c.type === 'Consolidatable')) {
        return gate.then(() => {
          order.push(`consolidatable ${String(args[0])}`);
          return cluster.patchNodeClaimStatus(args[0] as string, patch);
        });
      }
      return undefined;
    });
    const result = await pass(world, { cluster: gated });
    expect(result.decisions).toEqual([
      expect.objectContaining({
        reason: 'Empty',
        candidates: [expect.objectContaining({ nodeClaim: emptied?.name })],
      }),
    ]);
    // The command came first; the writes followed, every NodeClaim's (the emptied one's too).
    expect(order[0]).toBe(`delete ${emptied?.name}`);
    expect(order.filter((o) => o.startsWith('consolidatable')).sort()).toEqual(
      claims.map((c) => `consolidatable ${c.name}`).sort(),
    );
    const after = (await cluster.nodeClaims()).items;
    for (const claim of after) {
      expect(claim.status.conditions.find((c) => c.type === 'Consolidatable')?.status).toBe('True');
    }
  });

  it('asks EC2 for its instances beside the cluster reads, not after them', async () => {
    const world = await threeNodes();
    const order: string[] = [];
    // The NodeClaim read waits for the EC2 list to start, or for 2 s at most.
    let listed = () => {};
    const listStarted = new Promise<void>((resolve) => {
      listed = resolve;
      setTimeout(resolve, 2_000);
    });
    const cloud = watched(world.cloud, (method) => {
      if (method === 'list') {
        order.push('ec2 list');
        listed();
      }
      return undefined;
    });
    const cluster = watched(world.cluster, (method, args) => {
      if (method !== 'nodeClaims') return undefined;
      return listStarted.then(() => {
        order.push('nodeclaims read');
        return world.cluster.nodeClaims(...(args as Parameters<typeof world.cluster.nodeClaims>));
      });
    });
    await pass(world, { cluster, cloud });
    expect(order.slice(0, 2)).toEqual(['ec2 list', 'nodeclaims read']);
  });

  it('abandons a command whose candidate a pod blocked during the validation wait, and says which pod', async () => {
    const world = await threeNodes();
    const { clock, cluster } = world;
    const claims = (await cluster.nodeClaims()).items;
    const pods = cluster.list('Pod') as { metadata: { name: string }; spec: { nodeName: string } }[];
    const node = pods.find((p) => p.metadata.name === 'b')?.spec.nodeName ?? '';
    cluster.removePod('default', 'b');
    clock.advance(60_000);
    await world.step();
    const lines: Record<string, unknown>[] = [];
    const result = await pass(world, {
      logger: makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) }),
      // A pod that must not be disrupted lands on the empty node while the command waits.
      sleep: async (ms) => {
        cluster.create({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: 'pinned',
            namespace: 'default',
            annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
          },
          spec: { nodeName: node, containers: [{ name: 'app', image: 'app' }] },
        });
        cluster.setPodPhase('default', 'pinned', 'Running');
        clock.advance(ms);
      },
    });
    expect(result.decisions).toEqual([
      expect.objectContaining({
        reason: 'Empty',
        outcome: 'abandoned',
        why: `nodeClaim ${claims.find((c) => c.status.nodeName === node)?.name} is blocked now: pod default/pinned has karpenter.sh/do-not-disrupt`,
        // Karpenter's failed validations, by the command's consolidation type.
        failedValidations: 1,
      }),
    ]);
    // The pass's line counts the candidate that failed its validation, the NodeClaims whose
    // conditions it wrote, and the time of each phase: here the validation wait, in `commands`.
    expect(lines.filter((l) => l['decision'] === 'disruptionPass')).toEqual([
      expect.objectContaining({
        commands: 0,
        failedValidations: 1,
        conditionWrites: { written: 3, deferred: 0 },
        phasesMs: { read: 0, inFlight: 0, commands: 15_000, report: 0, writes: 0 },
      }),
    ]);
  });

  it('starts no command that would not be done in half the time to its deadline', async () => {
    const { world, logger, passLine } = await emptiedWorld();
    const { clock } = world;
    // 60 s to the deadline: the work is planned in 30 s, too little for a command's 15 s validation
    // and its 20 s of calls after it.
    const early = await pass(world, { logger }, { deadlineMs: () => clock.now().getTime() + 60_000 });
    expect(early.decisions).toEqual([]);
    expect(passLine()).toMatchObject({
      reason: 'deadline',
      commands: 0,
    });
    // With 80 s (40 s of work) the emptied node's command starts.
    const later = await pass(
      world,
      { logger },
      { deadlineMs: () => clock.now().getTime() + 80_000 },
      'pass-2',
    );
    expect(later.decisions).toEqual([expect.objectContaining({ reason: 'Empty', outcome: 'deleted' })]);
  });

  it('ends on the read it has after its last command, without reading the whole cluster again', async () => {
    const { world, logger, passLine } = await emptiedWorld();
    const counted = countingReads(world.cluster);
    const result = await pass(world, { cluster: counted.cluster, logger }, { maxCommands: 1 });
    expect(result.decisions).toEqual([expect.objectContaining({ reason: 'Empty', outcome: 'deleted' })]);
    // The pass's read and the one after the validation wait; none after the command.
    expect(counted.reads).toBe(2);
    expect(passLine()).toMatchObject({
      reason: 'commands started',
      commands: 1,
      inFlight: 0,
    });
  });

  it('ends on its last read when the work time left after a command is too short for another', async () => {
    const { world, logger, passLine } = await emptiedWorld();
    const counted = countingReads(world.cluster);
    // 90 s to the deadline: 45 s of work. The command (35 s planned) starts at once; after its 15 s
    // validation, 30 s are left, too few for another.
    const start = world.clock.now().getTime();
    const result = await pass(
      world,
      { cluster: counted.cluster, logger },
      { deadlineMs: () => start + 90_000 },
    );
    expect(result.decisions).toEqual([expect.objectContaining({ reason: 'Empty', outcome: 'deleted' })]);
    expect(counted.reads).toBe(2);
    expect(passLine()).toMatchObject({
      reason: 'deadline',
      commands: 1,
      // The emptied node is no candidate any more in what the pass reports.
      empty: 0,
    });
  });

  it('keeps a pass whose condition writes fail: its command stands, and the failure is logged', async () => {
    const world = await threeNodes();
    const { clock, cluster } = world;
    const pods = cluster.list('Pod') as { metadata: { name: string }; spec: { nodeName: string } }[];
    const node = pods.find((p) => p.metadata.name === 'b')?.spec.nodeName ?? '';
    cluster.removePod('default', 'b');
    clock.advance(60_000);
    await world.step();
    const lines: Record<string, unknown>[] = [];
    const failing = watched(cluster, (method, args) => {
      const patch = args[1] as NodeClaimStatusPatch | undefined;
      if (method === 'patchNodeClaimStatus' && patch?.conditions?.some((c) => c.type === 'Consolidatable')) {
        return Promise.reject(new Error('the API server is unavailable'));
      }
      return undefined;
    });
    const result = await pass(world, {
      cluster: failing,
      logger: makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) }),
    });
    expect(result.decisions).toEqual([
      expect.objectContaining({
        reason: 'Empty',
        outcome: 'deleted',
        candidates: [expect.objectContaining({ node })],
      }),
    ]);
    expect(lines.find((l) => l['message'] === 'nodeclaim conditions not written')).toMatchObject({
      level: 'error',
      error: 'the API server is unavailable',
    });
  });
});
