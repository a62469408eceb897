import type { Logger } from '../runtime/logger.ts';
import { type PodName, writeDecision } from './decision.ts';
import type { ProvisionPorts } from './provision-types.ts';

/**
 * Karpenter's batcher, by polling: after the first read, keep re-reading while new pods keep
 * appearing within `idleMs`, for at most `maxMs`. Writes the batch decision (why it closed).
 */
export async function batchPods(
  ports: Pick<ProvisionPorts, 'cluster' | 'clock' | 'sleep'>,
  logger: Logger,
  idleMs: number,
  maxMs: number,
): Promise<{ pods: number }> {
  const seen = new Map<string, PodName>(
    (await ports.cluster.provisionablePods()).items.map((p) => [p.uid, p]),
  );
  if (seen.size === 0) return { pods: 0 };
  const start = ports.clock.now().getTime();
  let closedBy: 'idle' | 'max' = 'idle';
  for (;;) {
    const left = maxMs - (ports.clock.now().getTime() - start);
    if (left <= 0) {
      closedBy = 'max';
      break;
    }
    const wait = Math.min(idleMs, left);
    await ports.sleep(wait);
    let added = 0;
    for (const pod of (await ports.cluster.provisionablePods()).items) {
      if (!seen.has(pod.uid)) {
        seen.set(pod.uid, pod);
        added += 1;
      }
    }
    if (added === 0) {
      // A wait cut short by the max window ended the batch as much as the quiet did.
      if (wait < idleMs) closedBy = 'max';
      break;
    }
  }
  writeDecision(logger, {
    kind: 'batch',
    reason: closedBy,
    pods: [...seen.values()],
    durationMs: ports.clock.now().getTime() - start,
    batchIdleMs: idleMs,
    batchMaxMs: maxMs,
  });
  return { pods: seen.size };
}
