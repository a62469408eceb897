import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { withClusterSummary } from '../../../shared/adapters/summary-cluster.ts';
import {
  encodeSummaryIndex,
  readSummaryIndex,
  SUMMARY_INDEX_VERSION,
  SummaryBuilder,
  type SummaryIndexDocument,
  summaryIndexOf,
} from '../../../shared/apis/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import {
  SummaryDatedAheadError,
  type SummaryIndex,
  type SummarySource,
} from '../../../shared/ports/summary.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { nodeManifest } from '../../fixtures/nodes.ts';

// The summary's index: the counts the shim publishes beside its document (as the stored object's
// metadata), built from what the shim keeps, read back by the Lambdas as untrusted input, and how
// the Cluster port over the summary answers `nodesSettled` from it alone.

const T0 = Date.parse('2026-11-26T12:00:00Z');
const AT = new Date(T0).toISOString();

/** A NodeClaim as Flotilla writes it, launched or not, deleting or not. */
function nodeClaim(name: string, { launched = true, deleting = false } = {}) {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, uid: `uid-${name}`, ...(deleting ? { deletionTimestamp: AT } : {}) },
    spec: {},
    status: launched
      ? { providerID: `aws:///us-east-1a/i-${name}`, conditions: [{ type: 'Launched', status: 'True' }] }
      : { conditions: [{ type: 'Launched', status: 'Unknown' }] },
  };
}

function indexOf(build: (b: SummaryBuilder) => void, cluster = 'prod'): SummaryIndexDocument {
  const builder = new SummaryBuilder(cluster);
  build(builder);
  return summaryIndexOf(builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT }));
}

describe('the summary index the shim publishes', () => {
  it('counts the Nodes going away, the NodeClaims being deleted and those that wait for a launch', () => {
    const index = indexOf((b) => {
      b.apply('nodes', 'ADDED', nodeManifest('steady'));
      b.apply('nodes', 'ADDED', nodeManifest('leaving', { deletedAt: AT }));
      // Its NodeClaim is being deleted (found by providerID): it goes too.
      b.apply('nodes', 'ADDED', {
        ...nodeManifest('drained'),
        spec: { providerID: 'aws:///us-east-1a/i-drained' },
      });
      // Found by the NodeClaim's status.nodeName.
      b.apply('nodes', 'ADDED', nodeManifest('named'));
      b.apply('nodeClaims', 'ADDED', nodeClaim('running'));
      b.apply('nodeClaims', 'ADDED', nodeClaim('drained', { deleting: true }));
      const named = nodeClaim('named-claim', { deleting: true });
      b.apply('nodeClaims', 'ADDED', { ...named, status: { nodeName: 'named' } });
      b.apply('nodeClaims', 'ADDED', nodeClaim('waiting', { launched: false }));
      // Deleted before it had a Node: no Node goes with it.
      b.apply('nodeClaims', 'ADDED', nodeClaim('ending', { launched: false, deleting: true }));
    });
    expect(index).toMatchObject({
      version: SUMMARY_INDEX_VERSION,
      counts: { nodes: 4, nodeClaims: 5, pods: 0 },
      leavingNodes: 3,
      deletingNodeClaims: 3,
      unlaunchedNodeClaims: 1,
    });
    expect(readSummaryIndex(encodeSummaryIndex(index))).toEqual({
      cluster: 'prod',
      publishedAtMs: T0,
      currentAtMs: T0,
      counts: { nodes: 4, nodeClaims: 5, pods: 0 },
      leavingNodes: 3,
      deletingNodeClaims: 3,
      unlaunchedNodeClaims: 1,
    });
  });

  it('is ASCII, as S3 metadata must be, whatever the cluster is called', () => {
    const value = encodeSummaryIndex(indexOf(() => {}, 'prod-ü-集群'));
    expect(value).toMatch(/^[\x20-\x7e]*$/);
    expect(readSummaryIndex(value).cluster).toBe('prod-ü-集群');
  });

  const honest = indexOf(() => {});
  it.each([
    ['not JSON', '{"version"', /not JSON/],
    [
      'of another version',
      JSON.stringify({ ...honest, version: 'flotilla.summary-index/v0' }),
      /is not flotilla/,
    ],
    ['longer than S3 allows', JSON.stringify({ ...honest, pad: 'x'.repeat(3000) }), /more than 2048/],
    ['a negative count', JSON.stringify({ ...honest, unlaunchedNodeClaims: -1 }), /unlaunchedNodeClaims: -1/],
    ['a fractional count', JSON.stringify({ ...honest, deletingNodeClaims: 0.5 }), /deletingNodeClaims: 0.5/],
    ['a missing count', JSON.stringify({ ...honest, leavingNodes: undefined }), /leavingNodes: undefined/],
    ['a time that is not one', JSON.stringify({ ...honest, publishedAt: 'soon' }), /publishedAt: "soon"/],
    ['no cluster', JSON.stringify({ ...honest, cluster: 7 }), /cluster: 7 is not a name/],
  ] as const)('is refused when it is %s', (_, value, message) => {
    expect(() => readSummaryIndex(value)).toThrow(message);
  });
});

