import { FlotillaError } from '../../core/errors.ts';
import { describeTerminationRequest } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { MetricsSink } from '../decisions/decision.ts';
import { makeConsolidationMemo } from './consolidated.ts';
import {
  type DisruptionOptions,
  type DisruptionPassResult,
  type DisruptionPorts,
  disrupt,
} from './controller.ts';

// The disruption Lambda's set-up: its ports and settings in, one pass per invocation out. The
// Lambda's handler builds the ports from AWS and the API server (and adds the passes between
// schedule ticks, an SQS matter), the simulator from the in-memory twins, the tests from the real
// adapters; all run the pass this returns.

/** The disruption controller's settings: every pass option but the invocation's holder. */
export type DisruptionConfig = Omit<DisruptionOptions, 'holder'>;

/** What one disruption invocation runs. */
export interface Disruption {
  readonly logger: Logger;
  /** Where the metrics of the decisions the Lambda writes itself go (the passes it asks for). */
  readonly metrics: MetricsSink;
  /** One disruption pass under the given lease holder (the invocation id). */
  readonly pass: (holder: string) => Promise<DisruptionPassResult>;
}

export function setUpDisruption(ports: DisruptionPorts, config: DisruptionConfig = {}): Disruption {
  // One memo for the container's passes (the simulator keeps one for its whole run).
  const consolidationMemo = config.consolidationMemo ?? makeConsolidationMemo();
  return {
    logger: ports.logger,
    metrics: ports.metrics,
    pass: (holder) => disrupt(ports, { ...config, consolidationMemo, holder }),
  };
}

/**
 * A shadow stack's queues: it has none, and its passes never send (they propose, and carry out
 * nothing). Sending anyway is a defect, refused loudly rather than dropped.
 */
export function shadowQueues(): Pick<DisruptionPorts, 'terminationQueue' | 'requestLaunch'> {
  return {
    terminationQueue: {
      enqueue: async (request) => {
        throw new ShadowQueueError(`a termination request for ${describeTerminationRequest(request)}`);
      },
    },
    requestLaunch: async (nodeClaims) => {
      throw new ShadowQueueError(`launches of ${nodeClaims.join(', ')}`);
    },
  };
}

/** A shadow stack's pass tried to send work to a queue. */
export class ShadowQueueError extends FlotillaError {
  readonly code = 'ShadowQueueError';

  constructor(what: string) {
    super(`${what} refused: a shadow stack sends nothing to be done`);
  }
}
