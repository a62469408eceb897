import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SummaryBuilder, type SummaryKind } from '../../../shared/apis/index.ts';
import {
  headGeneration,
  readSummaryObjectMetadata,
  SUMMARY_METADATA_KEYS,
  summaryObjectMetadata,
} from '../../../shared/apis/summary-metadata.ts';
import { kubeArbitraries } from '../../fixtures/kube-arbitraries.ts';

// The head generation the shim publishes beside its summary: it moves whenever what is kept of the
// Nodes or NodeClaims changes and at no other time, so a reader holding the head of a document of
// the same generation holds this document's head. A Node's status report that changes only its
// resourceVersion and heartbeat times is no change.

const arb = kubeArbitraries({ namespace: 'apps', prefix: 'generation' });
const AT = '2026-12-05T12:00:00Z';
const CURRENT = { pods: AT, nodes: AT, nodeClaims: AT };

/** A Node as the kubelet reports it, `version` its resourceVersion, `beat` its heartbeat time. */
const reported = (version: number, beat: string, taints: readonly unknown[] = []) => ({
  metadata: { name: 'node-a', uid: 'uid-node-a', resourceVersion: String(version) },
  spec: { providerID: 'aws:///us-west-2a/i-0123', taints },
  status: {
    allocatable: { cpu: '2', memory: '4Gi', pods: '58' },
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: AT, lastHeartbeatTime: beat }],
    nodeInfo: { kubeletVersion: 'v1.31.0' },
  },
});

/** The Nodes and NodeClaims of the builder's document, as its head's JSON says them. */
const headOf = (builder: SummaryBuilder) => {
  const { nodes, nodeClaims } = builder.document(AT, CURRENT).head;
  return JSON.stringify({ nodes, nodeClaims });
};

