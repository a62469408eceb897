import { type Clock, systemClock } from '../../ports/clock.ts';
import type { InstanceHealthReader } from '../../ports/instance-status.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { InterruptionDriverDeps } from './driver.ts';
import { pollInstanceStatus } from './instance-status.ts';
import {
  handleInterruption,
  type InterruptionOptions,
  type InterruptionPorts,
  indexNodeClaims,
} from './interruption.ts';

// The interruption Lambda's set-up: its ports and settings in, what its batch driver runs out
// (the NodeClaims read once per batch, each event handled). The Lambda's handler builds the ports
// from AWS and the API server, the simulator from the in-memory twins, the tests from the real
// adapters.

/** What the interruption Lambda works with. */
export interface InterruptionSetupPorts extends InterruptionPorts {
  /**
   * Event leases (one invocation at a time acts on an event) in this store, for this cluster, on
   * this clock. Absent: concurrent deliveries may each act (idempotently).
   */
  readonly eventLeases?: { readonly store: LeaseStore; readonly clusterName: string; readonly clock: Clock };
  /** EC2's instance status poll, run on the Lambda's schedule; absent, only events are acted on. */
  readonly readHealth?: InstanceHealthReader;
}

/** The interruption Lambda's settings (the stack's `rebalanceAction`). */
export type InterruptionConfig = InterruptionOptions;

export function setUpInterruption(
  ports: InterruptionSetupPorts,
  config: InterruptionConfig = {},
): InterruptionDriverDeps {
  const { cluster, logger, eventLeases, readHealth } = ports;
  return {
    logger,
    ...(readHealth === undefined
      ? {}
      : {
          pollInstanceStatus: () =>
            pollInstanceStatus(
              { ...ports, readHealth },
              (ports.clock ?? systemClock).now().getTime(),
              config,
            ),
        }),
    indexNodeClaims: () => indexNodeClaims(cluster),
    handle: (message, claims) => handleInterruption(ports, message, claims, config),
    ...(eventLeases === undefined
      ? {}
      : {
          eventLeases: {
            store: eventLeases.store,
            clusterName: eventLeases.clusterName,
            now: () => eventLeases.clock.now(),
          },
        }),
  };
}
