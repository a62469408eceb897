import { describe, expect, it } from 'vitest';
import { withClusterSummary } from '../../../../shared/adapters/summary-cluster.ts';
import { encodeSummaryDocument, readSummaryDocument, SummaryBuilder } from '../../../../shared/apis/index.ts';
import type { ClusterSummary } from '../../../../shared/ports/summary.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// Whole disruption passes on the in-memory cluster whose list reads come from a cluster summary
// (the product's own adapter and document format) that disagrees with the API server: a NodeClaim
// dated years back, a NodePool hash changed, a Ready Node of 100,000 CPUs that does not exist. The
// pass acts on what the API server says, so it expires, drifts, replaces and deletes nothing.

interface Json {
  metadata: { name?: string; uid?: string; creationTimestamp?: string; annotations: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** The cluster as the disruption Lambda wires it, its lists read from the summary `change` makes of the cluster now. */
function forged(w: World, change: (doc: { nodes: Json[]; nodeClaims: Json[]; pods: Json[] }) => void) {
  const copy = (kind: 'Pod' | 'Node' | 'NodeClaim') =>
    structuredClone(w.cluster.list(kind)) as unknown as Json[];
  const doc = { nodes: copy('Node'), nodeClaims: copy('NodeClaim'), pods: copy('Pod') };
  change(doc);
  const builder = new SummaryBuilder('test');
  builder.replace('pods', doc.pods);
  builder.replace('nodes', doc.nodes);
  builder.replace('nodeClaims', doc.nodeClaims);
  const at = w.clock.now().toISOString();
  const summary: ClusterSummary = readSummaryDocument(
    encodeSummaryDocument(builder.document(at, { pods: at, nodes: at, nodeClaims: at })),
  );
  return withClusterSummary(w.cluster, {
    source: { read: async () => summary },
    clock: w.clock,
    logger: w.logger,
  });
}

const claimNames = async (w: World) =>
  (await w.cluster.nodeClaims()).items
    .filter((c) => !c.deleting)
    .map((c) => c.name)
    .sort();

describe('a disruption pass over a cluster summary that disagrees with the API server', () => {
  it('expires no NodeClaim the summary dates back years', async () => {
    const w = await threeNodes();
    const before = await claimNames(w);
    const listed = forged(w, (doc) => {
      for (const c of doc.nodeClaims) c.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    });
    const result = await pass(w, { cluster: listed });
    expect(result.decisions.filter((d) => d.reason === 'Expired')).toEqual([]);
    expect(await claimNames(w)).toEqual(before);
  });

  it('writes no Drifted=True and replaces nothing for a NodePool hash only the summary changed', async () => {
    const w = await threeNodes();
    const before = await claimNames(w);
    const listed = forged(w, (doc) => {
      for (const c of doc.nodeClaims) c.metadata.annotations['karpenter.sh/nodepool-hash'] = 'forged';
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
    const listed = forged(w, (doc) => {
      const model = structuredClone(doc.nodes[0]) as Json;
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