describe('the head generation of the cluster summary', () => {
  it("stays put over a Node's status report that moves only its resourceVersion, which keeps the version first stored", () => {
    const builder = new SummaryBuilder('prod');
    expect(builder.apply('nodes', 'ADDED', reported(10, '2026-12-05T12:00:00Z'))).toBe(true);
    const generation = builder.headGeneration();
    const head = headOf(builder);
    expect(builder.apply('nodes', 'MODIFIED', reported(11, '2026-12-05T12:05:00Z'))).toBe(false);
    expect(builder.headGeneration()).toBe(generation);
    expect(headOf(builder)).toBe(head);
    // A relist that sees the newer version finds nothing the watch missed, and changes nothing.
    expect(builder.replace('nodes', [reported(12, '2026-12-05T12:10:00Z')])).toBe(0);
    expect(builder.headGeneration()).toBe(generation);
    expect(headOf(builder)).toContain('"resourceVersion":"10"');
    // A real change (a taint) moves it, and stores the version that came with it.
    const taint = { key: 'example.com/drain', effect: 'NoSchedule' };
    expect(builder.apply('nodes', 'MODIFIED', reported(13, '2026-12-05T12:10:00Z', [taint]))).toBe(true);
    expect(builder.headGeneration()).toBeGreaterThan(generation);
    expect(headOf(builder)).toContain('"resourceVersion":"13"');
  });

  it('moves when a NodeClaim changes in any way, its resourceVersion included, and when a relist finds a difference', () => {
    const builder = new SummaryBuilder('prod');
    const claim = (version: string) => ({
      metadata: { name: 'default-abc', uid: 'uid-claim', resourceVersion: version },
      spec: {},
    });
    builder.apply('nodeClaims', 'ADDED', claim('1'));
    const first = builder.headGeneration();
    // A NodeClaim's resourceVersion is written against: a reader must see the current one.
    expect(builder.apply('nodeClaims', 'MODIFIED', claim('2'))).toBe(true);
    expect(builder.headGeneration()).toBeGreaterThan(first);
    const second = builder.headGeneration();
    expect(builder.replace('nodeClaims', [claim('2')])).toBe(0);
    expect(builder.headGeneration()).toBe(second);
    expect(builder.replace('nodeClaims', [])).toBe(1);
    expect(builder.headGeneration()).toBeGreaterThan(second);
  });

  it('does not move for pods', () => {
    const builder = new SummaryBuilder('prod');
    builder.apply('nodes', 'ADDED', reported(1, AT));
    const generation = builder.headGeneration();
    const pod = {
      metadata: { name: 'p1', namespace: 'apps', uid: 'p1' },
      spec: { nodeName: 'node-a', containers: [{ name: 'app' }] },
      status: { phase: 'Running' },
    };
    expect(builder.apply('pods', 'ADDED', pod)).toBe(true);
    expect(builder.replace('pods', [])).toBe(1);
    expect(builder.headGeneration()).toBe(generation);
  });

  it('names the same head whenever it is the same, after any sequence of watch events and relists', () => {
    const servedNode = fc
      .tuple(arb.node, fc.constantFrom('a', 'b'), fc.nat({ max: 1_000 }))
      .map(([node, name, version]) => ({
        ...node,
        metadata: { ...node.metadata, name, uid: `uid-${name}`, resourceVersion: String(version) },
      }));
    const servedClaim = fc
      .tuple(arb.nodeClaim, fc.constantFrom('c', 'd'), fc.nat({ max: 1_000 }))
      .map(([claim, name, version]) => ({
        ...claim,
        metadata: { ...claim.metadata, name, uid: `uid-${name}`, resourceVersion: String(version) },
      }));
    const step = fc.oneof(
      fc.tuple(
        fc.constant<'apply'>('apply'),
        fc.oneof(
          servedNode.map((raw) => ({ kind: 'nodes' as SummaryKind, raw })),
          servedClaim.map((raw) => ({ kind: 'nodeClaims' as SummaryKind, raw })),
        ),
        fc.constantFrom('ADDED', 'MODIFIED', 'DELETED') as fc.Arbitrary<'ADDED' | 'MODIFIED' | 'DELETED'>,
      ),
      // A relist lists in its own order, and may miss an object the watch missed the deletion of.
      fc.tuple(
        fc.constant<'relist'>('relist'),
        fc.constantFrom<SummaryKind>('nodes', 'nodeClaims'),
        fc.boolean(),
        fc.boolean(),
      ),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const builder = new SummaryBuilder('prod');
        const live: Record<'nodes' | 'nodeClaims', Map<string, unknown>> = {
          nodes: new Map(),
          nodeClaims: new Map(),
        };
        const seen = new Map<number, string>([[builder.headGeneration(), headOf(builder)]]);
        for (const s of steps) {
          if (s[0] === 'apply') {
            const [, { kind, raw }, type] = s;
            builder.apply(kind, type, raw);
            const store = live[kind as 'nodes' | 'nodeClaims'];
            if (type === 'DELETED') store.delete(raw.metadata.uid);
            else store.set(raw.metadata.uid, raw);
          } else {
            const [, kind, reversed, deletedUnseen] = s;
            const store = live[kind as 'nodes' | 'nodeClaims'];
            const gone = deletedUnseen ? [...store.keys()][0] : undefined;
            if (gone !== undefined) store.delete(gone);
            const listed = [...store.values()];
            builder.replace(kind, reversed ? listed.reverse() : listed);
          }
          const head = headOf(builder);
          const before = seen.get(builder.headGeneration());
          if (before !== undefined) expect(head).toBe(before);
          seen.set(builder.headGeneration(), head);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe("the summary object's metadata", () => {
  it('reads back what the shim writes: the generation and the slowest watch', () => {
    const metadata = summaryObjectMetadata(headGeneration('f00d-1', 7), AT, {
      pods: '2026-12-05T11:59:50Z',
      nodes: AT,
      nodeClaims: AT,
    });
    expect(readSummaryObjectMetadata(metadata)).toEqual({
      head: 'f00d-1.7',
      publishedAtMs: Date.parse(AT),
      currentAtMs: Date.parse('2026-12-05T11:59:50Z'),
    });
  });

  it.each([
    ['none', undefined],
    ['no generation', { [SUMMARY_METADATA_KEYS.publishedAt]: AT, [SUMMARY_METADATA_KEYS.current]: AT }],
    [
      'a generation of another shape',
      {
        [SUMMARY_METADATA_KEYS.head]: 'x y',
        [SUMMARY_METADATA_KEYS.publishedAt]: AT,
        [SUMMARY_METADATA_KEYS.current]: AT,
      },
    ],
    [
      'a time that is not one',
      {
        [SUMMARY_METADATA_KEYS.head]: 'a.1',
        [SUMMARY_METADATA_KEYS.publishedAt]: 'yesterday',
        [SUMMARY_METADATA_KEYS.current]: AT,
      },
    ],
  ])('is not read from metadata with %s (the reader downloads the document instead)', (_, metadata) => {
    expect(readSummaryObjectMetadata(metadata)).toBeUndefined();
  });
});
