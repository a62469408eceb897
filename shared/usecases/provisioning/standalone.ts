import {
  computeAllocatable,
  Finalizer,
  fitsResources,
  INSTANCE_TYPE_LABEL_KEYS,
  type InstanceType,
  Label,
  NodeClassConditionType,
  OFFERING_LABEL_KEYS,
  Requirements,
} from '../../core/index.ts';
import { type EC2NodeClass, type LaunchRequest, nodeClassNotReady } from '../../ports/cloud.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Lease } from '../../ports/lease.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { readLaunchRecord } from '../state/launch-record.ts';
import {
  discardUnlaunched,
  isUnlaunched,
  type LaunchPorts,
  launchCreated,
  launchDecision,
} from './launch.ts';
import type { ClaimOutcome } from './types.ts';

// Standalone NodeClaims: made by a user outside every NodePool (no `karpenter.sh/nodepool` label),
// of an EC2NodeClass. Each is launched as Karpenter's lifecycle launches one: the termination
// finalizer first, then one launch over the class's instance types that satisfy the NodeClaim's
// requirements and fit its resource requests, cheapest offerings first (the launch plan's order).

/** A NodeClaim's requirements, read (they were checked when the NodeClaim was read). */
function requirementsOf(claim: Pick<ClusterNodeClaim, 'name' | 'requirements'>): Requirements {
  return Requirements.parse(claim.requirements, {
    object: `nodeClaim "${claim.name}"`,
    field: 'spec.requirements',
  });
}

/**
 * Pure: the class's instance types a standalone NodeClaim may launch as: every requirement on a key
 * the instance type decides admits the type's value (zone and capacity type are the launch's to
 * choose among offerings; other keys become the node's labels), and the type's allocatable holds
 * `spec.resources.requests`.
 */
export function standaloneInstanceTypes(
  claim: Pick<ClusterNodeClaim, 'name' | 'requirements' | 'requests'>,
  types: readonly InstanceType[],
): InstanceType[] {
  const requirements = [...requirementsOf(claim).values()].filter(
    (r) => INSTANCE_TYPE_LABEL_KEYS.has(r.key) && !OFFERING_LABEL_KEYS.has(r.key),
  );
  return types.filter(
    (type) =>
      requirements.every((r) => r.admits(type.labels[r.key])) &&
      fitsResources(claim.requests, computeAllocatable(type)),
  );
}

/** Pure: the labels a standalone NodeClaim's node registers with: its single values, then its own labels. */
function standaloneLabels(claim: ClusterNodeClaim, nodeClass: EC2NodeClass): Record<string, string> {
  const single = requirementsOf(claim).singleValuedLabels();
  for (const key of OFFERING_LABEL_KEYS) delete single[key];
  return { ...single, ...claim.labels, [Label.nodeClass]: nodeClass.name };
}

/**
 * Launches the standalone NodeClaims that have no instance yet, under the lease, each with a
 * decision (reason `standalone`). Reads the EC2NodeClasses only when there is one to launch. As in
 * Karpenter, one whose class is not resolved yet waits, and one whose class is missing or not
 * ready (Ready=False), or that no instance type can take, is deleted with a Warning Event (unless
 * a launch was recorded for it: that one may have an instance, and the launch timeout and
 * termination's instance lookup settle it). One NodeClaim's failure is its own: it is the
 * decision's `failed` outcome, and the others go on.
 */
export async function launchStandalone(
  ports: LaunchPorts,
  out: DecisionOutput,
  lease: Lease,
  claims: readonly ClusterNodeClaim[],
): Promise<ClaimOutcome[]> {
  const waiting = claims.filter((c) => c.nodePoolName === undefined && isUnlaunched(c));
  if (waiting.length === 0) return [];
  const classesRead = await ports.cluster.nodeClasses();
  const classes = new Map(classesRead.items.map((c) => [c.name, c]));
  const outcomes: ClaimOutcome[] = [];
  for (const claim of waiting) {
    const nodeClass = classes.get(claim.nodeClassRef.name);
    let request: LaunchRequest | undefined;
    const outcome = await (async (): Promise<ClaimOutcome> => {
      const base = { nodeClaim: claim.name, pods: [] };
      try {
        // A class that could not be read may be this one: nothing is taken for absent.
        if (nodeClass === undefined && classesRead.problems.length > 0) {
          const error = `EC2NodeClass "${claim.nodeClassRef.name}" may be among those that cannot be read`;
          return { kind: 'failed', ...base, error };
        }
        const types = nodeClass === undefined ? [] : await ports.cloud.instanceTypes(nodeClass);
        request =
          nodeClass === undefined
            ? undefined
            : {
                nodeClaimName: claim.name,
                nodeClass,
                instanceTypes: standaloneInstanceTypes(claim, types),
                requirements: claim.requirements,
                labels: standaloneLabels(claim, nodeClass),
                taints: claim.taints,
                startupTaints: claim.startupTaints,
                requests: claim.requests,
              };
        return await launchOne(ports, lease, claim, nodeClass, request, types);
      } catch (error) {
        return { kind: 'failed', ...base, error: error instanceof Error ? error.message : String(error) };
      }
    })();
    const asked = request ?? {
      nodeClaimName: claim.name,
      instanceTypes: [],
      requirements: claim.requirements,
    };
    writeDecision(out, launchDecision(lease, 0, asked, outcome, 'standalone', false));
    outcomes.push(outcome);
    if (outcome.kind === 'fenced') break;
  }
  return outcomes;
}

