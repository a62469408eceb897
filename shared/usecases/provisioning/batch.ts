import type { Pod } from '../../core/index.ts';
import type { ReadResult } from '../../ports/cluster.ts';
import { type DecisionOutput, type PodName, writeDecision } from '../decisions/decision.ts';
import type { ProvisionPorts } from './types.ts';

/** A closed batch: how many pods it took, and the last read of the provisionable pods. */
export interface Batch {
  readonly pods: number;
  /** The provisionable pods as the poll that closed the batch read them (the ones to plan for). */
  readonly last: ReadResult<Pod>;
}

export interface BatchWindow {
  readonly idleMs: number;
  readonly maxMs: number;
  /**
   * When the pod event that triggered the run was observed (epoch ms): the first idle window
   * counts from it, so only what is left of it is waited.
   */
  readonly eventAtMs?: number;
}

/**
 * Karpenter's batcher, by polling: from a first read that found pods, keep re-reading while new
 * pods keep appearing within `idleMs`, for at most `maxMs`. Writes the batch decision (why it closed).
 */
export async function batchPods(
  ports: Pick<ProvisionPorts, 'cluster' | 'clock' | 'sleep'>,
  out: DecisionOutput,
  first: ReadResult<Pod>,
  window: BatchWindow,
): Promise<Batch> {
  const { idleMs, maxMs } = window;
  const seen = new Map<string, PodName>(first.items.map((p) => [p.uid, p]));
  let last = first;
  if (seen.size === 0) return { pods: 0, last };
  const start = ports.clock.now().getTime();
  // A clock behind the shim's reads as no time passed.
  const sinceEventMs = window.eventAtMs === undefined ? undefined : Math.max(0, start - window.eventAtMs);
  let firstWait: number | undefined = idleMs - Math.min(idleMs, sinceEventMs ?? 0);
  let closedBy: 'idle' | 'max' = 'idle';
  for (;;) {
    const left = maxMs - (ports.clock.now().getTime() - start);
    if (left <= 0) {
      closedBy = 'max';
      break;
    }
    const wanted = firstWait ?? idleMs;
    firstWait = undefined;
    // The event's own idle window already passed on the way here: the first read closes the batch.
    if (wanted <= 0) break;
    const wait = Math.min(wanted, left);
    await ports.sleep(wait);
    last = await ports.cluster.provisionablePods();
    let added = 0;
    for (const pod of last.items) {
      if (!seen.has(pod.uid)) {
        seen.set(pod.uid, pod);
        added += 1;
      }
    }
    if (added === 0) {
      // A wait cut short by the max window ended the batch as much as the quiet did.
      if (wait < wanted) closedBy = 'max';
      break;
    }
  }
  writeDecision(out, {
    kind: 'batch',
    reason: closedBy,
    pods: [...seen.values()],
    durationMs: ports.clock.now().getTime() - start,
    batchIdleMs: idleMs,
    batchMaxMs: maxMs,
    ...(sinceEventMs === undefined ? {} : { sinceEventMs }),
  });
  return { pods: seen.size, last };
}
