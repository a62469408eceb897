import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  convertNodeClaims,
  groupPodsByNode,
  makeSummaryConversions,
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

type Raw = { readonly metadata: Record<string, unknown> } & Record<string, unknown>;
/** What one watch event carries: the kind and the object. */
const watchEvent = fc.oneof(
  servedPod.map((raw) => ({ kind: 'pods' as SummaryKind, raw: raw as Raw })),
  servedNode.map((raw) => ({ kind: 'nodes' as SummaryKind, raw: raw as Raw })),
  servedClaim.map((raw) => ({ kind: 'nodeClaims' as SummaryKind, raw: raw as Raw })),
);

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
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            watchEvent,
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

  it('reads a document after churn the same with what a warm reader kept from the ones before', () => {
    const round = fc.array(
      fc.tuple(
        watchEvent,
        fc.constantFrom('ADDED', 'MODIFIED', 'DELETED') as fc.Arbitrary<'ADDED' | 'MODIFIED' | 'DELETED'>,
        fc.nat({ max: 4 }),
      ),
      { maxLength: 15 },
    );
    fc.assert(
      fc.property(fc.array(round, { minLength: 2, maxLength: 5 }), (rounds) => {
        const builder = new SummaryBuilder('prod');
        const conversions = makeSummaryConversions();
        let version = 0;
        for (const events of rounds) {
          for (const [{ kind, raw }, type, slot] of events) {
            // The API server gives every write a new resourceVersion.
            version += 1;
            const metadata = {
              ...raw.metadata,
              uid: `uid-${kind}-${slot}`,
              resourceVersion: String(version),
            };
            builder.apply(kind, type, { ...raw, metadata });
          }
          const document = JSON.stringify(builder.document(AT, CURRENT));
          const warm = readSummaryDocument(JSON.parse(document), conversions);
          const cold = readSummaryDocument(JSON.parse(document));
          const byUid = <T extends { uid: string }>(xs: readonly T[]) =>
            [...xs].sort((a, b) => a.uid.localeCompare(b.uid));
          expect(byUid(warm.nodes().items)).toEqual(byUid(cold.nodes().items));
          expect(warm.nodes().problems.map((p) => p.message)).toEqual(
            cold.nodes().problems.map((p) => p.message),
          );
          expect(warm.nodeClaims()).toEqual(cold.nodeClaims());
          expect(byUid(warm.boundPods().items.map((b) => ({ ...b.pod, on: b.nodeName })))).toEqual(
            byUid(cold.boundPods().items.map((b) => ({ ...b.pod, on: b.nodeName }))),
          );
        }
      }),
      { numRuns: 150 },
    );
  });

  it('converts only what changed between two documents read by one warm reader', () => {
    const builder = new SummaryBuilder('prod');
    const pod = (uid: string, node: string, version: string, startTime = AT) => ({
      metadata: { name: uid, namespace: 'apps', uid, resourceVersion: version, labels: { app: 'web' } },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'app' }] },
      status: { phase: 'Running', startTime },
    });
    const node = (name: string, version: string) => ({
      metadata: { name, uid: `uid-${name}`, resourceVersion: version },
      spec: { providerID: `aws:///us-west-2a/i-${name}` },
      status: {
        capacity: { cpu: '4', memory: '16Gi', pods: '58' },
        allocatable: { cpu: '4', memory: '15Gi', pods: '58' },
      },
    });
    builder.apply('nodes', 'ADDED', node('a', '1'));
    builder.apply('nodes', 'ADDED', node('b', '2'));
    builder.apply('pods', 'ADDED', pod('p1', 'a', '3'));
    builder.apply('pods', 'ADDED', pod('p2', 'b', '4'));
    const conversions = makeSummaryConversions();
    const read = () =>
      readSummaryDocument(JSON.parse(JSON.stringify(builder.document(AT, CURRENT))), conversions);
    const first = read();
    const firstNodes = new Map(first.nodes().items.map((n) => [n.name, n]));
    // Node b changes; pod p2 starts again later, on node a (same template, other fields).
    builder.apply('nodes', 'MODIFIED', {
      ...node('b', '5'),
      metadata: { ...node('b', '5').metadata, labels: { x: 'y' } },
    });
    const restarted = '2026-11-26T12:30:00Z';
    builder.apply('pods', 'MODIFIED', pod('p2', 'a', '6', restarted));
    const second = read();
    const secondNodes = new Map(second.nodes().items.map((n) => [n.name, n]));
    const pods = (n: ReturnType<typeof secondNodes.get>) => n?.pods ?? [];
    // The unchanged pod is the object the first document converted; the moved one is new.
    expect(pods(secondNodes.get('a')).find((p) => p.uid === 'p1')).toBe(
      pods(firstNodes.get('a')).find((p) => p.uid === 'p1'),
    );
    expect(
      pods(secondNodes.get('a'))
        .map((p) => p.uid)
        .sort(),
    ).toEqual(['p1', 'p2']);
    const p2 = pods(secondNodes.get('a')).find((p) => p.uid === 'p2');
    expect(p2?.disruption?.startedAtMs).toBe(Date.parse(restarted));
    expect(pods(secondNodes.get('b'))).toEqual([]);
    expect(secondNodes.get('b')?.labels).toMatchObject({ x: 'y' });
    expect(conversions.pods.size).toBe(2);
    expect(conversions.nodes.size()).toBe(2);
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
