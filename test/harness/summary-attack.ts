import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_CLUSTER_SIZE } from '../../infra/cluster-size.ts';
import { makeS3SummarySource } from '../../shared/adapters/aws/summary-source.ts';
import { withClusterSummary } from '../../shared/adapters/summary-cluster.ts';
import {
  encodeSummaryDocument,
  SummaryBuilder,
  type SummaryDocument,
  type SummaryKind,
} from '../../shared/apis/summary-document.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import { summaryLimitsFor } from '../../shared/ports/summary.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { awsConfigAs, type LambdaName } from './aws/identity.ts';
import { STACK_CLUSTER, STACK_NAMES } from './aws/stack.ts';
import type { Moto } from './moto.ts';

// The cluster summary as an attacker who holds the shim's role writes it: the one S3 object the
// Lambdas read, put with the shim's keys (the only write its policy allows), its content whatever
// the attacker likes. The honest document is built from a list of the API server as the shim's
// watches would see it, so a test changes exactly the field it attacks and nothing else.

const gzipAsync = promisify(gzip);

/**
 * The document an honest shim would publish now: every unfinished pod, Node and NodeClaim as the
 * API server lists them (read with `kubeConfig`, the test's own identity), dated `publishedAt`,
 * with every watch current then.
 */
export async function honestSummary(
  kubeConfig: KubeConfig,
  publishedAt: Date = new Date(),
): Promise<SummaryDocument> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const builder = new SummaryBuilder(STACK_CLUSTER);
  // The objects as JSON, as a watch delivers them (the client's models use other field names).
  const json = (items: readonly unknown[]) => JSON.parse(JSON.stringify(items)) as unknown[];
  const pods = await core.listPodForAllNamespaces();
  builder.replace(
    'pods',
    json(pods.items.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p }))).filter(
      (p) => !['Succeeded', 'Failed'].includes((p as { status?: { phase?: string } }).status?.phase ?? ''),
    ),
  );
  const nodes = await core.listNode();
  builder.replace('nodes', json(nodes.items));
  const claims = (await whenServed(() =>
    custom.listClusterCustomObject({ group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' }),
  )) as { items: unknown[] };
  builder.replace('nodeClaims', claims.items);
  const at = publishedAt.toISOString();
  return builder.document(at, { pods: at, nodes: at, nodeClaims: at });
}

/**
 * `list` once the API server serves it: a custom resource's storage answers 429 "storage is
 * (re)initializing" for a moment after its CRD is (re)installed, and the user's client waits as
 * its Retry-After asks (up to 10 s).
 */
async function whenServed<T>(list: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await list();
    } catch (error) {
      if ((error as { code?: unknown }).code !== 429 || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/** Publishes `document` (or raw bytes, gzipped as given) as the shim's role can: one PutObject. */
export async function forgeSummary(server: Moto, document: SummaryDocument | Uint8Array): Promise<void> {
  const s3 = new S3Client({ ...awsConfigAs(server, 'shim'), forcePathStyle: true });
  const body = document instanceof Uint8Array ? document : await gzipAsync(encodeSummaryDocument(document));
  await s3.send(
    new PutObjectCommand({
      Bucket: STACK_NAMES.summaryBucket,
      Key: STACK_NAMES.summaryObject,
      Body: body,
      ContentType: 'application/gzip',
    }),
  );
}

/**
 * The Cluster port as `lambda` wires it (lambdas/common/wiring.ts): `cluster` (the controller
 * identity) with its list reads served from the published summary, read with `lambda`'s role.
 */
export function summaryCluster(
  server: Moto,
  lambda: LambdaName,
  cluster: Cluster,
  logger: Logger,
  extra: { readonly maxAgeMs?: number } = {},
): ReturnType<typeof withClusterSummary> {
  return withClusterSummary(cluster, {
    source: makeS3SummarySource({
      s3: new S3Client({ ...awsConfigAs(server, lambda), forcePathStyle: true }),
      bucket: STACK_NAMES.summaryBucket,
      cluster: STACK_CLUSTER,
      limits: summaryLimitsFor(DEFAULT_CLUSTER_SIZE),
    }),
    clock: systemClock,
    logger,
    ...extra,
  });
}

/** A deep copy of `document` with `change` applied to the copy (tests attack one field at a time). */
export function tampered(document: SummaryDocument, change: (copy: MutableSummary) => void): SummaryDocument {
  const copy = structuredClone(document) as unknown as MutableSummary;
  change(copy);
  return copy as unknown as SummaryDocument;
}

/** A summary document as plain, writable JSON. */
export interface MutableSummary {
  head: {
    version: string;
    cluster: string;
    publishedAt: string;
    current: Record<SummaryKind, string>;
    // biome-ignore lint/suspicious/noExplicitAny: an attack edits any field of the JSON it forges
    nodes: Record<string, any>[];
    // biome-ignore lint/suspicious/noExplicitAny: as above
    nodeClaims: Record<string, any>[];
    counts: Record<SummaryKind, number>;
  };
  pods: { podTemplates: unknown[]; pods: unknown[][] };
}
