import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { explainNode, type NodeExplanation } from '../../../../shared/usecases/explain/node.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// `flotilla explain node` and a disruption pass ask the same function which command comes next
// (next-command.ts): on the same cluster, the nodes explain says disruption takes now are the
// candidates of the command the pass starts, by the same method, and when explain says every
// node stays, the pass starts nothing.

const silent = makeLogger({}, { level: 'error', sink: () => {} });

/** Every NodeClaim of the world, explained as of now, by NodeClaim name. */
async function explainAll(world: World): Promise<Map<string, NodeExplanation>> {
  const ports = {
    cluster: world.cluster,
    cloud: world.cloud,
    logger: silent,
    metrics: quietMetrics,
    nowMs: world.clock.now().getTime(),
  };
  const claims = (await world.cluster.nodeClaims()).items;
  return new Map(
    await Promise.all(claims.map(async (c) => [c.name, await explainNode(ports, c.name)] as const)),
  );
}

/** What explain says disruption does now with each node: `method: nodeClaims`, or `stays`. */
function verdicts(explained: ReadonlyMap<string, NodeExplanation>): Map<string, string> {
  return new Map(
    [...explained].map(([name, e]) => [
      name,
      e.kind === 'node' && e.verdict === 'disrupts' && e.next !== undefined
        ? `${e.next.method}: ${[...e.next.nodeClaims].sort().join(' ')}`
        : 'stays',
    ]),
  );
}

/** Explains every node, then runs one pass; returns both, and checks that they agree. */
async function explainThenPass(world: World) {
  const explained = await explainAll(world);
  const said = verdicts(explained);
  const result = await pass(world);
  const [first] = result.decisions;
  if (first === undefined) {
    // Nothing started: explain took no node either.
    expect([...said.values()].every((v) => v === 'stays')).toBe(true);
  } else {
    const names = first.candidates.map((c) => c.nodeClaim).sort();
    const taken = `${first.method}: ${names.join(' ')}`;
    // Those nodes, and only those, are the ones explain says disruption takes next.
    for (const name of names) expect(said.get(name)).toBe(taken);
    expect(
      [...said]
        .filter(([, v]) => v !== 'stays')
        .map(([n]) => n)
        .sort(),
    ).toEqual(names);
  }
  return { explained, said, result };
}

/** The details of the reasons of this code, over every node. */
const details = (explained: ReadonlyMap<string, NodeExplanation>, code: string) =>
  [...explained.values()].flatMap((e) =>
    e.kind === 'node' ? e.reasons.filter((r) => r.code === code).map((r) => r.detail) : [],
  );

/** Removes pod `b`; a minute later its node is empty. Returns that node's NodeClaim name. */
async function emptyOne(world: World): Promise<string> {
  const pods = world.cluster.list('Pod') as { metadata: { name: string }; spec: { nodeName: string } }[];
  const node = pods.find((p) => p.metadata.name === 'b')?.spec.nodeName;
  world.cluster.removePod('default', 'b');
  world.clock.advance(60_000);
  await world.step();
  const emptied = (await world.cluster.nodeClaims()).items.find((c) => c.status.nodeName === node);
  if (emptied === undefined) throw new Error('pod b had no node');
  return emptied.name;
}

/** The NodePool of the world's three nodes, as applied. */
function poolSpec(world: World): { name: string; spec: Record<string, unknown> } {
  const pool = world.cluster.get('NodePool', 'on-demand') as { spec?: Record<string, unknown> } | undefined;
  if (pool?.spec === undefined) throw new Error('the on-demand NodePool is missing');
  return { name: 'on-demand', spec: structuredClone(pool.spec) };
}

describe('explain node and a disruption pass agree', () => {
  it('three busy nodes, nothing cheaper: every node stays and the pass starts nothing', async () => {
    const world = await threeNodes();
    const claims = (await world.cluster.nodeClaims()).items;
    expect(claims.every((c) => c.nodePoolName === 'on-demand')).toBe(true);
    const { said, result } = await explainThenPass(world);
    expect(said.size).toBe(3);
    expect(result.decisions).toEqual([]);
  });

  it('a node emptied: explain and the pass both take it with emptiness', async () => {
    const world = await threeNodes();
    const emptied = await emptyOne(world);
    const { explained, said, result } = await explainThenPass(world);
    expect(said.get(emptied)).toBe(`emptiness: ${emptied}`);
    expect([...said.values()].filter((v) => v === 'stays')).toHaveLength(2);
    expect(result.decisions[0]).toMatchObject({ method: 'emptiness', action: 'delete', outcome: 'deleted' });
    // Consolidation would move a pod onto the emptied node, but the pass deletes that node first:
    // explain says so, and does not call it the node's next disruption.
    const after = details(explained, 'afterCommand');
    expect(after).toHaveLength(1);
    expect(after[0]).toMatch(
      new RegExp(
        `^emptiness \\(Empty\\) would delete nodeClaims ${emptied} first; then \\S+ \\(Underutilized\\) would `,
      ),
    );
    expect(result.decisions.map((d) => d.method)).toEqual(['emptiness']);
  });

  it('the same node emptied under a budget of 0 nodes: explain says the budget holds it, the pass starts nothing', async () => {
    const world = await threeNodes();
    const { name, spec } = poolSpec(world);
    world.cluster.replaceSpec('NodePool', name, {
      ...spec,
      disruption: { ...(spec['disruption'] as object), budgets: [{ nodes: '0' }] },
    });
    const emptied = await emptyOne(world);
    const { explained, said, result } = await explainThenPass(world);
    expect([...said.values()]).toEqual(['stays', 'stays', 'stays']);
    expect(result.decisions).toEqual([]);
    const e = explained.get(emptied);
    expect(e).toMatchObject({
      verdict: 'stays',
      budgets: expect.arrayContaining([expect.objectContaining({ reason: 'Empty', allowed: 0 })]),
    });
  });

  it('a budget of 0 nodes for Unhealthy only holds node repair, not emptiness: the pass takes the emptied node', async () => {
    const world = await threeNodes();
    const { name, spec } = poolSpec(world);
    world.cluster.replaceSpec('NodePool', name, {
      ...spec,
      disruption: { ...(spec['disruption'] as object), budgets: [{ nodes: '0', reasons: ['Unhealthy'] }] },
    });
    const emptied = await emptyOne(world);
    const { said, result } = await explainThenPass(world);
    expect(said.get(emptied)).toBe(`emptiness: ${emptied}`);
    expect(result.decisions[0]).toMatchObject({ method: 'emptiness', action: 'delete', outcome: 'deleted' });
  });

  it('the NodePool template changed: explain and the pass both replace the same drifted node first', async () => {
    const world = await threeNodes();
    const { name, spec } = poolSpec(world);
    const template = spec['template'] as { metadata?: { labels?: Record<string, string> } };
    world.cluster.replaceSpec('NodePool', name, {
      ...spec,
      template: { ...template, metadata: { ...template.metadata, labels: { team: 'blue' } } },
    });
    world.clock.advance(60_000);
    await world.step();
    const { said, result } = await explainThenPass(world);
    expect(result.decisions[0]).toMatchObject({ method: 'drift', reason: 'Drifted', action: 'replace' });
    expect([...said.values()].filter((v) => v.startsWith('drift: '))).toHaveLength(1);
  });
});
