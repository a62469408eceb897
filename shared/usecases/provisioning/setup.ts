import type { NodeClassResolver } from '../../ports/cloud.ts';
import type { WakeUps } from '../../ports/wake-ups.ts';
import { type LifecycleResult, reconcileLifecycle } from '../lifecycle/lifecycle.ts';
import { type DeletionRelay, relayDeletions } from '../termination/handover.ts';
import type { ProvisionerDriverDeps } from './driver.ts';
import { provision } from './provision.ts';
import type { ProvisionOptions, ProvisionPorts } from './types.ts';

// The provisioner Lambda's set-up: its ports and settings in, the invocation's work out (what the
// driver runs: a provisioning run, then the controllers pass). The Lambda's handler builds the
// ports from AWS and the API server, the simulator from the in-memory twins, the end-to-end tests
// from the real adapters; all three run what this returns.

/** What the provisioner Lambda works with. */
export interface ProvisionerPorts extends ProvisionPorts {
  /** Resolves EC2NodeClasses (AMIs, subnets, security groups, instance profile). */
  readonly nodeClassResolver: NodeClassResolver;
  /** Delayed follow-ups while NodeClaims initialize; absent, the pending-pods schedule is the next chance. */
  readonly scheduleFollowUp?: ProvisionerDriverDeps['scheduleFollowUp'];
  /** Where the deletions the shim reports go on to termination; absent, the termination sweep finds them. */
  readonly relayDeletion?: DeletionRelay;
  /** The NodePools' wake-ups, armed by the controllers pass. @default none */
  readonly wakeUps?: WakeUps;
}

/**
 * The provisioner's settings: every provisioning option but those of one invocation (its holder,
 * its trigger's `consistentResume` and `podEventAtMs`).
 */
export type ProvisionerConfig = Omit<ProvisionOptions, 'holder' | 'podEventAtMs' | 'consistentResume'>;

/** What one provisioner invocation runs, and the controllers pass on its own. */
export interface Provisioner extends ProvisionerDriverDeps {
  readonly provision: ProvisionerDriverDeps['provision'];
  /** The controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools) under `holder` at `now`. */
  readonly controllersPass: (holder: string, now: Date) => Promise<LifecycleResult>;
}

const NOTHING_RECONCILED: LifecycleResult = {
  registered: [],
  initialized: [],
  deleted: [],
  waiting: [],
  nodePoolsUpdated: [],
  uninitialized: [],
};

/**
 * Composes the provisioner: provisioning (a run a queue message triggered reads the NodeClaims to
 * launch consistently), the controllers pass after it, and the follow-ups when given. A shadow
 * provisioner (`config.shadow`, over ports that write nothing) only provisions.
 */
export function setUpProvisioner(ports: ProvisionerPorts, config: ProvisionerConfig = {}): Provisioner {
  const {
    cluster,
    logger,
    metrics,
    clock,
    leases,
    nodeClassResolver,
    requestTermination,
    scheduleFollowUp,
    relayDeletion,
  } = ports;
  // A shadow stack runs no controller: each of them only writes what the live autoscaler owns.
  const controllersPass = (holder: string, now: Date): Promise<LifecycleResult> =>
    config.shadow === true
      ? Promise.resolve(NOTHING_RECONCILED)
      : reconcileLifecycle(
          {
            cluster,
            logger,
            metrics,
            nodeClasses: {
              resolver: nodeClassResolver,
              leases,
              clock,
              holder,
              ...(config.nodeClassRefreshSeconds === undefined
                ? {}
                : { refreshSeconds: config.nodeClassRefreshSeconds }),
            },
            // Karpenter runs its NodeOverlay controller only with the NodeOverlay gate on.
            ...(config.nodeOverlay === true ? { nodeOverlays: { cloud: ports.cloud } } : {}),
            ...(config.runawayGuard === false ? { runawayGuard: false } : {}),
            instanceNames: ports.cloud,
            ...(requestTermination === undefined ? {} : { requestTermination }),
            ...(ports.wakeUps === undefined ? {} : { wakeUps: ports.wakeUps }),
          },
          now,
        );
  return {
    logger,
    metrics,
    clock,
    provision: (holder, trigger, podEventAtMs) =>
      provision(config.shadow === true ? unresolving(ports) : ports, {
        ...config,
        holder,
        consistentResume: trigger === 'queue',
        ...(podEventAtMs === undefined ? {} : { podEventAtMs }),
      }),
    ...(config.shadow === true
      ? {}
      : { reconcileLifecycle: (holder: string) => controllersPass(holder, clock.now()) }),
    controllersPass,
    ...(scheduleFollowUp === undefined || config.shadow === true ? {} : { scheduleFollowUp }),
    // A shadow stack has no termination: the live autoscaler drains what users delete.
    ...(relayDeletion === undefined || config.shadow === true
      ? {}
      : { relayDeletions: (deletions) => relayDeletions(relayDeletion, deletions, logger) }),
  };
}

/**
 * A shadow run's ports: without the NodeClass resolver, a run resolves no EC2NodeClass (writing
 * its status is the live autoscaler's, and the instance profiles it may make are IAM writes): it
 * launches, as the live one would, with the status the live autoscaler keeps.
 */
function unresolving(ports: ProvisionerPorts): ProvisionPorts {
  const { nodeClassResolver: _resolvedByTheLiveAutoscaler, ...rest } = ports;
  return rest;
}
