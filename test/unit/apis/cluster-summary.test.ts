import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  convertNodeClaims,
  encodeSummaryDocument,
  groupPodsByNode,
  makeSummaryConversions,
  pruneNode,
  readSummaryDocument,
  SUMMARY_VERSION,
  SummaryBuilder,
  type SummaryKind,
  toClusterNode,
  toClusterNodeClaim,
  toNodeClaimManifest,
  toPod,
  withPods,
} from '../../../shared/apis/index.ts';
import { ValidationError } from '../../../shared/core/index.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { AT, CURRENT, churn, servedClaim, servedNode, servedPod } from '../../fixtures/summary-churn.ts';

// The cluster summary against direct reads: what a Lambda reads from a published document is what
// it would have read from the API server, for the same pods, Nodes and NodeClaims, after any
// sequence of watch events; and what it reads without the pods needs no pods to be readable.

/** The document's text as the shim publishes it. */
const text = (builder: SummaryBuilder) => encodeSummaryDocument(builder.document(AT, CURRENT));

/** The document as the Lambda gets it: through its text. */
function published(builder: SummaryBuilder) {
  return readSummaryDocument(text(builder));
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
      fc.property(churn(40, 3), (events) => {
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
      }),
      { numRuns: 150 },
    );
  });

  it('reads a document after churn the same with what a warm reader kept from the ones before, whichever of them it read the pods of', () => {
    // Whether the warm reader reads the document's pods (a run with nothing pending does not).
    const round = fc.tuple(churn(15, 4), fc.boolean());
    fc.assert(
      fc.property(fc.array(round, { minLength: 2, maxLength: 5 }), (rounds) => {
        const builder = new SummaryBuilder('prod');
        const conversions = makeSummaryConversions();
        let version = 0;
        for (const [events, readsPods] of rounds) {
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
          const document = text(builder);
          const warm = readSummaryDocument(document, conversions);
          const cold = readSummaryDocument(document);
          const byUid = <T extends { uid: string }>(xs: readonly T[]) =>
            [...xs].sort((a, b) => a.uid.localeCompare(b.uid));
          expect(warm.nodeClaims()).toEqual(cold.nodeClaims());
          expect(byUid(warm.nodeInfos().items)).toEqual(byUid(cold.nodeInfos().items));
          if (!readsPods) continue;
          expect(byUid(warm.nodes().items)).toEqual(byUid(cold.nodes().items));
          expect(warm.nodes().problems.map((p) => p.message)).toEqual(
            cold.nodes().problems.map((p) => p.message),
          );
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
    const read = () => readSummaryDocument(text(builder), conversions);
    const first = read();
    const firstNodes = new Map(first.nodes().items.map((n) => [n.name, n]));
    // A document whose pods are not read (a run with nothing pending) in between.
    builder.apply('nodes', 'ADDED', node('c', '7'));
    const idle = read();
    expect(idle.nodeInfos().items.map((n) => n.name)).toEqual(['a', 'b', 'c']);
    expect(idle.nodeClaims().items).toEqual([]);
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
    expect(conversions.nodes.size()).toBe(3);
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
    const builder = new SummaryBuilder('prod');
    const { head, pods } = builder.document(AT, CURRENT);
    // A document of the shim before (one JSON object, the pods in it).
    const v1 = JSON.stringify({ ...head, ...pods, version: 'flotilla.cluster-summary/v1' });
    expect(() => readSummaryDocument(v1)).toThrow(
      `cluster summary: version: "flotilla.cluster-summary/v1" is not ${SUMMARY_VERSION}`,
    );
    expect(() => readSummaryDocument('[]\n{}')).toThrow('cluster summary: (root): not a JSON object');
    expect(() => readSummaryDocument('{"version":')).toThrow('cluster summary: (head): not JSON');
    expect(() => readSummaryDocument(JSON.stringify(head))).toThrow(
      'cluster summary: pods: missing: the document ends after its head',
    );
  });

  it('reads a Node or a NodeClaim whose name the API server would refuse as unreadable, never as an object to request', () => {
    const builder = new SummaryBuilder('prod');
    const node = (name: string) => ({
      metadata: { name, uid: `uid-${name}` },
      spec: {},
      status: { allocatable: { cpu: '2' }, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    builder.apply('nodes', 'ADDED', node('good'));
    builder.apply('nodes', 'ADDED', node('a,b'));
    const claim = toNodeClaimManifest(newNodeClaim('Bad_Name'));
    builder.apply('nodeClaims', 'ADDED', claim);
    const { head, pods } = builder.document(AT, CURRENT);
    const summary = readSummaryDocument(encodeSummaryDocument({ head, pods }));
    const infos = summary.nodeInfos();
    expect(infos.items.map((n) => n.name)).toEqual(['good']);
    expect(infos.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/"a,b" is not a valid object name/),
    ]);
    const claims = summary.nodeClaims();
    expect(claims.items).toEqual([]);
    expect(claims.unreadable.map((u) => u.name)).toEqual(['Bad_Name']);
  });

  it('reads the document from its UTF-8 bytes as from its text, newlines and all in its strings', () => {
    const builder = new SummaryBuilder('prod');
    builder.apply('nodes', 'ADDED', {
      metadata: { name: 'node-a', uid: 'uid-node-a', annotations: { note: 'zoné ✓\nsecond line' } },
      spec: {},
      status: { allocatable: { cpu: '2' }, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    builder.apply('pods', 'ADDED', {
      metadata: { name: 'p', namespace: 'apps', uid: 'uid-p', annotations: { note: 'línea\ndos' } },
      spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'app' }] },
      status: { phase: 'Running' },
    });
    const document = text(builder);
    const fromText = readSummaryDocument(document);
    const fromBytes = readSummaryDocument(new TextEncoder().encode(document));
    expect(fromBytes.nodeInfos()).toEqual(fromText.nodeInfos());
    expect(fromBytes.nodes()).toEqual(fromText.nodes());
    expect(fromBytes.nodes().items[0]?.annotations['note']).toBe('zoné ✓\nsecond line');
    expect(fromBytes.boundPods().items.map((b) => b.pod.uid)).toEqual(['uid-p']);
  });

  it.each([
    ['cut short', (pods: string) => pods.slice(0, pods.length / 2), 'pods: not JSON'],
    ['not an object', () => '[]', 'pods: not a JSON object'],
    [
      'without its templates',
      (pods: string) => pods.replace('"podTemplates"', '"templates"'),
      'podTemplates: not a list',
    ],
    [
      'one pod short',
      (pods: string) => pods.replace(/,\[[^[\]]*\]\]\}$/, ']}'),
      'pods: 1 pods where the head counts 2',
    ],
  ])(
    'answers NodeClaims and Nodes without pods from a document whose pods are %s, and throws a ValidationError from the reads of pods',
    (_, corrupt, problem) => {
      const builder = new SummaryBuilder('prod');
      builder.apply('nodes', 'ADDED', {
        metadata: { name: 'node-a', uid: 'uid-node-a' },
        spec: {},
        status: { allocatable: { cpu: '2' }, conditions: [{ type: 'Ready', status: 'True' }] },
      });
      const claim = toNodeClaimManifest(newNodeClaim('default-a')) as { metadata: object };
      builder.apply('nodeClaims', 'ADDED', { ...claim, metadata: { ...claim.metadata, uid: 'uid-claim-a' } });
      for (const uid of ['p1', 'p2']) {
        builder.apply('pods', 'ADDED', {
          metadata: { name: uid, namespace: 'apps', uid },
          spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'app' }] },
          status: { phase: 'Running' },
        });
      }
      const document = text(builder);
      const at = document.indexOf('\n');
      const summary = readSummaryDocument(`${document.slice(0, at)}\n${corrupt(document.slice(at + 1))}`);
      expect(summary.nodeClaims().items.map((c) => c.name)).toEqual(['default-a']);
      expect(summary.nodeInfos().items.map((n) => n.name)).toEqual(['node-a']);
      expect(summary.counts).toEqual({ pods: 2, nodes: 1, nodeClaims: 1 });
      // Every time: the pods are not parsed again, nor taken for none.
      for (const read of [summary.boundPods, summary.nodes, summary.boundPods]) {
        expect(read).toThrow(ValidationError);
        expect(read).toThrow(`cluster summary: ${problem}`);
      }
    },
  );
});

describe('readiness in the cluster summary', () => {
  it('is not kept: a pod that only turned Ready is no change, and a relist finds no difference', () => {
    const builder = new SummaryBuilder('prod');
    const pod = (ready: 'True' | 'False') => ({
      metadata: { name: 'p1', namespace: 'apps', uid: 'p1', labels: { app: 'web' } },
      spec: { nodeName: 'a', containers: [{ name: 'app' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready }] },
    });
    expect(builder.apply('pods', 'ADDED', pod('False'))).toBe(true);
    expect(builder.apply('pods', 'MODIFIED', pod('True'))).toBe(false);
    expect(builder.replace('pods', [pod('True')])).toBe(0);
  });
});
