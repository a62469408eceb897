import { Annotation, isConditionTrue, NodeClaimConditionType, parseInstanceId } from '../../core/index.ts';
import type { Cloud } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';

// The instance's `Name` tag follows its node, as Karpenter's AWS tagging controller has it: once a
// NodeClaim is registered, its instance is tagged with the node's name and the NodeClaim annotated
// `karpenter.k8s.aws/tagged: "true"`, so each instance is tagged once (a NodeClaim Karpenter
// tagged before a takeover is already annotated).

/** The most instances one pass tags: an upgrade's untagged fleet is worked through over passes. */
export const NAMES_PER_PASS = 20;

export interface InstanceNamePorts {
  readonly cluster: Pick<Cluster, 'nodeClaim' | 'patchNodeClaimMetadata'>;
  readonly cloud: Pick<Cloud, 'nameInstance'>;
  readonly logger: Logger;
  /** EC2NodeClasses whose `spec.tags` set `Name`: their instances keep it (only annotated). */
  readonly classesNamingInstances?: ReadonlySet<string>;
}

/** Pure: the registered NodeClaims whose instance is not tagged with its node's name yet. */
export function unnamedInstances(
  claims: readonly ClusterNodeClaim[],
): { readonly claim: ClusterNodeClaim; readonly instanceId: string; readonly nodeName: string }[] {
  return claims.flatMap((claim) => {
    const instanceId = parseInstanceId(claim.status.providerId);
    const nodeName = claim.status.nodeName;
    const due =
      !claim.deleting &&
      claim.annotations[Annotation.tagged] !== 'true' &&
      isConditionTrue(claim.status.conditions, NodeClaimConditionType.registered);
    return due && instanceId !== undefined && nodeName !== undefined ? [{ claim, instanceId, nodeName }] : [];
  });
}

/**
 * Tags up to NAMES_PER_PASS instances with their node's name, each then annotated on its
 * NodeClaim. Each is read again from the API server first (the list may be the cluster summary,
 * which the shim's role writes), and tagged as that read says. A failure is logged and left for
 * the next pass (the annotation is written only after the tag); returns the NodeClaims whose
 * instance was named.
 */
export async function nameInstances(
  ports: InstanceNamePorts,
  claims: readonly ClusterNodeClaim[],
): Promise<string[]> {
  const named: string[] = [];
  for (const listed of unnamedInstances(claims).slice(0, NAMES_PER_PASS)) {
    const { claim, instanceId } = listed;
    try {
      const fresh = await ports.cluster.nodeClaim(claim.name);
      const [confirmed] = fresh === undefined ? [] : unnamedInstances([fresh]);
      if (confirmed === undefined || confirmed.instanceId !== instanceId) continue;
      if (ports.classesNamingInstances?.has(confirmed.claim.nodeClassRef.name) !== true) {
        await ports.cloud.nameInstance(confirmed.instanceId, confirmed.nodeName);
      }
      await ignoreNotFound(
        ports.cluster.patchNodeClaimMetadata(claim.name, { annotations: { [Annotation.tagged]: 'true' } }),
      );
      named.push(claim.name);
    } catch (error) {
      ports.logger.warn('instance not tagged with its node name', {
        nodeClaim: claim.name,
        instanceId,
        error,
        retry: 'next controllers pass',
      });
    }
  }
  return named;
}