describe('nodesSettled over the summary index', () => {
  function world(index: () => Promise<SummaryIndex | undefined>) {
    const clock = makeManualClock(new Date(T0 + 5_000));
    const cluster = makeMemoryCluster({ clock });
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
    let documents = 0;
    const source: SummarySource = {
      read: async () => {
        documents += 1;
        return undefined;
      },
      readIndex: index,
    };
    const decorated = withClusterSummary(cluster, { source, clock, logger });
    const notUsed = () =>
      lines.filter((l) => l['message'] === 'cluster summary not used').map((l) => l['why']);
    return { clock, decorated, notUsed, documents: () => documents };
  }
  const read = (build: (b: SummaryBuilder) => void, atMs = T0) => {
    const index = readSummaryIndex(encodeSummaryIndex(indexOf(build)));
    return async () => ({ ...index, publishedAtMs: atMs, currentAtMs: atMs });
  };

  it('is true when no Node goes and nothing waits, without reading the document', async () => {
    // A NodeClaim deleted before its Node registered leaves no pods to place.
    const w = world(
      read((b) => {
        b.apply('nodeClaims', 'ADDED', nodeClaim('running'));
        b.apply('nodeClaims', 'ADDED', nodeClaim('gone-early', { deleting: true }));
      }),
    );
    expect(await w.decorated.nodesSettled()).toBe(true);
    expect(w.documents()).toBe(0);
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 0, direct: 0, fromIndex: 1 });
  });

  it.each([
    [
      'a Node is being deleted',
      (b: SummaryBuilder) => b.apply('nodes', 'ADDED', nodeManifest('x', { deletedAt: AT })),
    ],
    [
      "a Node's NodeClaim is being deleted",
      (b: SummaryBuilder) => {
        b.apply('nodes', 'ADDED', { ...nodeManifest('x'), spec: { providerID: 'aws:///us-east-1a/i-x' } });
        b.apply('nodeClaims', 'ADDED', nodeClaim('x', { deleting: true }));
      },
    ],
    [
      'a NodeClaim waits for its launch',
      (b: SummaryBuilder) => b.apply('nodeClaims', 'ADDED', nodeClaim('x', { launched: false })),
    ],
  ] as const)('is false when %s', async (_, build) => {
    expect(await world(read(build)).decorated.nodesSettled()).toBe(false);
  });

  it.each([
    [
      'none is published',
      async (): Promise<SummaryIndex | undefined> => undefined,
      'none published yet (is the shim running?)',
    ],
    ['it is older than a minute', read(() => {}, T0 - 60_000), 'stale'],
    [
      'it dates itself ahead of its store',
      async (): Promise<SummaryIndex | undefined> => {
        throw new SummaryDatedAheadError('ahead');
      },
      'index dated ahead of its store',
    ],
  ] as const)('is false, and says why, when %s', async (_, index, why) => {
    const w = world(index);
    expect(await w.decorated.nodesSettled()).toBe(false);
    expect(w.notUsed()).toEqual([why]);
    // No list read went anywhere: the lists that follow count their own.
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 0, direct: 0, fromIndex: 0 });
  });

  it("is false while this container's own NodeClaim writes are read back, true after", async () => {
    // An index published a second ago, whenever it is asked for.
    let nowMs = T0 + 5_000;
    const honest = readSummaryIndex(encodeSummaryIndex(indexOf(() => {})));
    const w = world(async () => ({ ...honest, publishedAtMs: nowMs - 1_000, currentAtMs: nowMs - 1_000 }));
    await w.decorated.createNodeClaim(newNodeClaim('mine'));
    expect(await w.decorated.nodesSettled()).toBe(false);
    w.clock.advance(121_000);
    nowMs += 121_000;
    expect(await w.decorated.nodesSettled()).toBe(true);
  });
});
