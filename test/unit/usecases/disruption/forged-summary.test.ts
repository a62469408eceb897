import { describe, expect, it } from 'vitest';
import { forgedSummary, pass, type SummaryJson, threeNodes, type World } from './pass-world.ts';

// Whole disruption passes on the in-memory cluster whose list reads come from a cluster summary
// (the product's own adapter and document format) that disagrees with the API server: a NodeClaim
// dated years back, a NodePool hash changed, a Ready Node of 100,000 CPUs that does not exist. The
// pass acts on what the API server says, so it expires, drifts, replaces and deletes nothing.

const claimNames = async (w: World) =>
  (await w.cluster.nodeClaims()).items
    .filter((c) => !c.deleting)
    .map((c) => c.name)
    .sort();

describe('a disruption pass over a cluster summary that disagrees with the API server', () => {
  it('expires no NodeClaim the summary dates back years', async () => {
    const w = await threeNodes();
    const before = await claimNames(w);
    const listed = forgedSummary(w, (doc) => {
      for (const c of doc.nodeClaims) c.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    });
    const result = await pass(w, { cluster: listed });
    expect(result.decisions.filter((d) => d.reason === 'Expired')).toEqual([]);
    expect(await claimNames(w)).toEqual(before);
  });

  it('writes no Drifted=True and replaces nothing for a NodePool hash only the summary changed', async () => {
    const w = await threeNodes();
    const before = await claimNames(w);
    const listed = forgedSummary(w, (doc) => {
      for (const c of doc.nodeClaims)
        c.metadata.annotations = { ...c.metadata.annotations, 'karpenter.sh/nodepool-hash': 'forged' };
    });
    const result = await pass(w, { cluster: listed });
    expect(result.decisions.every((d) => d.outcome === 'abandoned')).toBe(true);
    expect(await claimNames(w)).toEqual(before);
    for (const claim of (await w.cluster.nodeClaims()).items) {
      expect(claim.status.conditions.find((c) => c.type === 'Drifted')?.status).not.toBe('True');
    }
  });

  it('deletes no node to move its pods onto a Ready Node of 100,000 CPUs that does not exist', async () => {
    const w = await threeNodes();
    const before = await claimNames(w);
    const listed = forgedSummary(w, (doc) => {
      const model = structuredClone(doc.nodes[0]) as SummaryJson;
      model.metadata = { ...model.metadata, name: 'phantom', uid: 'phantom-uid' };
      model.spec = { ...model.spec, providerID: 'aws:///us-east-1a/i-0phantom' };
      model.status = {
        ...model.status,
        capacity: { cpu: '100000', memory: '400000Gi', pods: '110' },
        allocatable: { cpu: '100000', memory: '400000Gi', pods: '110' },
      };
      // One pod would move there (the pods' anti-affinity keeps one per node): a node less.
      doc.nodes.push(model);
    });
    const result = await pass(w, { cluster: listed });
    expect(result.decisions.filter((d) => d.outcome !== 'abandoned')).toEqual([]);
    expect(await claimNames(w)).toEqual(before);
  });
});
