import { describe, expect, it } from 'vitest';
import { forgedSummaryOnce } from '../../../fixtures/forged-summary.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// A disruption pass whose list reads come from a cluster summary (the product's own adapter and
// document format) that adds phantom initialized NodeClaims and Nodes to a NodePool: a percentage
// budget over that many nodes allows more than it does over the API server's. The pass's commands
// count the NodePool's nodes as the API server lists them, so it disrupts no more nodes than the
// same pass reading the API server directly.

type Json = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } };

const POOL_LABEL = 'karpenter.sh/nodepool';

/** The three nodes emptied of their pods, their NodePool's budget one node in three. */
async function emptyNodes(): Promise<{ w: World; pool: string }> {
  const w = await threeNodes();
  const claims = (await w.cluster.nodeClaims()).items;
  const pool = claims[0]?.nodePoolName ?? '';
  expect(claims.map((c) => c.nodePoolName)).toEqual([pool, pool, pool]);
  const raw = w.cluster.get('NodePool', pool) as { spec: Record<string, unknown> };
  w.cluster.replaceSpec('NodePool', pool, {
    ...raw.spec,
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '33%' }],
    },
  });
  for (const name of ['a', 'b', 'c']) w.cluster.removePod('default', name);
  return { w, pool };
}

interface Doc {
  nodes: Json[];
  nodeClaims: Json[];
  pods: Json[];
}

/** The cluster as the disruption Lambda wires it, its lists from a summary with `phantoms` made-up nodes of `pool`. */
function withPhantoms(w: World, pool: string, phantoms: number) {
  return forged(w, (doc) => {
    const [claim] = doc.nodeClaims.filter(
      (c) => (c.metadata['labels'] as Record<string, string>)[POOL_LABEL] === pool,
    );
    const node = doc.nodes.find(
      (n) => n.metadata.name === (claim?.['status'] as { nodeName?: string } | undefined)?.nodeName,
    );
    if (claim === undefined || node === undefined) throw new Error('no node of the pool to copy');
    for (let i = 0; i < phantoms; i++) {
      const name = `phantom-${i}`;
      const providerID = `aws:///us-east-1a/i-0phantom${i}`;
      const c = structuredClone(claim);
      c.metadata = { ...c.metadata, name, uid: `${name}-claim-uid` };
      c['status'] = { ...(c['status'] as object), nodeName: name, providerID };
      doc.nodeClaims.push(c);
      const n = structuredClone(node);
      // Initialized and Ready, counted by the budget, but never a candidate itself.
      n.metadata = {
        ...n.metadata,
        name,
        uid: `${name}-node-uid`,
        annotations: { ...(n.metadata['annotations'] as object), 'karpenter.sh/do-not-disrupt': 'true' },
        labels: { ...(n.metadata['labels'] as object), 'kubernetes.io/hostname': name },
      };
      n['spec'] = { ...(n['spec'] as object), providerID };
      doc.nodes.push(n);
    }
  });
}

/** The cluster as the disruption Lambda wires it, its lists from the summary `change` makes of the cluster now. */
function forged(w: World, change: (doc: Doc) => void) {
  return forgedSummaryOnce<Json>(w.cluster, w.clock, w.logger, change, { finishedPods: true });
}

/** The NodeClaims a pass disrupted: deleted, or being deleted. */
async function disrupted(w: World, before: readonly string[]): Promise<string[]> {
  const now = new Map((await w.cluster.nodeClaims()).items.map((c) => [c.name, c]));
  return before.filter((name) => now.get(name) === undefined || now.get(name)?.deleting === true);
}

describe('a disruption pass over a summary that adds phantom nodes to a NodePool', () => {
  it("disrupts no more nodes than the NodePool's budget allows on the API server's nodes", async () => {
    const honest = await emptyNodes();
    const honestBefore = (await honest.w.cluster.nodeClaims()).items.map((c) => c.name);
    await pass(honest.w);
    const allowed = await disrupted(honest.w, honestBefore);
    // One node in three (33%, rounded up): the empty nodes are deleted one a pass.
    expect(allowed).toHaveLength(1);

    const { w, pool } = await emptyNodes();
    const before = (await w.cluster.nodeClaims()).items.map((c) => c.name);
    // Nine more initialized nodes: 33% of twelve would allow four.
    const result = await pass(w, { cluster: withPhantoms(w, pool, 9) });
    expect(result.decisions.length).toBeGreaterThan(0);
    expect(await disrupted(w, before)).toHaveLength(allowed.length);
  });

  it('counts a NotReady node of the NodePool as being disrupted when the summary shows it Ready', async () => {
    const setUp = async () => {
      const { w } = await emptyNodes();
      const before = (await w.cluster.nodeClaims()).items.map((c) => c.name);
      const down = (w.cluster.list('Node')[0] as Json).metadata.name;
      w.cluster.setNodeReady(down, false);
      // Never a candidate itself (a user's annotation), but counted by the budget.
      await w.cluster.patchNode(down, { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
      return { w, before, down };
    };
    const honest = await setUp();
    await pass(honest.w);
    // One node in three is being disrupted (NotReady): the budget allows no other.
    expect(await disrupted(honest.w, honest.before)).toEqual([]);

    const { w, before, down } = await setUp();
    const snapshot = structuredClone(w.cluster.get('Node', down)) as Json;
    const listed = forged(w, (doc) => {
      doc.nodes = doc.nodes.map((n) => (n.metadata.name === down ? structuredClone(ready(snapshot)) : n));
    });
    await pass(w, { cluster: listed });
    expect(await disrupted(w, before)).toEqual([]);
  });
});

/** A Node as its kubelet reports it Ready. */
function ready(node: Json): Json {
  const status = node['status'] as { conditions?: { type: string; status: string }[] };
  return {
    ...node,
    status: {
      ...status,
      conditions: (status.conditions ?? []).map((c) => (c.type === 'Ready' ? { ...c, status: 'True' } : c)),
    },
  };
}
