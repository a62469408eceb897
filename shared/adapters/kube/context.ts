import type {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PolicyV1Api,
  StorageV1Api,
} from '@kubernetes/client-node';
import { convertEach, KARPENTER_GROUP, KARPENTER_VERSION, NODE_OVERLAY_VERSION } from '../../apis/index.ts';
import type { ValidationError } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { MetadataPatch, ReadResult } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Caller } from './call.ts';
import type { RawApi } from './raw.ts';

// What the parts of the kube Cluster (reads, custom-object writes, node and drain calls, events)
// share: the API clients, the bounded caller, the options' values and a few helpers.

export type CustomResource = { group: string; version: string; plural: string };

export const NODECLAIMS = {
  group: KARPENTER_GROUP,
  version: KARPENTER_VERSION,
  plural: 'nodeclaims',
} as const;
export const NODEPOOLS = { group: KARPENTER_GROUP, version: KARPENTER_VERSION, plural: 'nodepools' } as const;
export const NODEOVERLAYS = {
  group: KARPENTER_GROUP,
  version: NODE_OVERLAY_VERSION,
  plural: 'nodeoverlays',
} as const;
export const EC2NODECLASSES = {
  group: 'karpenter.k8s.aws',
  version: 'v1',
  plural: 'ec2nodeclasses',
} as const;

export interface RawObject {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  status?: Record<string, unknown>;
}

/** The API clients and settings every part of the kube Cluster works with. */
export interface KubeContext {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly policy: PolicyV1Api;
  readonly storage: StorageV1Api;
  readonly custom: CustomObjectsApi;
  /** Every API call goes through it: concurrency bound, timeout, retries, error translation. */
  readonly api: Caller;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Attempts of a read-modify-write that keeps hitting 409 Conflict. */
  readonly conflictAttempts: number;
  /** Page size of the paginated list calls (the pods of one node). */
  readonly pageSize: number;
  /** JSON over HTTPS for the large reads (raw.ts). */
  readonly raw: RawApi;
  /** A whole list is aborted after this long. */
  readonly listTimeoutMs: number;
  /** A call is aborted after this long. */
  readonly callTimeoutMs: number;
  /** A list from which nothing arrives for this long is aborted. */
  readonly listIdleTimeoutMs: number;
  /** Runs between the read and the write of every read-modify-write (a test seam). */
  readonly beforeWrite: (kind: string, name: string) => Promise<void>;
}

/** Every page of a list. */
export async function listAll<T>(
  ctx: KubeContext,
  operation: string,
  page: (cont: string | undefined) => Promise<{ items: T[]; next: string | undefined }>,
): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const result = await page(cont);
    out.push(...result.items);
    cont = result.next || undefined;
  } while (cont !== undefined);
  if (out.length === 0) ctx.logger.debug('kube list empty', { operation });
  return out;
}

/** Converts each item; a ValidationError skips the item and is reported. */
export function convertAll<R, T>(
  ctx: KubeContext,
  kind: string,
  raws: readonly R[],
  convert: (raw: R) => T,
): ReadResult<T> {
  return convertEach(raws, convert, (error) => warnSkipped(ctx, kind, error));
}

/** The log line of an object a read left out. */
export function warnSkipped(ctx: KubeContext, kind: string, error: ValidationError): void {
  ctx.logger.warn('skipped malformed object', {
    kind,
    object: error.object,
    field: error.field,
    problem: error.message,
  });
}

/** The metadata of a merge patch: labels, annotations, finalizers, under the read's resourceVersion. */
export function metadataChange(current: RawObject, patch: MetadataPatch): Record<string, unknown> {
  const finalizers = new Set(current.metadata?.finalizers ?? []);
  for (const f of patch.addFinalizers ?? []) finalizers.add(f);
  for (const f of patch.removeFinalizers ?? []) finalizers.delete(f);
  return {
    resourceVersion: current.metadata?.resourceVersion,
    ...(patch.labels ? { labels: patch.labels } : {}),
    ...(patch.annotations ? { annotations: patch.annotations } : {}),
    ...(patch.addFinalizers || patch.removeFinalizers ? { finalizers: [...finalizers] } : {}),
  };
}
