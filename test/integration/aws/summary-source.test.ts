import { gzipSync } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { makeS3SummarySource } from '../../../shared/adapters/aws/summary-source.ts';
import { encodeSummaryDocument, SummaryBuilder, summaryObjectKey } from '../../../shared/apis/index.ts';
import { summaryObjectMetadata } from '../../../shared/apis/summary-metadata.ts';
import {
  SummaryDatedAheadError,
  type SummaryLimits,
  SummaryTooLargeError,
  SummaryUnavailableError,
} from '../../../shared/ports/summary.ts';
import { awsConfigAs, lambdaCredentials } from '../../harness/aws/identity.ts';
import { STACK_CLUSTER, STACK_NAMES } from '../../harness/aws/stack.ts';
import { takeDenials } from '../../harness/iam-check.ts';
import { useSummaryBucket } from './summary-bucket-fixture.ts';

// The cluster summary as a Lambda reads it from the stack's bucket on moto, with the provisioner's
// role (the IAM check holds each call to it); the object is put as the shim would, with its role.

const bucket = useSummaryBucket();
const s3As = bucket.s3As;

async function put(body: Buffer, metadata?: Record<string, string>): Promise<void> {
  await s3As('shim').send(
    new PutObjectCommand({
      Bucket: STACK_NAMES.summaryBucket,
      Key: summaryObjectKey(STACK_CLUSTER),
      Body: body,
      ...(metadata === undefined ? {} : { Metadata: metadata }),
    }),
  );
}

/** The metadata the shim writes beside a document of head generation `head`, published `at`. */
const metadataOf = (head: string, at: string, current = at) =>
  summaryObjectMetadata(head, at, { pods: current, nodes: current, nodeClaims: current });

/** Limits far above what these documents hold. */
const TEST_LIMITS: SummaryLimits = {
  storedBytes: 1_000_000,
  textBytes: 4_000_000,
  nodes: 100,
  nodeClaims: 100,
  pods: 1_000,
};

