import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CLUSTER_SIZE } from '../../infra/cluster-size.ts';
import { encodeSummaryDocument } from '../../shared/apis/summary-document.ts';
import { summaryLimitsFor } from '../../shared/ports/summary.ts';
import { forgeSummary, honestSummary, summaryCluster, tampered } from '../harness/summary-attack.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// An attacker holding the shim's role (or an honest shim on a node whose clock runs ahead) publishes
// a summary that lies about its age, or one made to exhaust a Lambda's memory. The Lambdas judge
// its age by S3's clock and refuse a document dated after S3 stored it; they check its size before
// downloading it, stop unzipping at a cap and count its objects, all from the stack's clusterSize.
// Each refused summary leaves the Lambda reading the API server, and saying why.

const e2e = new ProvisionerE2E('summary-age-size');
const gzipAsync = promisify(gzip);
const HOUR_MS = 3_600_000;

/** Why the Lambda's reads did not use the summary, as it logged them. */
const notUsed = () =>
  e2e.logLines
    .filter((l) => l['message'] === 'cluster summary not used')
    .map((l) => String((l['error'] as { message?: unknown } | undefined)?.message ?? l['why']));

/** A garbage-collection pass as the garbage-collector Lambda, its list reads over the summary. */
async function collectOverSummary() {
  const { server, cluster } = e2e.env;
  const listed = summaryCluster(server, 'garbage-collector', cluster, e2e.logger);
  const result = await asLambda(server, 'garbage-collector', () =>
    e2e.garbageCollector({ cluster: listed }).pass(),
  );
  return { result, use: listed.summaryUse() };
}

describe('a cluster summary that lies about its age', () => {
  it('is refused when the document is dated an hour after S3 stored it', async () => {
    const { server, kc } = e2e.env;
    await forgeSummary(server, await honestSummary(kc, new Date(Date.now() + HOUR_MS)));
    const { result, use } = await collectOverSummary();
    expect(use.fromSummary).toBe(0);
    expect(use.direct).toBeGreaterThan(0);
    expect(result.deletedNodeClaims).toEqual([]);
    expect(notUsed().some((m) => /s after S3 stored it/.test(m))).toBe(true);
  });

  it('is refused when only its watches claim to be current an hour ahead', async () => {
    const { server, kc } = e2e.env;
    const ahead = new Date(Date.now() + HOUR_MS).toISOString();
    await forgeSummary(
      server,
      tampered(await honestSummary(kc), (doc) => {
        doc.head.current = { pods: ahead, nodes: ahead, nodeClaims: ahead };
      }),
    );
    const listed = summaryCluster(server, 'provisioner', e2e.env.cluster, e2e.logger);
    await listed.nodeClaims();
    expect(listed.summaryUse()).toEqual({ fromSummary: 0, direct: 1 });
  });

  it('is used, and aged by S3, when an honest document comes from a clock an hour behind', async () => {
    const { server, kc } = e2e.env;
    await forgeSummary(server, await honestSummary(kc, new Date(Date.now() - HOUR_MS)));
    const listed = summaryCluster(server, 'provisioner', e2e.env.cluster, e2e.logger);
    await listed.nodeClaims();
    expect(listed.summaryUse()).toEqual({ fromSummary: 1, direct: 0 });
  });
});

describe('a cluster summary made to exhaust a Lambda', () => {
  const limits = summaryLimitsFor(DEFAULT_CLUSTER_SIZE);

  it('is not unzipped past its cap: 256 MiB of text in a few hundred KB', async () => {
    const { server, kc } = e2e.env;
    const head = encodeSummaryDocument(await honestSummary(kc));
    // The honest document, then 256 MiB of spaces (still JSON): about 270 KB gzipped.
    const bomb = await gzipAsync(Buffer.concat([Buffer.from(head), Buffer.alloc(256 << 20, 32)]), {
      level: 9,
    });
    expect(bomb.length).toBeLessThan(limits.storedBytes);
    await forgeSummary(server, bomb);
    const { result, use } = await collectOverSummary();
    expect(use.fromSummary).toBe(0);
    expect(result.deletedNodeClaims).toEqual([]);
    expect(result.terminated).toEqual([]);
    expect(notUsed().some((m) => m.includes(`unzips to more than the ${limits.textBytes} bytes`))).toBe(true);
  });

  it('is refused when it lists more objects than the stack was sized for', async () => {
    const { server, kc } = e2e.env;
    const honest = await honestSummary(kc);
    const many = limits.nodeClaims + 1;
    await forgeSummary(
      server,
      tampered(honest, (doc) => {
        doc.head.nodeClaims = Array.from({ length: many }, (_, i) => ({
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodeClaim',
          metadata: { name: `phantom-${i}`, uid: `phantom-${i}` },
        }));
        doc.head.counts.nodeClaims = many;
      }),
    );
    const { result, use } = await collectOverSummary();
    expect(use.fromSummary).toBe(0);
    expect(result.deletedNodeClaims).toEqual([]);
    expect(notUsed().some((m) => m.includes(`${many} NodeClaims (at most ${limits.nodeClaims})`))).toBe(true);
  });
});
