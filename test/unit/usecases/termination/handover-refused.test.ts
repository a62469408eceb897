// controller's own test: the NodeClaims are given the status the interruption controller reads.
import { describe, expect, it } from 'vitest';
import { QueueSendError } from '../../../../shared/ports/errors.ts';
import { describeTerminationRequest, type TerminationQueue } from '../../../../shared/ports/work-queue.ts';
import { deleteCandidates } from '../../../../shared/usecases/disruption/effects.ts';
import {
  handleInterruption,
  indexNodeClaims,
} from '../../../../shared/usecases/interruption/interruption.ts';
import { sweepTerminations } from '../../../../shared/usecases/termination/node-deletion.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// Every controller hands a NodeClaim it deleted to termination the same way: a termination queue
// that refuses the message leaves the drain to the termination sweep, which finds every deleting
// NodeClaim, and the controller's step goes on (its next NodeClaim, its Events, its decision). On
// the in-memory cluster and cloud, with a queue that answers every send as SQS does when it refuses.

/** A termination queue that refuses every message, counting the attempts. */
function refusingQueue(): TerminationQueue & { readonly attempts: string[] } {
  const attempts: string[] = [];
  return {
    attempts,
    async enqueue(request) {
      const named = describeTerminationRequest(request);
      attempts.push('nodeClaim' in request ? request.nodeClaim : named);
      throw new QueueSendError(`termination queue refused the request for ${named}`);
    },
  };
}

async function world(names: readonly string[]) {
  const w = memoryWorld('c', new Date('2026-12-02T00:00:00Z'));
  const instances = new Map<string, string>();
  for (const name of names) {
    const { instanceId, providerId } = w.instance(name);
    await w.memory.createNodeClaim(newNodeClaim(name));
    await w.memory.patchNodeClaimStatus(name, { providerId, conditions: [] });
    instances.set(name, instanceId);
  }
  const sweep = async () =>
    (await sweepTerminations({ cluster: w.memory, cloud: w.cloud, logger: w.logger, metrics: w.metrics }))
      .terminating;
  return {
    cluster: w.memory,
    cloud: w.cloud,
    logger: w.logger,
    metrics: w.metrics,
    lines: w.lines,
    instances,
    sweep,
  };
}

const refusedLines = (lines: readonly Record<string, unknown>[]) =>
  lines.filter((l) => l['message'] === 'termination request not sent');

describe('a termination queue that refuses the handover', () => {
  it('leaves an interrupted NodeClaim deleted, its decision written and its drain to the sweep', async () => {
    const w = await world(['web-1']);
    const queue = refusingQueue();
    const outcomes = await handleInterruption(
      {
        cluster: w.cluster,
        cloud: w.cloud,
        terminationQueue: queue,
        logger: w.logger,
        metrics: w.metrics,
        reportDeletion: async () => {},
      },
      { kind: 'spotInterruption', eventId: 'e1', instanceIds: [w.instances.get('web-1') ?? ''] },
      await indexNodeClaims(w.cluster),
    );

    expect(outcomes).toEqual([expect.objectContaining({ nodeClaim: 'web-1', action: 'cordonAndDrain' })]);
    expect(queue.attempts).toEqual(['web-1']);
    expect((await w.cluster.nodeClaim('web-1'))?.deleting).toBe(true);
    expect(refusedLines(w.lines)).toEqual([
      expect.objectContaining({ level: 'warn', nodeClaim: 'web-1', fallback: 'termination sweep' }),
    ]);
    expect(w.lines.filter((l) => l['decision'] === 'handleInterruption')).toEqual([
      expect.objectContaining({ action: 'cordonAndDrain', handedOver: 'termination sweep' }),
    ]);
    expect(await w.sweep()).toEqual(['web-1']);
  });

  it('lets disruption delete every candidate of a command, each left to the sweep', async () => {
    const w = await world(['old-1', 'old-2']);
    const queue = refusingQueue();
    const claims = (await w.cluster.nodeClaims()).items;

    await deleteCandidates(
      { cluster: w.cluster, terminationQueue: queue, requestLaunch: async () => {}, logger: w.logger },
      claims,
      'Underutilized',
    );

    expect(queue.attempts).toEqual(['old-1', 'old-2']);
    for (const name of ['old-1', 'old-2']) expect((await w.cluster.nodeClaim(name))?.deleting).toBe(true);
    expect(refusedLines(w.lines).map((l) => l['nodeClaim'])).toEqual(['old-1', 'old-2']);
    expect([...(await w.sweep())].sort()).toEqual(['old-1', 'old-2']);
  });
});