/** The document's text as the shim writes it: these Nodes, a pod on each. */
function text(cluster: string, nodes: readonly string[], at = '2026-11-26T12:00:00Z', behindMs = 0): string {
  const builder = new SummaryBuilder(cluster);
  for (const name of nodes) {
    builder.apply('nodes', 'ADDED', {
      metadata: { name, uid: `uid-${name}` },
      spec: {},
      status: { allocatable: { cpu: '2' }, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    builder.apply('pods', 'ADDED', {
      metadata: { name: `pod-${name}`, namespace: 'apps', uid: `uid-pod-${name}` },
      spec: { nodeName: name, containers: [{ name: 'app', image: 'app' }] },
      status: { phase: 'Running' },
    });
  }
  const current = new Date(Date.parse(at) - behindMs).toISOString();
  return encodeSummaryDocument(builder.document(at, { pods: current, nodes: at, nodeClaims: at }));
}

/** The object the shim publishes. */
const document = (cluster: string, nodes: readonly string[]) => gzipSync(text(cluster, nodes));

const source = (limits: SummaryLimits = TEST_LIMITS) =>
  makeS3SummarySource({
    s3: s3As('provisioner'),
    bucket: STACK_NAMES.summaryBucket,
    cluster: STACK_CLUSTER,
    limits,
  });

/** What reading the published object ends in: the summary or the error. */
const outcome = (limits?: SummaryLimits) =>
  source(limits)
    .read()
    .catch((e: unknown) => e);

describe('the cluster summary read from S3', () => {
  it('is undefined until the shim has published one', async () => {
    expect(await source().read()).toBeUndefined();
  });

  it('reads the published document, and reads it again only once it changed', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']));
    const first = await summaries.read();
    expect(first?.nodeInfos().items.map((n) => n.name)).toEqual(['a']);
    // Unchanged: one conditional request, the same converted summary.
    expect(await summaries.read()).toBe(first);
    expect(summaries.stats()).toMatchObject({ reads: 2, downloads: 1 });
    await put(document(STACK_CLUSTER, ['a', 'b']));
    expect((await summaries.read())?.nodeInfos().items.map((n) => n.name)).toEqual(['a', 'b']);
    expect(summaries.stats()).toMatchObject({ reads: 3, downloads: 2 });
  });

  it('shares one request between reads that overlap', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']));
    const [x, y] = await Promise.all([summaries.read(), summaries.read()]);
    expect(x).toBe(y);
    expect(summaries.stats()).toMatchObject({ reads: 1, downloads: 1 });
  });

  it('reads the pods only when asked for them, and refuses pods that do not parse then', async () => {
    const whole = text(STACK_CLUSTER, ['a', 'b']);
    await put(gzipSync(whole.slice(0, -10)));
    const summary = await source().read();
    expect(summary?.nodeInfos().items.map((n) => n.name)).toEqual(['a', 'b']);
    expect(summary?.nodeClaims().items).toEqual([]);
    expect(summary?.counts).toEqual({ pods: 2, nodes: 2, nodeClaims: 0 });
    for (const read of [() => summary?.boundPods(), () => summary?.nodes()]) {
      expect(read).toThrow(SummaryUnavailableError);
      expect(read).toThrow(/is not a cluster summary: cluster summary: pods: not JSON/);
    }
    await put(gzipSync(whole));
    expect((await source().read())?.boundPods().items.map((b) => b.pod.uid)).toEqual([
      'uid-pod-a',
      'uid-pod-b',
    ]);
  });

  it.each([
    ['not gzip', Buffer.from('{}'), /is not a cluster summary/],
    [
      'another version',
      gzipSync(JSON.stringify({ version: 'flotilla.cluster-summary/v1', nodes: [], pods: [] })),
      /is not flotilla.cluster-summary\/v2/,
    ],
    ['another cluster', document('other-cluster', ['a']), /the summary of cluster "other-cluster"/],
  ] as const)('refuses a document that is %s, saying so', async (_, body, message) => {
    await put(body);
    const error = await source()
      .read()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummaryUnavailableError);
    expect((error as Error).message).toMatch(message);
  });

  it('dates the summary by S3, not by the times the document states', async () => {
    // Written by a shim whose clock is a week behind, its pods' watch 5 s behind its nodes'.
    await put(gzipSync(text(STACK_CLUSTER, ['a'], '2026-11-20T12:00:00Z', 5_000)));
    const before = Date.now();
    const summary = await source().read();
    // S3 keeps whole seconds; moto runs on this machine's clock.
    expect(summary?.publishedAtMs).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    expect(summary?.publishedAtMs).toBeLessThanOrEqual(Date.now());
    expect(summary?.currentAtMs).toBe((summary?.publishedAtMs ?? 0) - 5_000);
  });

  it('refuses a document that dates itself after S3 stored it', async () => {
    const ahead = new Date(Date.now() + 3_600_000).toISOString();
    await put(gzipSync(text(STACK_CLUSTER, ['a'], ahead)));
    const error = await outcome();
    expect(error).toBeInstanceOf(SummaryDatedAheadError);
    expect((error as Error).message).toMatch(/s after S3 stored it/);
  });

  it('refuses an object larger than its limit without downloading it', async () => {
    const summaries = source({ ...TEST_LIMITS, storedBytes: 100 });
    await put(document(STACK_CLUSTER, ['a', 'b', 'c']));
    const error = await summaries.read().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummaryTooLargeError);
    expect((error as Error).message).toMatch(/bytes, over the 100 the stack's clusterSize allows/);
    expect(summaries.stats()).toMatchObject({ reads: 1, downloads: 0, bytesDownloaded: 0 });
  });

  it('stops unzipping a small object at the limit of its text', async () => {
    // 64 MiB of spaces after the head: a few KB gzipped.
    const bomb = gzipSync(
      Buffer.concat([Buffer.from(text(STACK_CLUSTER, ['a'])), Buffer.alloc(64 << 20, 32)]),
    );
    expect(bomb.length).toBeLessThan(TEST_LIMITS.storedBytes);
    await put(bomb);
    const error = await outcome();
    expect(error).toBeInstanceOf(SummaryTooLargeError);
    expect((error as Error).message).toMatch(/unzips to more than the 4000000 bytes/);
  });

  it.each([
    ['Nodes', { nodes: 2 }, /3 Nodes \(at most 2\)/],
    ['pods', { pods: 1 }, /3 pods \(at most 1\)/],
  ] as const)('refuses a document with more %s than its limit', async (_, limit, message) => {
    await put(document(STACK_CLUSTER, ['a', 'b', 'c']));
    const error = await outcome({ ...TEST_LIMITS, ...limit });
    expect(error).toBeInstanceOf(SummaryTooLargeError);
    expect((error as Error).message).toMatch(message);
  });
});