async function launchOne(
  ports: LaunchPorts,
  lease: Lease,
  claim: ClusterNodeClaim,
  nodeClass: EC2NodeClass | undefined,
  request: LaunchRequest | undefined,
  types: readonly InstanceType[],
): Promise<ClaimOutcome> {
  const { cluster } = ports;
  const base = { nodeClaim: claim.name, pods: [] };
  const read = readLaunchRecord(claim);
  if (read.kind === 'malformed') {
    return { kind: 'failed', ...base, error: `its launch record cannot be read (${read.problem})` };
  }
  const recorded = read.kind === 'recorded' ? read.record : undefined;
  // Nothing it could launch as: removed, as Karpenter removes it, unless a launch was sent.
  const refuse = async (reason: string, message: string): Promise<ClaimOutcome> => {
    await cluster.recordEvent({
      subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
      type: 'Warning',
      reason,
      message: `NodeClaim ${claim.name} event: ${message}`,
    });
    if (recorded !== undefined) return { kind: 'failed', ...base, error: message };
    await ignoreNotFound(discardUnlaunched(ports, claim.name));
    return reason === 'NodeClassNotReady'
      ? { kind: 'failed', ...base, error: message, failureReason: 'NodeClassNotReady' }
      : { kind: 'insufficientCapacity', ...base, offerings: [] };
  };
  if (nodeClass === undefined || request === undefined) {
    const name = claim.nodeClassRef.name;
    return refuse('InsufficientCapacityError', `resolving node class, EC2NodeClass "${name}" not found`);
  }
  // Not resolved yet (a class just applied): it waits for the EC2NodeClass controller, as
  // Karpenter's launch waits while the class's readiness is unknown.
  const ready = nodeClass.status?.conditions.find((c) => c.type === NodeClassConditionType.ready);
  if (ready === undefined || ready.status === 'Unknown') {
    return { kind: 'failed', ...base, error: `EC2NodeClass "${nodeClass.name}" is not resolved yet` };
  }
  const notReady = nodeClassNotReady(nodeClass);
  if (notReady !== undefined) {
    return refuse('NodeClassNotReady', `EC2NodeClass "${nodeClass.name}" is not ready: ${notReady}`);
  }
  if (request.instanceTypes.length === 0 && recorded === undefined) {
    return refuse(
      'InsufficientCapacityError',
      `none of the ${types.length} instance types of EC2NodeClass "${nodeClass.name}" satisfies the requirements and fits the requests`,
    );
  }
  // Termination must find the instance: the finalizer is on before anything is launched, with the
  // labels its requirements fix (Karpenter's PopulateNodeClaimDetails), so registration syncs them.
  const labels = Object.fromEntries(
    Object.entries(request.labels).filter(([key]) => claim.labels[key] === undefined),
  );
  if (!claim.finalizers.includes(Finalizer.termination) || Object.keys(labels).length > 0) {
    const patched = await ignoreNotFound(
      cluster
        .patchNodeClaimMetadata(claim.name, {
          ...(claim.finalizers.includes(Finalizer.termination)
            ? {}
            : { addFinalizers: [Finalizer.termination] }),
          ...(Object.keys(labels).length === 0 ? {} : { labels }),
        })
        .then(() => true),
    );
    if (patched === undefined) return { kind: 'failed', ...base, error: 'the NodeClaim is gone' };
  }
  return launchCreated(ports, lease, request, types, request.labels, base, recorded, true);
}
