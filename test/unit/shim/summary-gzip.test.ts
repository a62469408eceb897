import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipSummary } from '../../../infra/shim/summary-publish.ts';
import { encodeSummaryDocument, SummaryBuilder } from '../../../shared/apis/index.ts';

// The shim gzips its summary piece by piece (summary-chunks.ts); what a Lambda unzips must be the
// document's text, whether it fits in one piece or takes many (with zlib pushing back between them).

const AT = '2026-11-26T12:00:00Z';

function builderWith(pods: number): SummaryBuilder {
  const builder = new SummaryBuilder('prod');
  for (let i = 0; i < pods; i++) {
    builder.apply('pods', 'ADDED', {
      metadata: { name: `web-${i}`, namespace: 'apps', uid: `uid-${i}`, labels: { app: `web-${i % 50}` } },
      spec: {
        nodeName: `node-${i % 40}`,
        containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }],
      },
      status: { phase: 'Running', startTime: AT },
    });
  }
  for (let i = 0; i < 40; i++) {
    builder.apply('nodes', 'ADDED', {
      metadata: { name: `node-${i}`, uid: `node-uid-${i}`, labels: { 'karpenter.sh/nodepool': 'default' } },
      status: { allocatable: { cpu: '4', memory: '16Gi', pods: '110' } },
    });
  }
  return builder;
}

describe("the shim's gzipped summary", () => {
  it.each([
    ['an empty cluster', 0],
    ['a document of one piece', 10],
    ['a document of many pieces', 20_000],
  ])('unzips to the document text: %s', async (_case, pods) => {
    const document = builderWith(pods).document(AT, { pods: AT, nodes: AT, nodeClaims: AT });
    const text = encodeSummaryDocument(document);
    const body = await gzipSummary(document);
    expect(gunzipSync(body).toString('utf8')).toBe(text);
    expect(body.length).toBeLessThan(Buffer.byteLength(text));
  });
});
