import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeSummaryDocument, SummaryBuilder, type SummaryKind } from '../../../shared/apis/index.ts';
import { summaryDocumentChunks } from '../../../shared/apis/summary-chunks.ts';
import type { SummaryDocument } from '../../../shared/apis/summary-document.ts';
import { kubeArbitraries } from '../../fixtures/kube-arbitraries.ts';

// The shim gzips the summary piece by piece: the pieces joined must be the document's text, byte
// for byte, whatever the document holds and however small the pieces.

const arb = kubeArbitraries({ namespace: 'apps', prefix: 'chunks' });
const AT = '2026-11-26T12:00:00Z';
const CURRENT = { pods: AT, nodes: AT, nodeClaims: AT };

const event = fc.oneof(
  fc.tuple(arb.pod, fc.uuid(), fc.constantFrom('node-a', '')).map(([pod, uid, node]) => ({
    kind: 'pods' as SummaryKind,
    raw: {
      ...pod,
      metadata: { ...pod.metadata, uid, creationTimestamp: AT },
      spec: { ...(pod.spec as object), ...(node === '' ? {} : { nodeName: node }) },
      status: { phase: 'Running', startTime: AT },
    },
  })),
  fc.tuple(arb.node, fc.uuid()).map(([node, uid]) => ({
    kind: 'nodes' as SummaryKind,
    raw: { ...node, metadata: { ...node.metadata, uid } },
  })),
  fc.tuple(arb.nodeClaim, fc.uuid()).map(([claim, uid]) => ({
    kind: 'nodeClaims' as SummaryKind,
    raw: { ...claim, metadata: { ...claim.metadata, uid, managedFields: [{ manager: 'x' }] } },
  })),
);

describe('the summary in pieces', () => {
  it('joins to the document text, however small the pieces, and no piece runs past its size by more than one item', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 20 }), fc.integer({ min: 1, max: 4_000 }), (events, size) => {
        const builder = new SummaryBuilder('prod');
        for (const { kind, raw } of events) builder.apply(kind, 'ADDED', raw);
        const document = builder.document(AT, CURRENT);
        const pieces = [...summaryDocumentChunks(document, size)];
        expect(pieces.join('')).toBe(encodeSummaryDocument(document));
        const items = [
          ...document.head.nodes,
          ...document.head.nodeClaims,
          ...document.pods.podTemplates,
          ...document.pods.pods,
        ].map((item) => JSON.stringify(item).length);
        const longest = Math.max(0, ...items);
        // A piece ends once it reaches `size`; the one before it ended under `size`, so a piece
        // holds less than `size` plus its last item, plus the few characters around a list.
        for (const piece of pieces) expect(piece.length).toBeLessThan(size + longest + 600);
      }),
      { numRuns: 150 },
    );
  });

  it('writes what JSON.stringify would of members it leaves out and list items it writes as null', () => {
    const document = {
      head: {
        version: 'flotilla.cluster-summary/v2',
        cluster: 'prod',
        publishedAt: AT,
        absent: undefined,
        current: CURRENT,
        nodes: [undefined, { metadata: { name: 'a' } }],
        nodeClaims: [],
        counts: { pods: 0, nodes: 2, nodeClaims: 0 },
      },
      pods: { podTemplates: [], pods: [], later: undefined },
    } as unknown as SummaryDocument;
    const joined = [...summaryDocumentChunks(document, 1)].join('');
    expect(joined).toBe(encodeSummaryDocument(document));
    expect(joined).toContain('"nodes":[null,{"metadata":{"name":"a"}}]');
    expect(joined).not.toContain('absent');
  });
});
