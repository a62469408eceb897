import type { Clock } from '../../ports/clock.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type NodeRepairPorts, type NodeRepairResult, repairNodes } from '../node-repair/repair.ts';
import {
  collectGarbage,
  type GarbageCollectionPorts,
  type GarbageCollectionResult,
} from './garbage-collection.ts';

// The garbage-collector Lambda's set-up: its ports and settings in, what one invocation runs out
// (the garbage-collection pass and, with node repair on, the repair pass, both at the clock's
// time). The Lambda's handler builds the ports from AWS and the API server, the simulator from the
// in-memory twins, the tests from the real adapters.

/** What the garbage collector works with. */
export interface GarbageCollectorPorts extends GarbageCollectionPorts {
  readonly clock: Clock;
  /** The instances EC2 reports impaired (node repair); absent, only Node conditions count. */
  readonly impairedInstances?: NodeRepairPorts['impairedInstances'];
  /** The running invocation's deadline less a margin (epoch ms), when it has one. */
  readonly deadlineMs?: () => number | undefined;
}

export interface GarbageCollectorConfig {
  /** Node repair on the garbage-collection schedule (the stack's `nodeRepair`). */
  readonly nodeRepair: boolean;
}

/** What one garbage-collector invocation runs. */
export interface GarbageCollector {
  readonly logger: Logger;
  readonly pass: () => Promise<GarbageCollectionResult>;
  /** The node-repair pass, when node repair is on. */
  readonly repair?: () => Promise<NodeRepairResult>;
}

export function setUpGarbageCollector(
  ports: GarbageCollectorPorts,
  config: GarbageCollectorConfig,
): GarbageCollector {
  const { cluster, cloud, logger, metrics, clock, requestTermination, impairedInstances, deadlineMs } = ports;
  const handOver = requestTermination === undefined ? {} : { requestTermination };
  const deadline =
    deadlineMs === undefined ? {} : { deadline: { deadlineMs, nowMs: () => clock.now().getTime() } };
  return {
    logger,
    pass: () => collectGarbage({ cluster, cloud, logger, metrics, ...handOver, ...deadline }, clock.now()),
    // Repair rides the garbage-collection schedule: it reads the same Nodes and NodeClaims, needs
    // no lease and no pending pods, and keeps DescribeInstanceStatus off the provisioner's path.
    ...(config.nodeRepair
      ? {
          repair: () =>
            repairNodes(
              {
                cluster,
                logger,
                metrics,
                ...handOver,
                ...(impairedInstances === undefined ? {} : { impairedInstances }),
              },
              clock.now(),
            ),
        }
      : {}),
  };
}
