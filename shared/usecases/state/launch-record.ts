import type { LaunchRecord } from '../../ports/cloud.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';

// The launch decided for a NodeClaim, kept on it in an annotation from before the cloud is asked
// until the claim goes: a resumed launch replays it (same request, same idempotency token), and
// termination knows a launch may have been sent, so it looks for the instance before letting go.

/**
 * The NodeClaim annotation holding its launch record (JSON: `decidedAt`, `sentAt`, `request`).
 * `sentAt` is written before every send of the request, the first and any replay.
 */
export const LAUNCH_ANNOTATION = 'flotilla.io/launch';

/** The annotation value for a record about to be sent at `sentAtMs`. */
export function launchAnnotation(record: LaunchRecord, sentAtMs: number): string {
  return JSON.stringify({
    decidedAt: new Date(record.decidedAtMs).toISOString(),
    sentAt: new Date(sentAtMs).toISOString(),
    request: record.request,
  });
}

/**
 * The claim's launch record. `malformed` when the annotation is there but unreadable: a launch may
 * have been sent, so callers treat it as recorded (the lookup window runs from the claim's creation).
 */
export type ReadLaunchRecord =
  | { readonly kind: 'none' }
  | { readonly kind: 'recorded'; readonly record: LaunchRecord; readonly sentAtMs: number }
  | { readonly kind: 'malformed'; readonly problem: string };

export function readLaunchRecord(claim: Pick<ClusterNodeClaim, 'annotations'>): ReadLaunchRecord {
  const raw = claim.annotations[LAUNCH_ANNOTATION];
  if (raw === undefined) return { kind: 'none' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { kind: 'malformed', problem: `${LAUNCH_ANNOTATION} is not JSON` };
  }
  const { decidedAt, sentAt, request } = (
    typeof parsed === 'object' && parsed !== null ? parsed : {}
  ) as Record<string, unknown>;
  const decidedAtMs = typeof decidedAt === 'string' ? Date.parse(decidedAt) : Number.NaN;
  const sentAtMs = typeof sentAt === 'string' ? Date.parse(sentAt) : decidedAtMs;
  if (Number.isNaN(decidedAtMs) || Number.isNaN(sentAtMs) || typeof request !== 'string' || request === '') {
    return { kind: 'malformed', problem: `${LAUNCH_ANNOTATION} lacks decidedAt, sentAt or request` };
  }
  return { kind: 'recorded', record: { decidedAtMs, request }, sentAtMs };
}

/**
 * Until when (epoch ms) an instance of the claim may exist without EC2 listing it yet: the last
 * send (or, for an unreadable record, the claim's creation) plus the lookup window. Undefined when
 * no launch was ever recorded, so none was sent.
 */
export function instanceLookupUntilMs(
  claim: Pick<ClusterNodeClaim, 'annotations' | 'createdAtMs'>,
  windowMs: number,
): number | undefined {
  const read = readLaunchRecord(claim);
  switch (read.kind) {
    case 'none':
      return undefined;
    case 'recorded':
      return Math.max(read.sentAtMs, read.record.decidedAtMs) + windowMs;
    case 'malformed':
      return (claim.createdAtMs ?? 0) + windowMs;
  }
}
