import { NodeClaimConditionType } from '../../core/index.ts';
import type { Cluster, ClusterNodeClaim } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import type { ClaimChanges } from './conditions.ts';

// The NodeClaim condition writes of a disruption pass. The pass decides from the conditions as it
// computed them (conditions.ts), not from what is written, so its commands need not wait for the
// writes: they go on in the background, a few NodeClaims at a time, each a patch against the
// NodeClaim as listed (one request; a read and a write only if it changed since) and a merge patch
// of its annotations when they changed, until the end of the pass's planned work time, its
// deadline or the loss of its lease. Those left out are computed and written again by the next pass. A write that leads to disruption
// (`Drifted` set True) is not made from the list read, which may be the cluster summary: the
// NodeClaim is read from the API server (a GET) and its changes computed again on that read; only
// what that computation says is written.

/**
 * NodeClaims whose conditions are written at once: half the calls the Kubernetes adapter has in
 * flight (8), so the pass's own reads and commands, which go on meanwhile, never queue behind them.
 */
export const CONDITION_WRITERS = 4;

/**
 * A write is not started with less than this left before the pass's deadline: one NodeClaim's
 * writes are up to three calls (a conflicting patch, a read, the patch) and its annotations, each
 * bounded by the adapter's call timeout, and the pass waits for them before it ends.
 */
export const WRITE_MARGIN_MS = 20_000;

export interface ClaimWrite {
  /** The NodeClaim as listed. */
  readonly claim: ClusterNodeClaim;
  readonly changes: ClaimChanges;
  /** The same computation on the NodeClaim as the API server has it. */
  readonly recompute: (fresh: ClusterNodeClaim) => ClaimChanges;
}

/** Whether the changes set a condition that leads to disruption (`Drifted` True). */
export function leadsToDisruption(changes: ClaimChanges): boolean {
  return (changes.status?.conditions ?? []).some(
    (c) => c.type === NodeClaimConditionType.drifted && c.status === 'True',
  );
}

export interface ConditionWriteOptions {
  /** Epoch ms by which the pass must be done, when it has a deadline. */
  readonly deadlineMs: () => number | undefined;
  /** Epoch ms after which no write starts (the end of the pass's planned work). @default none */
  readonly workEndMs?: () => number | undefined;
  readonly nowMs: () => number;
  /** True once the writes must stop (the pass lost its lease: another pass writes now). */
  readonly stopped?: () => boolean;
}

/** What the writes did: NodeClaims written, and those the pass's time or a lost lease left out. */
export interface ConditionWriteCounts {
  readonly written: number;
  readonly deferred: number;
}

export interface ConditionWrites {
  /**
   * Waits for every write started; then logs how many the pass's time or a lost lease left out.
   * @throws the first write's error (ClusterApiError): the writers stop at it.
   */
  finished(): Promise<ConditionWriteCounts>;
}

/** Starts the writes; they run while the caller goes on. */
export function startConditionWrites(
  ports: {
    readonly cluster: Pick<Cluster, 'patchNodeClaimStatus' | 'patchNodeClaimMetadata' | 'nodeClaim'>;
    readonly logger: Logger;
    readonly metrics: MetricsSink;
  },
  writes: readonly ClaimWrite[],
  options: ConditionWriteOptions,
): ConditionWrites {
  const { cluster, logger } = ports;
  let index = 0;
  let failed = false;
  let deferred = 0;
  let written = 0;
  let halted = false;
  let workTimeOver = false;
  const nearDeadline = () => {
    const deadline = options.deadlineMs();
    const workEnd = options.workEndMs?.();
    const now = options.nowMs();
    if (deadline !== undefined && deadline - now < WRITE_MARGIN_MS) return true;
    if (workEnd === undefined || now < workEnd) return false;
    workTimeOver = true;
    return true;
  };
  const worker = async () => {
    for (let i = index++; i < writes.length && !failed; i = index++) {
      const write = writes[i] as ClaimWrite;
      if (options.stopped?.() === true) {
        halted = true;
        deferred += 1;
        continue;
      }
      if (nearDeadline()) {
        deferred += 1;
        continue;
      }
      let claim = write.claim;
      let changes = write.changes;
      try {
        if (leadsToDisruption(changes)) {
          const fresh = await cluster.nodeClaim(claim.name);
          const again = fresh === undefined || fresh.deleting ? undefined : write.recompute(fresh);
          if (again === undefined || !leadsToDisruption(again)) {
            logger.warn('nodeclaim condition not confirmed', {
              nodeClaim: claim.name,
              condition: NodeClaimConditionType.drifted,
              why:
                again === undefined
                  ? 'the API server has no such NodeClaim, or it is being deleted'
                  : 'the NodeClaim as the API server has it is not drifted',
            });
          }
          if (fresh === undefined || again === undefined) continue;
          claim = fresh;
          changes = again;
        }
        // The status first, against the NodeClaim as listed: the metadata (the digest of the pods
        // the status's lastPodEventTime was computed from) is written only once the status is.
        if (changes.status !== undefined) {
          await ignoreNotFound(cluster.patchNodeClaimStatus(claim.name, changes.status, claim));
        }
        if (changes.metadata !== undefined) {
          await ignoreNotFound(cluster.patchNodeClaimMetadata(claim.name, changes.metadata));
        }
      } catch (error) {
        // The other writers stop rather than write on after it; `finished` throws it.
        failed = true;
        throw error;
      }
      written += 1;
      if (changes.adopted !== undefined) {
        writeDecision(ports, {
          kind: 'adopted',
          reason: 'hash versions Flotilla does not compare',
          ...nodeClaimFields(claim),
          previous: changes.adopted.previous,
        });
      }
      if (changes.drifted !== undefined) {
        writeDecision(ports, {
          kind: 'drifted',
          reason: changes.drifted.reason,
          ...nodeClaimFields(claim),
          detail: changes.drifted.message,
        });
      }
    }
  };
  // Settled, not raced: every writer is done before the pass gives up its lease.
  const settled = Promise.allSettled(
    Array.from({ length: Math.min(CONDITION_WRITERS, writes.length) }, worker),
  );
  return {
    async finished() {
      const results = await settled;
      const rejected = results.find((r) => r.status === 'rejected');
      if (rejected !== undefined) throw rejected.reason;
      if (deferred > 0) {
        logger.warn('nodeclaim conditions deferred', {
          count: deferred,
          why: halted
            ? 'the pass lost its lease'
            : workTimeOver
              ? "the pass's planned work time is over"
              : 'the pass deadline is near',
        });
      }
      return { written, deferred };
    },
  };
}

/**
 * Waits for the writes, if any. Their failure does not fail a pass whose commands may have started:
 * it is logged, and the next pass computes and writes those conditions again.
 */
export async function settleConditionWrites(
  writes: ConditionWrites | undefined,
  logger: Logger,
): Promise<ConditionWriteCounts | undefined> {
  try {
    return await writes?.finished();
  } catch (error) {
    logger.error('nodeclaim conditions not written', {
      error: error instanceof Error ? error.message : String(error),
      retry: 'the next pass writes them',
    });
    return undefined;
  }
}
