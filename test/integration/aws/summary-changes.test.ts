import { gzipSync } from 'node:zlib';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { makeSummaryPublisher, type StoreSummaryObject } from '../../../infra/shim/summary-publish.ts';
import { makeS3SummarySource } from '../../../shared/adapters/aws/summary-source.ts';
import {
  encodeSummaryDocument,
  readSummaryDocument,
  SummaryBuilder,
  summaryObjectKey,
} from '../../../shared/apis/index.ts';
import { summaryChangesObjectKey } from '../../../shared/apis/summary-changes.ts';
import { summaryObjectMetadata } from '../../../shared/apis/summary-metadata.ts';
import {
  type ClusterSummary,
  type SummaryLimits,
  SummaryUnavailableError,
} from '../../../shared/ports/summary.ts';
import { STACK_CLUSTER, STACK_NAMES } from '../../harness/aws/stack.ts';
import { useSummaryBucket } from './summary-bucket-fixture.ts';

// The summary published as the shim publishes it, a base document and the changes since it, on
// moto with the shim's role, and read with the provisioner's (the IAM check holds each call to
// the stack's policies): a warm container downloads the base once and then only the changes.

const bucket = useSummaryBucket();
const s3As = bucket.s3As;

/** The shim's store: each object under its key, with its metadata, as infra/shim/main.ts puts it. */
const store: StoreSummaryObject = async (object, body, metadata) => {
  const out = await s3As('shim').send(
    new PutObjectCommand({
      Bucket: STACK_NAMES.summaryBucket,
      Key: object === 'base' ? summaryObjectKey(STACK_CLUSTER) : summaryChangesObjectKey(STACK_CLUSTER),
      Body: body,
      Metadata: { ...metadata },
    }),
  );
  return { etag: out.ETag };
};

const LIMITS: SummaryLimits = {
  storedBytes: 4_000_000,
  textBytes: 16_000_000,
  nodes: 1_000,
  nodeClaims: 1_000,
  pods: 10_000,
};

const node = (name: string, label = 'x') => ({
  metadata: { name, uid: `uid-${name}`, labels: { l: label } },
  spec: {},
  status: { allocatable: { cpu: '8', memory: '32Gi', pods: '110' } },
});
const pod = (name: string, on: string) => ({
  metadata: { name, namespace: 'apps', uid: `uid-${name}`, labels: { app: 'web' } },
  spec: {
    nodeName: on,
    containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: '100m' } } }],
  },
  status: { phase: 'Running' },
});

/** A shim's builder with `nodes` Nodes and `podsPerNode` pods on each, and its publisher. */
function shim(nodes: number, podsPerNode: number, now?: () => number) {
  const builder = new SummaryBuilder(STACK_CLUSTER);
  for (let n = 0; n < nodes; n++) {
    builder.apply('nodes', 'ADDED', node(`node-${n}`));
    for (let p = 0; p < podsPerNode; p++) builder.apply('pods', 'ADDED', pod(`pod-${n}-${p}`, `node-${n}`));
  }
  const publish = makeSummaryPublisher(builder, store, now === undefined ? {} : { now });
  let generation = 0;
  return {
    builder,
    publish: () => {
      generation += 1;
      const at = new Date().toISOString();
      const current = { pods: at, nodes: at, nodeClaims: at };
      return publish(at, current, summaryObjectMetadata(`boot.${generation}`, at, current));
    },
  };
}

const source = () =>
  makeS3SummarySource({
    s3: s3As('provisioner'),
    bucket: STACK_NAMES.summaryBucket,
    cluster: STACK_CLUSTER,
    limits: LIMITS,
  });

