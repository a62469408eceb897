import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  convertNodeClaims,
  groupPodsByNode,
  pruneNode,
  readSummaryDocument,
  SUMMARY_VERSION,
  SummaryBuilder,
  type SummaryKind,
  toClusterNode,
  toClusterNodeClaim,
  toPod,
  withPods,
} from '../../../shared/apis/index.ts';
import { kubeArbitraries } from '../../fixtures/kube-arbitraries.ts';

// The cluster summary against direct reads: what a Lambda reads from a published document is what
// it would have read from the API server, for the same pods, Nodes and NodeClaims, after any
// sequence of watch events.

const arb = kubeArbitraries({ namespace: 'apps', prefix: 'summary' });
const AT = '2026-11-26T12:00:00Z';
const CURRENT = { pods: AT, nodes: AT, nodeClaims: AT };

/** Objects as the API server serves them: with uids and (for pods) a node and a phase. */
const servedPod = fc
  .tuple(
    arb.pod,
    fc.uuid(),
    fc.constantFrom('node-a', 'node-b', ''),
    fc.constantFrom('Running', 'Pending', undefined),
  )
  .map(([pod, uid, node, phase]) => {
    const { nodeName: _n, schedulingGates: _g, ...spec } = pod.spec as Record<string, unknown>;
    return {
      ...pod,
      metadata: { ...pod.metadata, uid, creationTimestamp: AT },
      spec: { ...spec, ...(node === '' ? {} : { nodeName: node }) },
      status: phase === undefined ? {} : { phase, startTime: AT },
    };
  });
const servedNode = fc
  .tuple(arb.node, fc.uuid(), fc.constantFrom('node-a', 'node-b', 'node-c'))
  .map(([node, uid, name]) => ({ ...node, metadata: { ...node.metadata, uid, name } }));
const servedClaim = fc.tuple(arb.nodeClaim, fc.uuid()).map(([claim, uid]) => ({
  ...claim,
  metadata: { ...claim.metadata, uid, creationTimestamp: AT, managedFields: [{ manager: 'x' }] },
}));

/** The document as the Lambda gets it: through JSON. */
function published(builder: SummaryBuilder) {
  return readSummaryDocument(JSON.parse(JSON.stringify(builder.document(AT, CURRENT))));
}

function direct(
  pods: readonly Record<string, unknown>[],
  nodes: readonly unknown[],
  claims: readonly unknown[],
) {
  const bound = pods.filter((p) => typeof (p['spec'] as { nodeName?: unknown }).nodeName === 'string');
  const byNode = groupPodsByNode(bound as never[], (p) => toPod(p as never));
  const nodeItems = nodes.flatMap((n: unknown) => {
    try {
      return [withPods(toClusterNode(n as never, []), byNode)];
    } catch {
      return [];
    }
  });
  return { nodes: nodeItems, claims: convertNodeClaims(claims, toClusterNodeClaim) };
}

