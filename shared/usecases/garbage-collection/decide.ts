import { NodeClaimConditionType, parseInstanceId, trueSinceMs } from '../../core/index.ts';
import type { CloudInstance } from '../../ports/cloud.ts';
import type { ClusterNodeClaim, NodeInfo, UnreadableNodeClaim } from '../../ports/cluster.ts';

// Garbage collection as a pure function of one reading of the cloud and the cluster, as Karpenter's
// two collectors: instances Flotilla launched that no NodeClaim accounts for are terminated, and
// NodeClaims whose instance is gone are deleted. garbage-collection.ts reads and applies.

/** An instance younger than this is never an orphan: its NodeClaim may not be readable yet. */
export const ORPHAN_MIN_AGE_MS = 30_000;

/** What garbage collection does, one value per action. */
export type CollectionStep =
  | {
      /** Terminate an instance no NodeClaim points to, and delete its Node when it has one. */
      readonly kind: 'terminateOrphan';
      readonly instance: CloudInstance;
      readonly ageMs: number;
      readonly nodeName?: string;
    }
  | {
      /**
       * The NodeClaim's instance is not among the live ones: confirm by its id (the list may lag)
       * and, when it is gone, delete the NodeClaim (termination then removes its Node).
       */
      readonly kind: 'confirmGone';
      readonly claim: ClusterNodeClaim;
      readonly instanceId: string;
    };

export interface CollectionInput {
  /** Every live instance tagged for this cluster and a NodePool (read before the cluster). */
  readonly instances: readonly CloudInstance[];
  readonly claims: readonly ClusterNodeClaim[];
  readonly nodes: readonly NodeInfo[];
  readonly nowMs: number;
  /** How long after launch EC2 may still not list an instance (INSTANCE_LOOKUP_WINDOW_MS). */
  readonly lookupWindowMs: number;
  /**
   * NodeClaims that could not be read: no instance one of them could own is taken for an orphan
   * (one tagged with its name, or with the instance id of its providerID; while one's providerID
   * cannot be read either, also any instance without a NodeClaim tag). The others are collected.
   */
  readonly unreadableNodeClaims?: readonly Pick<UnreadableNodeClaim, 'name' | 'providerId'>[];
}

/** Whether an instance could be the instance of one of the NodeClaims that could not be read. */
function mayBeOwnedByUnreadable(
  instance: CloudInstance,
  unreadable: readonly Pick<UnreadableNodeClaim, 'name' | 'providerId'>[],
): boolean {
  return unreadable.some(
    (claim) =>
      instance.nodeClaimName === claim.name ||
      (claim.providerId === undefined
        ? instance.nodeClaimName === undefined
        : parseInstanceId(claim.providerId) === instance.instanceId),
  );
}

/** Epoch ms of the claim's `Launched=True` transition, else its creation. */
function launchedAtMs(claim: ClusterNodeClaim): number | undefined {
  return trueSinceMs(claim.status.conditions, NodeClaimConditionType.launched) ?? claim.createdAtMs;
}

/**
 * The collection steps for one reading. An instance is an orphan when it is not shutting down, is
 * older than ORPHAN_MIN_AGE_MS, and no NodeClaim (deleting ones included) has its id in
 * `status.providerID` or the name in its `karpenter.sh/nodeclaim` tag. A NodeClaim is checked
 * when it names an instance that is not live, launched longer ago than the lookup window, is not
 * being deleted already, and its Node (if any) is not Ready. Only instances in `instances` (this
 * cluster's, by tag) are ever touched.
 */
export function decideCollection(input: CollectionInput): CollectionStep[] {
  const { nowMs } = input;
  const claimNames = new Set(input.claims.map((c) => c.name));
  const claimedIds = new Set(input.claims.flatMap((c) => parseInstanceId(c.status.providerId) ?? []));
  const nodeByInstance = new Map(
    input.nodes.flatMap((n) => {
      const id = parseInstanceId(n.providerId);
      return id === undefined ? [] : [[id, n] as const];
    }),
  );
  const steps: CollectionStep[] = [];
  const unreadable = input.unreadableNodeClaims ?? [];
  for (const instance of input.instances) {
    if (instance.state === 'shutting-down' || instance.state === 'terminated') continue;
    if (mayBeOwnedByUnreadable(instance, unreadable)) continue;
    if (claimedIds.has(instance.instanceId)) continue;
    if (instance.nodeClaimName !== undefined && claimNames.has(instance.nodeClaimName)) continue;
    const launchMs = instance.launchTime?.getTime();
    // Without a launch time the age is unknown: wait for a reading that has one.
    if (launchMs === undefined || nowMs - launchMs < ORPHAN_MIN_AGE_MS) continue;
    const node = nodeByInstance.get(instance.instanceId);
    steps.push({
      kind: 'terminateOrphan',
      instance,
      ageMs: nowMs - launchMs,
      ...(node === undefined ? {} : { nodeName: node.name }),
    });
  }
  const live = new Set(input.instances.map((i) => i.instanceId));
  for (const claim of input.claims) {
    if (claim.deleting) continue;
    const instanceId = parseInstanceId(claim.status.providerId);
    if (instanceId === undefined || live.has(instanceId)) continue;
    const launchedMs = launchedAtMs(claim);
    if (launchedMs === undefined || nowMs - launchedMs < input.lookupWindowMs) continue;
    const node = nodeByInstance.get(instanceId);
    if (node?.ready === true) continue;
    steps.push({ kind: 'confirmGone', claim, instanceId });
  }
  return steps;
}
