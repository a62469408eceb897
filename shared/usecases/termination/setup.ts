import { Finalizer } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { TerminationQueue, TerminationRequest } from '../../ports/work-queue.ts';
import type { ResolvedRequest, TerminationSweepDeps } from './driver.ts';
import {
  NodeClaimReads,
  startNodeTermination,
  sweepTerminations,
  terminationUnderWay,
} from './node-deletion.ts';
import { type TerminationPorts, terminateNodeClaim } from './termination.ts';

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
    resolve: (request) => resolveRequest(passPorts, request),
    sleep: ports.sleep,
    nowMs: () => clock.now().getTime(),
    budgetMs: config.budgetMs ?? TERMINATION_BUDGET_MS,
  };
}

/**
 * The NodeClaim a termination request comes to: the one it names, unless it was relayed from the
 * shim's report and that NodeClaim's termination is already under way; for a Node, its NodeClaim
 * once the Node's termination has started (node-deletion.ts).
 */
async function resolveRequest(
  ports: TerminationPorts,
  request: TerminationRequest,
): Promise<ResolvedRequest> {
  if (!('node' in request)) {
    if (request.relayed === true && (await terminationUnderWay(ports.cluster, request.nodeClaim))) {
      return { none: 'its termination is under way' };
    }
    return { nodeClaim: request.nodeClaim };
  }
  const node = await ports.cluster.node(request.node);
  if (node === undefined) return { none: 'the Node is gone' };
  // A report of a Node that is not being deleted costs no NodeClaim read.
  if (!node.deleting || !node.finalizers.includes(Finalizer.termination)) {
    return { none: 'not a deleting Node with the termination finalizer' };
  }
  const claims = new NodeClaimReads(ports.cluster, await ports.cluster.nodeClaims());
  const start = await startNodeTermination(ports, node, claims);
  switch (start.kind) {
    case 'nodeClaim':
      // A NodeClaim deleted before its Node (termination deletes the Node last) has its own drive.
      if (!start.deletedNow && (await terminationUnderWay(ports.cluster, start.nodeClaim))) {
        return { none: 'its NodeClaim is being terminated already' };
      }
      return { nodeClaim: start.nodeClaim };
    case 'instance':
      return { none: 'the Node has no NodeClaim; its instance is terminating' };
    case 'released':
      return { none: 'the Node has no NodeClaim and no instance; it was released' };
    case 'none':
      return { none: start.why };
  }
}