describe('the head of the cluster summary read from S3 (its Nodes and NodeClaims)', () => {
  const now = () => new Date().toISOString();

  it('is used again, dated by the new object, while the head generation stays the same: no download', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.4', now()));
    const first = await summaries.readHead();
    expect(first?.nodeInfos().items.map((n) => n.name)).toEqual(['a']);
    expect(summaries.stats()).toMatchObject({ downloads: 1, headsReused: 0 });
    // Published again a second later with other pods (a new object, a new ETag), the same head;
    // its watches 3 s behind.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const at = now();
    await put(
      gzipSync(text(STACK_CLUSTER, ['a'], at)),
      metadataOf('boot-1.4', at, new Date(Date.parse(at) - 3_000).toISOString()),
    );
    const again = await summaries.readHead();
    expect(summaries.stats()).toMatchObject({ reads: 1, downloads: 1, headRequests: 1, headsReused: 1 });
    expect(again?.nodeInfos().items.map((n) => n.name)).toEqual(['a']);
    expect(again?.publishedAtMs).toBeGreaterThan(first?.publishedAtMs ?? Number.POSITIVE_INFINITY);
    expect(again?.currentAtMs).toBe((again?.publishedAtMs ?? 0) - 3_000);
    // A read that needs the pods downloads the new document.
    await summaries.read();
    expect(summaries.stats()).toMatchObject({ downloads: 2 });
  });

  it('is downloaded again when the head generation moved, or the metadata does not say one', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.4', now()));
    await summaries.readHead();
    await put(document(STACK_CLUSTER, ['a', 'b']), metadataOf('boot-1.5', now()));
    expect((await summaries.readHead())?.nodeInfos().items.map((n) => n.name)).toEqual(['a', 'b']);
    expect(summaries.stats()).toMatchObject({ downloads: 2, headsReused: 0 });
    await put(document(STACK_CLUSTER, ['c']));
    expect((await summaries.readHead())?.nodeInfos().items.map((n) => n.name)).toEqual(['c']);
    // Without metadata there is no generation to compare: every changed object is downloaded.
    await put(document(STACK_CLUSTER, ['d']));
    expect((await summaries.readHead())?.nodeInfos().items.map((n) => n.name)).toEqual(['d']);
    expect(summaries.stats()).toMatchObject({ downloads: 4, headsReused: 0 });
  });

  it('is read as a whole summary by a container that holds none yet', async () => {
    const summaries = source();
    expect(await summaries.readHead()).toBeUndefined();
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.1', now()));
    expect((await summaries.readHead())?.nodeInfos().items.map((n) => n.name)).toEqual(['a']);
    expect(summaries.stats()).toMatchObject({ downloads: 1, headsReused: 0 });
  });

  it('is refused when the metadata dates the document after S3 stored it', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.4', now()));
    await summaries.readHead();
    // Another object (its pods differ), the same head, its metadata an hour ahead.
    await put(
      gzipSync(text(STACK_CLUSTER, ['a'], now())),
      metadataOf('boot-1.4', new Date(Date.now() + 3_600_000).toISOString()),
    );
    const error = await summaries.readHead().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummaryDatedAheadError);
  });

  it('is the held summary, dates and all, when the object is the one it was read from (same ETag)', async () => {
    const summaries = source();
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.4', now()));
    const first = await summaries.readHead();
    expect(await summaries.readHead()).toBe(first);
    expect(summaries.stats()).toMatchObject({ downloads: 1, headRequests: 1, headsReused: 1 });
  });

  it('is unavailable, saying why, when S3 refuses the metadata', async () => {
    // The container's role changes under it (as if its policy were cut): the provisioner's keys
    // for the download, then the shim's, which may only put the object.
    let as: 'provisioner' | 'shim' = 'provisioner';
    const summaries = makeS3SummarySource({
      s3: new S3Client({
        ...awsConfigAs(bucket.server(), 'provisioner'),
        // Expiring at once: the SDK asks for them again at every request.
        credentials: async () => ({ ...lambdaCredentials(as), expiration: new Date() }),
        forcePathStyle: true,
      }),
      bucket: STACK_NAMES.summaryBucket,
      cluster: STACK_CLUSTER,
      limits: TEST_LIMITS,
    });
    await put(document(STACK_CLUSTER, ['a']), metadataOf('boot-1.4', now()));
    await summaries.readHead();
    as = 'shim';
    const error = await summaries.readHead().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummaryUnavailableError);
    expect((error as Error).message).toMatch(/could not be read/);
    expect(summaries.stats()).toMatchObject({ downloads: 1, headRequests: 1, headsReused: 0 });
    // The refusal is this test's subject: the IAM check of the stack's roles made it.
    expect(takeDenials()).toMatchObject([{ lambda: 'shim', call: 's3:HeadObject' }]);
  });
});
