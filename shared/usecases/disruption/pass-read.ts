import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';
import type { Lease } from '../../ports/lease.ts';
import {
  buildSchedulingInput,
  type ClusterState,
  readClusterState,
  type SchedulingInput,
} from '../state/cluster-state.ts';
import { withScheduledReplicas } from '../state/scheduled-replicas.ts';
import type { DisruptionOptions, DisruptionPorts } from './pass-options.ts';

// One read of the cluster by a disruption pass: its state limited to the pass's NodePools, those
// NodePools as their schedules hold them now, the EC2NodeClasses and the scheduling input.

export interface PassRead {
  readonly state: ClusterState;
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  readonly input: SchedulingInput | undefined;
}

/** @throws ClusterApiError / CloudApiError / CatalogUnavailableError when state cannot be read. */
export async function readForPass(
  ports: Pick<DisruptionPorts, 'cluster' | 'cloud' | 'logger'>,
  options: Pick<DisruptionOptions, 'nodePools' | 'nodeOverlay' | 'solveOptions'>,
  lease: Pick<Lease, 'previousUntilMs'>,
  now: () => number,
): Promise<PassRead> {
  const readAtMs = now();
  // The NodeClaims as current as the previous pass's end at least: its commands and marks are on
  // them, and a read from before it would take its candidates again.
  const previousUntilMs = lease.previousUntilMs;
  const read = await readClusterState(ports.cluster, ports.logger, {
    podDisruptionBudgets: true,
    nodeOverlays: options.nodeOverlay === true,
    ...(previousUntilMs === undefined || previousUntilMs <= 0
      ? {}
      : { nodeClaimsFreshAsOfMs: previousUntilMs }),
  });
  const mine = options.nodePools ?? (() => true);
  const state: ClusterState = {
    ...read,
    // Standalone NodeClaims are in no NodePool: only a pass over every NodePool expires them.
    nodeClaims: read.nodeClaims.filter((c) =>
      c.nodePoolName === undefined ? options.nodePools === undefined : mine(c.nodePoolName),
    ),
    nodePools: read.nodePools.filter((p) => mine(p.pool.name)),
  };
  const pools = new Map<string, ClusterNodePool>();
  // A static NodePool counts to the replicas its schedules hold it to now.
  for (const p of state.nodePools) pools.set(p.pool.name, withScheduledReplicas(p, readAtMs));
  const classes = new Map<string, EC2NodeClass>();
  for (const c of state.nodeClasses) classes.set(c.name, c);
  const input = await buildSchedulingInput(state, ports.cloud, {
    nowMs: now(),
    // Its Nodes may come from the untrusted summary: learned memory may only lower a type's.
    observedMemory: 'lowerOnly',
    ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
  });
  return { state, pools, classes, input };
}
