import { parseTerminationMessage } from '../../shared/messages/termination-request.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { TerminationResult } from '../../shared/usecases/termination.ts';
import { type BatchResponse, scheduleEvent, sqsEvent } from '../common/sqs.ts';

// The termination Lambda's event handling, apart from the cold-start wiring in handler.ts.

export interface TerminationDeps {
  readonly logger: Logger;
  /** One termination pass over a NodeClaim. */
  readonly terminate: (nodeClaim: string) => Promise<TerminationResult>;
  /** Hands the rest of a termination to a later invocation (a delayed termination message). */
  readonly enqueue: (nodeClaim: string, delaySeconds: number) => Promise<void>;
  /**
   * The sweep's start: NodeClaims of deleted Nodes are deleted, and the names of every NodeClaim
   * being deleted that still carries the termination finalizer come back.
   */
  readonly terminatingNodeClaims: () => Promise<readonly string[]>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly nowMs: () => number;
  /** How long this invocation keeps passing over a NodeClaim before handing it on. */
  readonly budgetMs: number;
}

export type TerminationHandlerResult =
  | BatchResponse
  | { readonly kind: 'swept'; readonly results: readonly TerminationResult[] }
  | { readonly kind: 'ignored' };

/**
 * Termination-queue and schedule target. A queue message names one NodeClaim: passes run until it
 * is done or the budget is spent, then a delayed message carries the rest to a later invocation
 * and the current one is acknowledged. The schedule sweeps every terminating NodeClaim (deleted
 * with kubectl, by a timeout, or whose message chain was lost) within the same budget; it does not
 * start message chains, so a long drain found only by the sweep moves on at each sweep.
 */
export function makeTerminationHandler(deps: TerminationDeps) {
  const { logger } = deps;

  async function drive(nodeClaim: string, handOn: boolean): Promise<TerminationResult> {
    const until = deps.nowMs() + deps.budgetMs;
    for (;;) {
      const result = await deps.terminate(nodeClaim);
      if (result.kind !== 'continue') return result;
      const wait = result.afterSeconds * 1000;
      if (deps.nowMs() + wait > until) {
        if (handOn) await deps.enqueue(nodeClaim, result.afterSeconds);
        logger.info('termination continues later', {
          nodeClaim,
          decision: 'continue',
          waitingOn: result.waitingOn,
          reason: result.detail,
          afterSeconds: result.afterSeconds,
          queued: handOn,
        });
        return result;
      }
      await deps.sleep(wait);
    }
  }

  return async function handler(event: unknown): Promise<TerminationHandlerResult> {
    const batch = sqsEvent.safeParse(event);
    if (batch.success) {
      const failures: { itemIdentifier: string }[] = [];
      const byClaim = new Map<string, string[]>();
      for (const record of batch.data.Records) {
        const parsed = parseTerminationMessage(record.body);
        if (!parsed.ok) {
          logger.warn('termination message rejected', {
            messageId: record.messageId,
            problem: parsed.problem,
          });
          failures.push({ itemIdentifier: record.messageId });
          continue;
        }
        byClaim.set(parsed.request.nodeClaim, [
          ...(byClaim.get(parsed.request.nodeClaim) ?? []),
          record.messageId,
        ]);
      }
      await Promise.all(
        [...byClaim].map(async ([nodeClaim, messageIds]) => {
          try {
            await drive(nodeClaim, true);
          } catch (error) {
            logger.error('termination failed', { error, nodeClaim });
            failures.push(...messageIds.map((itemIdentifier) => ({ itemIdentifier })));
          }
        }),
      );
      return { batchItemFailures: failures };
    }
    if (scheduleEvent.safeParse(event).success) {
      const names = await deps.terminatingNodeClaims();
      const results: TerminationResult[] = [];
      const errors: unknown[] = [];
      await Promise.all(
        names.map(async (name) => {
          try {
            results.push(await drive(name, false));
          } catch (error) {
            logger.error('termination failed', { error, nodeClaim: name });
            errors.push(error);
          }
        }),
      );
      // Errors propagate so the schedule's retries and failure queue see them.
      if (errors.length > 0) throw errors[0];
      return { kind: 'swept', results };
    }
    logger.warn('event ignored', { why: 'neither an SQS batch nor an EventBridge schedule' });
    return { kind: 'ignored' };
  };
}