describe('the cluster summary', () => {
  it('reads back what a direct read of the same objects gives', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(servedPod, { selector: (p) => p.metadata.uid, maxLength: 12 }),
        fc.uniqueArray(servedNode, { selector: (n) => n.metadata.name, maxLength: 3 }),
        fc.uniqueArray(servedClaim, { selector: (c) => c.metadata.name, maxLength: 4 }),
        (pods, nodes, claims) => {
          const builder = new SummaryBuilder('prod');
          for (const p of pods) builder.apply('pods', 'ADDED', p);
          for (const n of nodes) builder.apply('nodes', 'ADDED', n);
          for (const c of claims) builder.apply('nodeClaims', 'ADDED', c);
          const summary = published(builder);
          const expected = direct(pods, nodes, claims);
          const byName = <T extends { name: string }>(xs: readonly T[]) =>
            [...xs].sort((a, b) => a.name.localeCompare(b.name));
          expect(byName(summary.nodes().items)).toEqual(byName(expected.nodes));
          expect(summary.nodeClaims().items).toEqual(expected.claims.items);
          expect(summary.nodeClaims().unreadable).toEqual(expected.claims.unreadable);
          expect(summary.counts).toEqual({
            pods: pods.length,
            nodes: nodes.length,
            nodeClaims: claims.length,
          });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('follows any sequence of watch events to the state they leave, and a relist finds no difference', () => {
    type Raw = { readonly metadata: Record<string, unknown> } & Record<string, unknown>;
    const event = fc.oneof(
      servedPod.map((raw) => ({ kind: 'pods' as SummaryKind, raw: raw as Raw })),
      servedNode.map((raw) => ({ kind: 'nodes' as SummaryKind, raw: raw as Raw })),
      servedClaim.map((raw) => ({ kind: 'nodeClaims' as SummaryKind, raw: raw as Raw })),
    );
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            event,
            fc.constantFrom('ADDED', 'MODIFIED', 'DELETED') as fc.Arbitrary<'ADDED' | 'MODIFIED' | 'DELETED'>,
            fc.nat({ max: 3 }),
          ),
          { maxLength: 40 },
        ),
        (events) => {
          const builder = new SummaryBuilder('prod');
          // The truth: the last version of each object, keyed as the API server keys them.
          const truth: Record<SummaryKind, Map<string, unknown>> = {
            pods: new Map(),
            nodes: new Map(),
            nodeClaims: new Map(),
          };
          for (const [{ kind, raw }, type, slot] of events) {
            // A few identities reused, so that modifications and deletions hit existing objects.
            const uid = `uid-${kind}-${slot}`;
            const object = { ...raw, metadata: { ...raw.metadata, uid } } as { status?: { phase?: string } };
            builder.apply(kind, type, object);
            const finished = object.status?.phase === 'Succeeded' || object.status?.phase === 'Failed';
            if (type === 'DELETED' || finished) truth[kind].delete(uid);
            else truth[kind].set(uid, object);
          }
          const summary = published(builder);
          const expected = direct(
            [...truth.pods.values()] as Record<string, unknown>[],
            [...truth.nodes.values()],
            [...truth.nodeClaims.values()],
          );
          expect(
            summary
              .nodeClaims()
              .items.map((c) => c.uid)
              .sort(),
          ).toEqual(expected.claims.items.map((c) => c.uid).sort());
          expect(summary.counts.pods).toBe(truth.pods.size);
          expect(
            summary
              .nodeInfos()
              .items.map((n) => n.uid)
              .sort(),
          ).toEqual(expected.nodes.map((n) => n.uid).sort());
          for (const kind of ['pods', 'nodes', 'nodeClaims'] as const) {
            expect(builder.replace(kind, [...truth[kind].values()])).toBe(0);
          }
          // A relist that finds an object the watch missed counts it.
          expect(builder.replace('nodeClaims', [])).toBe(truth.nodeClaims.size);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps one template for the pods of a workload, and drops it with the last of them', () => {
    const builder = new SummaryBuilder('prod');
    const pod = (uid: string) => ({
      metadata: { name: uid, namespace: 'apps', uid, labels: { app: 'web' } },
      spec: { nodeName: 'node-a', containers: [{ name: 'app', resources: { requests: { cpu: '1' } } }] },
      status: { phase: 'Running' },
    });
    for (const uid of ['a', 'b', 'c']) builder.apply('pods', 'ADDED', pod(uid));
    expect(builder.size()).toMatchObject({ pods: 3, templates: 1 });
    builder.apply('pods', 'MODIFIED', { ...pod('a'), status: { phase: 'Succeeded' } });
    builder.apply('pods', 'DELETED', pod('b'));
    expect(builder.size()).toMatchObject({ pods: 1, templates: 1 });
    builder.apply('pods', 'DELETED', pod('c'));
    expect(builder.size()).toMatchObject({ pods: 0, templates: 0 });
  });

  it('prunes a Node to what Flotilla reads, and reads the same from it', () => {
    fc.assert(
      fc.property(servedNode, (node) => {
        const big = {
          ...node,
          metadata: { ...node.metadata, managedFields: [{ manager: 'kubelet' }] },
          status: {
            ...node.status,
            images: [{ names: ['registry/app:1'], sizeBytes: 1 }],
            nodeInfo: { kubeletVersion: 'v1.34.4' },
          },
        };
        const pruned = pruneNode(big) as {
          status: Record<string, unknown>;
          metadata: Record<string, unknown>;
        };
        expect(pruned.status['images']).toBeUndefined();
        expect(pruned.metadata['managedFields']).toBeUndefined();
        expect(toClusterNode(pruned as never, [])).toEqual(toClusterNode(big as never, []));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a document of another version, naming both', () => {
    expect(() => readSummaryDocument({ version: 'flotilla.cluster-summary/v0' })).toThrow(
      `cluster summary: version: "flotilla.cluster-summary/v0" is not ${SUMMARY_VERSION}`,
    );
    expect(() => readSummaryDocument([])).toThrow('not a JSON object');
  });
});
