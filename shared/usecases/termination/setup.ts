import type { Clock } from '../../ports/clock.ts';
import type { TerminationQueue } from '../../ports/work-queue.ts';
import type { TerminationSweepDeps } from './driver.ts';
import { sweepTerminations, type TerminationPorts, terminateNodeClaim } from './termination.ts';

// The termination Lambda's set-up: its ports and settings in, what its drive loop runs out (passes
// over a NodeClaim at the clock's time, the hand-on through the termination queue, the sweep's
// NodeClaims). The Lambda's handler builds the ports from AWS and the API server, the simulator
// from the in-memory twins with a sleep on virtual time, the tests from the real adapters.

/** How long one invocation keeps passing over a NodeClaim: well inside the function's 2-minute timeout. */
export const TERMINATION_BUDGET_MS = 60_000;

/** What the termination Lambda works with. */
export interface TerminationSetupPorts extends TerminationPorts {
  /** Where the rest of a termination goes for a later invocation. */
  readonly terminationQueue: TerminationQueue;
  readonly clock: Clock;
  /** Waits between passes (on the clock's time). */
  readonly sleep: (ms: number) => Promise<void>;
}

export interface TerminationConfig {
  /** How long one invocation keeps passing over a NodeClaim, in milliseconds. @default TERMINATION_BUDGET_MS */
  readonly budgetMs?: number;
}

export function setUpTermination(
  ports: TerminationSetupPorts,
  config: TerminationConfig = {},
): TerminationSweepDeps {
  const { cluster, cloud, logger, metrics, clock, terminationQueue } = ports;
  const passPorts: TerminationPorts = { cluster, cloud, logger, metrics };
  return {
    logger,
    metrics,
    terminate: (name) => terminateNodeClaim(passPorts, name, clock.now()),
    enqueue: (nodeClaim, delaySeconds) => terminationQueue.enqueue({ nodeClaim }, delaySeconds),
    terminatingNodeClaims: async () => (await sweepTerminations(passPorts)).terminating,
    sleep: ports.sleep,
    nowMs: () => clock.now().getTime(),
    budgetMs: config.budgetMs ?? TERMINATION_BUDGET_MS,
  };
}
