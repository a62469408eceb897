import { assertNever } from '../../core/index.ts';
import { type Cloud, INSTANCE_LOOKUP_WINDOW_MS } from '../../ports/cloud.ts';
import type { Cluster, NodeClaimRead } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { writeDecision } from '../decision.ts';
import { handToTermination } from '../termination/handover.ts';
import { type CollectionStep, decideCollection } from './decide.ts';

export { type CollectionStep, decideCollection, ORPHAN_MIN_AGE_MS } from './decide.ts';

/** The ports collectGarbage uses. */
export interface GarbageCollectionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly logger: Logger;
  /** Hands a NodeClaim this pass deleted to termination at once; else the termination sweep finds it. */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
}

/** What one pass did. */
export interface GarbageCollectionResult {
  /** Orphaned instances terminated. */
  readonly terminated: readonly string[];
  /** NodeClaims deleted because their instance is gone. */
  readonly deletedNodeClaims: readonly string[];
  /** Steps that failed (the next pass tries again); the others went on. */
  readonly failed: readonly { readonly step: string; readonly error: unknown }[];
}

/**
 * One garbage-collection pass: reads this cluster's live instances, then the NodeClaims and Nodes
 * (in that order, so an instance launched meanwhile always finds the NodeClaim created before its
 * launch), decides (decideCollection) and applies each step on its own: a step that fails is
 * reported and the others go on. Every action is one decision line.
 * @throws CloudApiError or ClusterApiError when the reading fails.
 */
export async function collectGarbage(
  ports: GarbageCollectionPorts,
  now: Date,
): Promise<GarbageCollectionResult> {
  const { cluster, cloud } = ports;
  const instances = await cloud.list();
  const [nodes, summarized] = await Promise.all([cluster.nodeInfos(), cluster.nodeClaims()]);
  const decide = (read: NodeClaimRead) =>
    decideCollection({
      instances,
      claims: read.items,
      nodes: nodes.items,
      nowMs: now.getTime(),
      lookupWindowMs: INSTANCE_LOOKUP_WINDOW_MS,
      unreadableNodeClaims: read.unreadable,
    });
  let claims = summarized;
  let steps = decide(claims);
  // An orphan is terminated only when the API server itself knows no NodeClaim of it: the
  // NodeClaims may have come from the cluster summary, which can miss one made seconds ago.
  if (steps.some((s) => s.kind === 'terminateOrphan')) {
    claims = await cluster.nodeClaims({ consistent: true });
    steps = decide(claims);
  }
  if (claims.unreadable.length > 0) {
    ports.logger.warn('instances of unreadable NodeClaims spared', {
      why: 'these NodeClaims cannot be read; no instance that may be theirs is taken for an orphan',
      nodeClaims: claims.unreadable.slice(0, 10).map((c) => ({
        name: c.name,
        providerId: c.providerId ?? 'unknown: any instance without a NodeClaim tag is spared too',
        problem: c.problem,
      })),
    });
  }
  const terminated: string[] = [];
  const deletedNodeClaims: string[] = [];
  const failed: { step: string; error: unknown }[] = [];
  for (const step of steps) {
    try {
      const done = await applyStep(ports, step);
      if (done === 'terminated')
        terminated.push(step.kind === 'terminateOrphan' ? step.instance.instanceId : '');
      if (done === 'deleted' && step.kind === 'confirmGone') deletedNodeClaims.push(step.claim.name);
    } catch (error) {
      const what = step.kind === 'terminateOrphan' ? step.instance.instanceId : step.claim.name;
      ports.logger.error('garbage collection step failed', { step: step.kind, subject: what, error });
      failed.push({ step: `${step.kind} ${what}`, error });
    }
  }
  return { terminated, deletedNodeClaims, failed };
}

async function applyStep(
  ports: GarbageCollectionPorts,
  step: CollectionStep,
): Promise<'terminated' | 'deleted' | 'kept'> {
  const { cluster, cloud, logger } = ports;
  switch (step.kind) {
    case 'terminateOrphan': {
      const { instance } = step;
      // delete() refuses an instance without this cluster's ownership tags.
      await cloud.delete(instance.instanceId);
      writeDecision(logger, {
        kind: 'collect',
        reason: 'orphaned instance',
        action: 'terminateInstance',
        instanceId: instance.instanceId,
        instanceState: instance.state,
        ageSeconds: Math.round(step.ageMs / 1000),
        ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
        ...(instance.nodePoolName === undefined ? {} : { nodePool: instance.nodePoolName }),
        ...(step.nodeName === undefined ? {} : { node: step.nodeName }),
      });
      // The Node goes too; should this fail, the Node of a terminated instance is removed by the
      // cloud node lifecycle controller, as any such Node.
      if (step.nodeName !== undefined) await ignoreNotFound(cluster.deleteNode(step.nodeName));
      return 'terminated';
    }
    case 'confirmGone': {
      // The list may lag behind; a read by id is the answer.
      const instance = await cloud.get(step.instanceId);
      if (instance !== undefined && instance.state !== 'terminated') return 'kept';
      await ignoreNotFound(cluster.deleteNodeClaim(step.claim.name));
      const handedOver = await handToTermination(ports.requestTermination, step.claim.name, logger);
      writeDecision(logger, {
        kind: 'collect',
        reason: 'instance gone',
        action: 'deleteNodeClaim',
        instanceId: step.instanceId,
        instanceState: instance?.state ?? 'not found',
        nodeClaim: step.claim.name,
        nodePool: step.claim.nodePoolName,
        ...(step.claim.status.nodeName === undefined ? {} : { node: step.claim.status.nodeName }),
        handedOver,
      });
      return 'deleted';
    }
    default:
      return assertNever(step);
  }
}