/** What a reader reads of a summary, in an order the documents do not decide. */
function readOf(summary: ClusterSummary | undefined) {
  const nodes = [...(summary?.nodes().items ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return {
    counts: summary?.counts,
    nodes: nodes.map((n) => ({ name: n.name, labels: n.labels, pods: n.pods.map((p) => p.name).sort() })),
  };
}

/** The builder's whole document, read as a Lambda reads one. */
const whole = (builder: SummaryBuilder) =>
  readOf(
    readSummaryDocument(
      encodeSummaryDocument(
        builder.document(new Date().toISOString(), {
          pods: new Date().toISOString(),
          nodes: new Date().toISOString(),
          nodeClaims: new Date().toISOString(),
        }),
      ),
    ),
  );

describe('the cluster summary published as a base and the changes since it', () => {
  it('is read by a warm container from the changes alone once it holds their base', async () => {
    const { builder, publish } = shim(20, 10);
    expect(await publish()).toMatchObject({ rebased: true });
    const summaries = source();
    expect(readOf(await summaries.read())).toEqual(whole(builder));
    expect(summaries.stats()).toMatchObject({ downloads: 2, baseDownloads: 1 });
    // Pods come and go, a Node is relabelled and another leaves: changes, not a new base.
    builder.apply('pods', 'DELETED', pod('pod-3-1', 'node-3'));
    builder.apply('pods', 'ADDED', pod('pod-new', 'node-4'));
    builder.apply('nodes', 'MODIFIED', node('node-5', 'y'));
    builder.apply('nodes', 'DELETED', node('node-19'));
    const published = await publish();
    expect(published.rebased).toBe(false);
    const before = summaries.stats().bytesDownloaded;
    const read = await summaries.read();
    expect(readOf(read)).toEqual(whole(builder));
    expect(summaries.stats()).toMatchObject({ downloads: 3, baseDownloads: 1 });
    expect(summaries.stats().bytesDownloaded - before).toBe(published.bytes);
    // Unchanged since: one conditional request, the same summary.
    expect(await summaries.read()).toBe(read);
    // A second container holds no base: it reads the base once, then the changes.
    const cold = source();
    expect(readOf(await cold.read())).toEqual(whole(builder));
    expect(cold.stats()).toMatchObject({ downloads: 2, baseDownloads: 1 });
  });

  it('serves a head read from the held head while only pods changed, as the changes metadata says', async () => {
    const builder = new SummaryBuilder(STACK_CLUSTER);
    builder.apply('nodes', 'ADDED', node('node-0'));
    const publish = makeSummaryPublisher(builder, store);
    const publishAs = (head: string) => {
      const at = new Date().toISOString();
      const current = { pods: at, nodes: at, nodeClaims: at };
      return publish(at, current, summaryObjectMetadata(head, at, current));
    };
    await publishAs('boot.1');
    const summaries = source();
    await summaries.read();
    // Pods only: the shim's head generation stays.
    builder.apply('pods', 'ADDED', pod('pod-late', 'node-0'));
    expect(await publishAs('boot.1')).toMatchObject({ rebased: false });
    const head = await summaries.readHead();
    expect(head?.nodeInfos().items.map((n) => n.name)).toEqual(['node-0']);
    expect(summaries.stats()).toMatchObject({ downloads: 2, headRequests: 1, headsReused: 1 });
    // A Node joins: a new generation, and the changes are downloaded.
    builder.apply('nodes', 'ADDED', node('node-1'));
    await publishAs('boot.2');
    expect((await summaries.readHead())?.nodeInfos().items.map((n) => n.name)).toEqual(['node-0', 'node-1']);
    expect(summaries.stats()).toMatchObject({ downloads: 3, baseDownloads: 1, headsReused: 1 });
  });

  it('publishes a new base once the changes grow past an eighth of it, and the reader moves to it', async () => {
    const { builder, publish } = shim(100, 40);
    await publish();
    const summaries = source();
    await summaries.read();
    // Every pod of half the Nodes replaced: far more than an eighth of the document.
    for (let n = 0; n < 50; n++) {
      for (let p = 0; p < 40; p++) {
        builder.apply('pods', 'DELETED', pod(`pod-${n}-${p}`, `node-${n}`));
        builder.apply('pods', 'ADDED', pod(`pod-${n}-${p}-b`, `node-${n}`));
      }
    }
    expect(await publish()).toMatchObject({ rebased: true });
    expect(readOf(await summaries.read())).toEqual(whole(builder));
    expect(summaries.stats()).toMatchObject({ baseDownloads: 2 });
  });

  it('reads a base replaced after the changes it read alone, and the shim takes the base back at its next rebase', async () => {
    let nowMs = Date.now();
    const { builder, publish } = shim(3, 1, () => nowMs);
    await publish();
    // Another writer's base (a second shim while the Deployment rolls) lands after the changes.
    const other = new SummaryBuilder(STACK_CLUSTER);
    other.apply('nodes', 'ADDED', node('elsewhere'));
    const at = new Date().toISOString();
    await store(
      'base',
      gzipSync(encodeSummaryDocument(other.document(at, { pods: at, nodes: at, nodeClaims: at }))),
      {},
    );
    const summaries = source();
    const names = async () => readOf(await summaries.read()).nodes.map((n) => n.name);
    expect(await names()).toEqual(['elsewhere']);
    // The changes and the other base, each downloaded once, the base parsed once.
    expect(summaries.stats()).toMatchObject({ downloads: 2, baseDownloads: 1 });
    // The shim's changes still name its own base: the other base is all there is to read.
    builder.apply('pods', 'ADDED', pod('pod-more', 'node-0'));
    expect(await publish()).toMatchObject({ rebased: false });
    expect(await names()).toEqual(['elsewhere']);
    // The new changes are downloaded; the other base, still there, is not sent again.
    expect(summaries.stats()).toMatchObject({ downloads: 3, baseDownloads: 1 });
    // Five minutes on, the shim writes its base again, and the container reads the shim's state.
    nowMs += 5 * 60_000;
    expect(await publish()).toMatchObject({ rebased: true });
    expect(readOf(await summaries.read())).toEqual(whole(builder));
  });

  it('passes over changes no longer written (a shim of an older version writes only the base) for the base alone', async () => {
    const { publish } = shim(2, 1);
    await publish();
    const summaries = makeS3SummarySource({
      s3: s3As('provisioner'),
      bucket: STACK_NAMES.summaryBucket,
      cluster: STACK_CLUSTER,
      limits: LIMITS,
      changesStaleMs: 1_000,
    });
    expect(readOf(await summaries.read()).nodes.map((n) => n.name)).toEqual(['node-0', 'node-1']);
    // The older shim writes its whole document; the changes object stays as the new shim left it.
    const older = new SummaryBuilder(STACK_CLUSTER);
    older.apply('nodes', 'ADDED', node('from-the-older-shim'));
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const at = new Date().toISOString();
    await store(
      'base',
      gzipSync(encodeSummaryDocument(older.document(at, { pods: at, nodes: at, nodeClaims: at }))),
      {},
    );
    const read = await summaries.read();
    expect(readOf(read).nodes.map((n) => n.name)).toEqual(['from-the-older-shim']);
    // Unchanged since: the changes are still passed over, the base is one conditional request.
    expect(await summaries.read()).toBe(read);
    expect(summaries.stats()).toMatchObject({ baseDownloads: 2 });
  });

  it('is unavailable, saying why, when the changes name a base that is not there', async () => {
    const { publish } = shim(2, 1);
    await publish();
    // An operator deletes the base (set-up plays them, with the account's own keys).
    await bucket
      .s3AsAdmin()
      .send(
        new DeleteObjectCommand({ Bucket: STACK_NAMES.summaryBucket, Key: summaryObjectKey(STACK_CLUSTER) }),
      );
    const error = await source()
      .read()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummaryUnavailableError);
    expect((error as Error).message).toMatch(/names a base that .* does not hold/);
  });
});
