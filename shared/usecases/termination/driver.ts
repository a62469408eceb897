import { describeTerminationRequest, type TerminationRequest } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, writeDecision } from '../decisions/decision.ts';
import type { BatchItem, BatchOutcome } from '../state/batch.ts';
import type { TerminationResult } from './termination.ts';

// The termination Lambda's drive loop, shared with the simulator: passes over one NodeClaim
// (terminateNodeClaim) repeat, waiting as each pass asks, until it is done or the invocation's
// budget is spent; the rest goes on through a delayed termination request. Time comes in as
// `sleep` and `nowMs`, so the simulator drives the same loop on its virtual clock.

/** What driving a NodeClaim's termination uses. */
export interface TerminationDriverDeps {
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /** One termination pass over a NodeClaim (terminateNodeClaim at the current time). */
  readonly terminate: (nodeClaim: string) => Promise<TerminationResult>;
  /** Hands the rest of a termination to a later invocation (a delayed termination request). */
  readonly enqueue: (nodeClaim: string, delaySeconds: number) => Promise<void>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly nowMs: () => number;
  /** How long one invocation keeps passing over a NodeClaim before handing it on, in milliseconds. */
  readonly budgetMs: number;
}

/** What the schedule's sweep and the queue's requests add: the NodeClaims to pass over. */
export interface TerminationSweepDeps extends TerminationDriverDeps {
  /** The NodeClaim a queue's request comes to. */
  readonly resolve: (request: TerminationRequest) => Promise<ResolvedRequest>;
  /**
   * The sweep's start: NodeClaims of deleted Nodes are deleted, and the names of every NodeClaim
   * being deleted that still carries the termination finalizer come back.
   */
  readonly terminatingNodeClaims: () => Promise<readonly string[]>;
}

/**
 * Passes over `nodeClaim` until a pass is done (or skips it) or the next wait would pass the
 * budget. Then, with `handOn`, a delayed request carries the rest to a later invocation; without
 * it (the sweep), the next sweep picks the NodeClaim up again. Returns the last pass's result.
 * @throws what a pass throws (ClusterApiError, CloudApiError, …) and QueueSendError; a later
 * delivery or sweep resumes, every step being idempotent.
 */
export async function driveTermination(
  deps: TerminationDriverDeps,
  nodeClaim: string,
  handOn: boolean,
): Promise<TerminationResult> {
  const until = deps.nowMs() + deps.budgetMs;
  for (;;) {
    const result = await deps.terminate(nodeClaim);
    if (result.kind !== 'continue') return result;
    const wait = result.afterSeconds * 1000;
    if (deps.nowMs() + wait > until) {
      if (handOn) await deps.enqueue(nodeClaim, result.afterSeconds);
      writeDecision(deps, {
        kind: 'continue',
        reason: result.detail,
        nodeClaim,
        waitingOn: result.waitingOn,
        afterSeconds: result.afterSeconds,
        queued: handOn,
      });
      return result;
    }
    await deps.sleep(wait);
  }
}

/** What a termination request comes to: the NodeClaim to drive, or why there is none. */
export type ResolvedRequest = { readonly nodeClaim: string } | { readonly none: string };

/**
 * A batch of termination requests: each is resolved to its NodeClaim (a deleted Node's is deleted
 * first; a relayed request whose termination is under way comes to none), then each NodeClaim is
 * driven once however many requests name it, the NodeClaims concurrently, each handing on what it
 * has left. A request that cannot be resolved, or whose NodeClaim's drive throws, is logged and
 * fails only itself and the requests that share its NodeClaim.
 */
export async function driveTerminationRequests(
  deps: TerminationDriverDeps & {
    readonly resolve: (request: TerminationRequest) => Promise<ResolvedRequest>;
  },
  items: readonly BatchItem<TerminationRequest>[],
): Promise<BatchOutcome> {
  const byClaim = new Map<string, string[]>();
  const failed: string[] = [];
  await Promise.all(
    items.map(async ({ id, message }) => {
      try {
        const resolved = await deps.resolve(message);
        if ('none' in resolved) {
          deps.logger.info('termination request needs no drive', {
            request: describeTerminationRequest(message),
            why: resolved.none,
          });
          return;
        }
        byClaim.set(resolved.nodeClaim, [...(byClaim.get(resolved.nodeClaim) ?? []), id]);
      } catch (error) {
        deps.logger.error('termination failed', { error, request: describeTerminationRequest(message) });
        failed.push(id);
      }
    }),
  );
  await Promise.all(
    [...byClaim].map(async ([nodeClaim, ids]) => {
      try {
        await driveTermination(deps, nodeClaim, true);
      } catch (error) {
        deps.logger.error('termination failed', { error, nodeClaim });
        failed.push(...ids);
      }
    }),
  );
  return { failed };
}

/**
 * The schedule's sweep: every terminating NodeClaim (deleted with kubectl, by a timeout, or whose
 * message chain was lost) is driven within the same budget, concurrently, without starting message
 * chains, so a long drain found only by the sweep moves on at each sweep.
 * @throws the first error once every drive has settled (each logged), so the schedule's retries
 * and failure queue see it.
 */
export async function driveTerminationSweep(
  deps: TerminationSweepDeps,
): Promise<readonly TerminationResult[]> {
  const names = await deps.terminatingNodeClaims();
  const results: TerminationResult[] = [];
  const errors: unknown[] = [];
  await Promise.all(
    names.map(async (name) => {
      try {
        results.push(await driveTermination(deps, name, false));
      } catch (error) {
        deps.logger.error('termination failed', { error, nodeClaim: name });
        errors.push(error);
      }
    }),
  );
  if (errors.length > 0) throw errors[0];
  return results;
}
