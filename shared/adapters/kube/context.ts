import { convertEach, KARPENTER_GROUP, KARPENTER_VERSION, NODE_OVERLAY_VERSION } from '../../apis/index.ts';
import type { ValidationError } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { MetadataPatch, ReadResult } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Caller, CallOptions } from './call.ts';
import type { RawApi, RawRequest } from './http.ts';

// What the parts of the kube Cluster (reads, custom-object writes, node and drain calls, events)
// share: the connection to the API server, the bounded caller, the options' values and a few helpers.

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

/** The connection and settings every part of the kube Cluster works with. */
export interface KubeContext {
  /** Every API call goes through it: concurrency bound, timeout, retries, error translation. */
  readonly api: Caller;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Attempts of a read-modify-write that keeps hitting 409 Conflict. */
  readonly conflictAttempts: number;
  /** Page size of the paginated list calls (the pods of one node). */
  readonly pageSize: number;
  /** JSON over HTTPS to the API server (http.ts). */
  readonly raw: RawApi;
  /** A whole list is aborted after this long. */
  readonly listTimeoutMs: number;
  /** A call is aborted after this long. */
  readonly callTimeoutMs: number;
  /** A list from which nothing arrives for this long is aborted. */
  readonly listIdleTimeoutMs: number;
  /** A warm container catches up with the NodeClaims when its last read held at least this many. */
  readonly nodeClaimCatchUpFrom: number;
  /** Runs between the read and the write of every read-modify-write (a test seam). */
  readonly beforeWrite: (kind: string, name: string) => Promise<void>;
}

/** The content type of a JSON merge patch (RFC 7386). */
export const MERGE_PATCH = 'application/merge-patch+json';

/** One request through the bounded caller: its parsed answer, or the call's typed error. */
export function send(
  ctx: KubeContext,
  operation: string,
  request: Omit<RawRequest, 'signal'>,
  options?: CallOptions,
): Promise<unknown> {
  return ctx.api.call(operation, (signal) => ctx.raw.request({ ...request, signal }), options);
}

/** A path segment: an object's name or namespace, encoded. */
export const seg = (name: string): string => encodeURIComponent(name);

/** The path of a cluster-scoped custom resource's collection, or of one object (and a subresource). */
export function customPath(what: CustomResource, name?: string, subresource?: string): string {
  const base = `/apis/${what.group}/${what.version}/${what.plural}`;
  if (name === undefined) return base;
  return `${base}/${seg(name)}${subresource === undefined ? '' : `/${subresource}`}`;
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
