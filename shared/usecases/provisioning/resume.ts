import { type InstanceType, Label } from '../../core/index.ts';
import type { EC2NodeClass, LaunchRequest } from '../../ports/cloud.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { Lease } from '../../ports/lease.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { readLaunchRecord } from '../state/launch-record.ts';
import { MIN_VALUES_RELAXED_ANNOTATION } from '../state/new-nodeclaim.ts';
import { isUnlaunched, type LaunchPorts, launchCreated, launchDecision } from './launch.ts';
import { launchStandalone } from './standalone.ts';
import type { ClaimOutcome } from './types.ts';

// Resuming NodeClaims that exist but have no instance: a NodePool's, from its plan's candidates,
// and standalone ones, from their own class (standalone.ts).

/**
 * Launches the NodeClaims an earlier run created but never launched (it crashed or timed out
 * between the create and the launch). The scheduler counts pods on them, so nothing else would
 * launch for those pods. A claim whose launch was recorded sends that same record again, so a
 * launch that did happen is answered with its instance rather than repeated. Standalone NodeClaims
 * are launched after them (launchStandalone).
 */
export async function resumeUnlaunched(
  ports: LaunchPorts,
  out: DecisionOutput,
  lease: Lease,
  claims: readonly ClusterNodeClaim[],
  pools: ReadonlyMap<string, ClusterNodePool>,
  classes: ReadonlyMap<string, EC2NodeClass>,
  typesByClass: ReadonlyMap<string, readonly InstanceType[]>,
): Promise<ClaimOutcome[]> {
  const resumed: ClaimOutcome[] = [];
  for (const claim of claims) {
    // A standalone NodeClaim launches from its own class (standalone.ts).
    if (!isUnlaunched(claim) || claim.nodePoolName === undefined) continue;
    const pool = pools.get(claim.nodePoolName);
    const nodeClass = pool === undefined ? undefined : classes.get(pool.nodeClassRef.name);
    if (pool === undefined || nodeClass === undefined) continue;
    const byName = new Map((typesByClass.get(nodeClass.name) ?? []).map((t) => [t.name, t]));
    const allowed =
      claim.requirements.find((r) => r.key === Label.instanceType && r.operator === 'In')?.values ?? [];
    const request: LaunchRequest = {
      nodeClaimName: claim.name,
      nodePoolName: claim.nodePoolName,
      nodeClass,
      instanceTypes: allowed.flatMap((n) => {
        const type = byName.get(n);
        return type === undefined ? [] : [type];
      }),
      requirements: claim.requirements,
      labels: claim.labels,
      taints: claim.taints,
      startupTaints: claim.startupTaints,
      requests: claim.requests,
    };
    const base = { nodeClaim: claim.name, nodePool: claim.nodePoolName, pods: [] };
    const read = readLaunchRecord(claim);
    const outcome: ClaimOutcome =
      read.kind === 'malformed'
        ? // A launch may have been sent and cannot be replayed: the launch timeout and termination's
          // instance lookup settle it.
          { kind: 'failed', ...base, error: `its launch record cannot be read (${read.problem})` }
        : read.kind === 'none' && request.instanceTypes.length === 0
          ? {
              kind: 'failed',
              ...base,
              error: "none of the NodeClaim's instance types is offered for the NodeClass",
            }
          : await launchCreated(
              ports,
              lease,
              request,
              [...byName.values()],
              pool.pool.labels ?? {},
              base,
              read.kind === 'recorded' ? read.record : undefined,
            );
    const relaxed = claim.annotations[MIN_VALUES_RELAXED_ANNOTATION] === 'true';
    writeDecision(out, launchDecision(lease, 0, request, outcome, 'resumed', relaxed));
    resumed.push(outcome);
    if (outcome.kind === 'fenced') return resumed;
  }
  return [...resumed, ...(await launchStandalone(ports, out, lease, claims))];
}
