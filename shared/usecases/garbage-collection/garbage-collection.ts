import { assertNever, Label, parseInstanceId } from '../../core/index.ts';
import { type Cloud, type CloudInstance, INSTANCE_LOOKUP_WINDOW_MS } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, NodeClaimRead } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import { handToTermination } from '../termination/handover.ts';
import { type ConsistencyDeadline, decideConsistency, reportConsistency } from './consistency.ts';
import { type CollectionStep, decideCollection } from './decide.ts';

export { type CollectionStep, decideCollection, ORPHAN_MIN_AGE_MS } from './decide.ts';

/** The ports collectGarbage uses. */
export interface GarbageCollectionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /** Hands a NodeClaim this pass deleted to termination at once; else the termination sweep finds it. */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
  /**
   * When the pass must be done (the invocation's deadline less a margin), when it has a deadline:
   * the consistency check's writes stop in time, and the next pass takes up the rest.
   */
  readonly deadline?: ConsistencyDeadline;
}

/** What one pass did. */
export interface GarbageCollectionResult {
  /** Orphaned instances terminated. */
  readonly terminated: readonly string[];
  /** NodeClaims deleted because their instance is gone. */
  readonly deletedNodeClaims: readonly string[];
  /** NodeClaims whose Node contradicts them (FailedConsistencyCheck); left out when none. */
  readonly inconsistentNodeClaims?: readonly string[];
  /** Steps that failed (the next pass tries again); the others went on. */
  readonly failed: readonly { readonly step: string; readonly error: unknown }[];
}

/**
 * One garbage-collection pass: reads this cluster's live instances, then the NodeClaims and Nodes
 * (in that order, so an instance launched meanwhile always finds the NodeClaim created before its
 * launch), decides (decideCollection) and applies each step on its own: a step that fails is
 * reported and the others go on. Every action is one decision line. Then, on the same reading,
 * Karpenter's NodeClaim consistency check (consistency.ts) over the NodeClaims it did not delete:
 * it only reports.
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
  const pass: Pass = { ports, instances, nowMs: now.getTime() };
  for (const step of steps) {
    try {
      const done = await applyStep(pass, step);
      if (done === 'terminated')
        terminated.push(step.kind === 'terminateOrphan' ? step.instance.instanceId : '');
      if (done === 'deleted' && step.kind === 'confirmGone') deletedNodeClaims.push(step.claim.name);
    } catch (error) {
      const what = step.kind === 'terminateOrphan' ? step.instance.instanceId : step.claim.name;
      ports.logger.error('garbage collection step failed', { step: step.kind, subject: what, error });
      failed.push({ step: `${step.kind} ${what}`, error });
    }
  }
  const deleted = new Set(deletedNodeClaims);
  const consistency = await reportConsistency(
    ports,
    decideConsistency(
      claims.items.filter((c) => !deleted.has(c.name)),
      nodes.items,
    ),
    ports.deadline,
  );
  failed.push(...consistency.failed);
  return {
    terminated,
    deletedNodeClaims,
    ...(consistency.inconsistent.length > 0 ? { inconsistentNodeClaims: consistency.inconsistent } : {}),
    failed,
  };
}

/** What one pass's steps are applied with. */
interface Pass {
  readonly ports: GarbageCollectionPorts;
  /** The live instances the pass read from EC2 (its own reading, not the cluster summary's). */
  readonly instances: readonly CloudInstance[];
  readonly nowMs: number;
}

async function applyStep(pass: Pass, step: CollectionStep): Promise<'terminated' | 'deleted' | 'kept'> {
  const { cluster, cloud, logger } = pass.ports;
  switch (step.kind) {
    case 'terminateOrphan': {
      const { instance } = step;
      // The Node named by the reading goes too, when the API server says it is this instance's:
      // the reading may come from the cluster summary, which may name any Node. Read before the
      // termination, so a read that fails leaves the instance for the next pass rather than
      // terminating it without its decision line.
      const node = step.nodeName === undefined ? undefined : await cluster.node(step.nodeName);
      const nodeName =
        node !== undefined && parseInstanceId(node.providerId) === instance.instanceId
          ? node.name
          : undefined;
      // delete() refuses an instance without this cluster's ownership tags.
      await cloud.delete(instance.instanceId);
      if (step.nodeName !== undefined && nodeName === undefined) {
        logger.warn('node not deleted with its instance', {
          node: step.nodeName,
          instanceId: instance.instanceId,
          why:
            node === undefined
              ? 'the API server has no such Node'
              : `the API server's Node has providerID ${node.providerId ?? '(none)'}, not this instance`,
        });
      }
      writeDecision(pass.ports, {
        kind: 'collect',
        reason: 'orphaned instance',
        action: 'terminateInstance',
        instanceId: instance.instanceId,
        instanceState: instance.state,
        ageSeconds: Math.round(step.ageMs / 1000),
        ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
        ...(instance.nodePoolName === undefined ? {} : { nodePool: instance.nodePoolName }),
        ...(nodeName === undefined ? {} : { node: nodeName }),
      });
      // Should this fail, the Node of a terminated instance is removed by the cloud node lifecycle
      // controller, as any such Node.
      if (nodeName !== undefined) await ignoreNotFound(cluster.deleteNode(nodeName));
      return 'terminated';
    }
    case 'confirmGone': {
      const confirmed = await confirmGone(pass, step);
      if (confirmed === undefined) return 'kept';
      const { claim, instanceState } = confirmed;
      await ignoreNotFound(cluster.deleteNodeClaim(claim.name));
      const handedOver = await handToTermination(pass.ports.requestTermination, claim.name, logger);
      writeDecision(pass.ports, {
        kind: 'collect',
        reason: 'instance gone',
        action: 'deleteNodeClaim',
        instanceId: confirmed.instanceId,
        instanceState,
        ...nodeClaimFields(claim),
        ...(claim.labels[Label.capacityType] === undefined
          ? {}
          : { capacityType: claim.labels[Label.capacityType] }),
        ...(claim.status.nodeName === undefined ? {} : { node: claim.status.nodeName }),
        handedOver,
      });
      return 'deleted';
    }
    default:
      return assertNever(step);
  }
}

/**
 * The NodeClaim of a `confirmGone` step as the API server has it, when collecting it is decided
 * again on that read (decideCollection over the pass's instances, the NodeClaim and its Node, both
 * read by name) and EC2, asked by the id of its providerID, does not have the instance running;
 * else undefined (logged when the reading the step came from was wrong). The reading may come
 * from the cluster summary, which anyone holding the shim's role can write.
 */
async function confirmGone(
  pass: Pass,
  step: Extract<CollectionStep, { kind: 'confirmGone' }>,
): Promise<{ claim: ClusterNodeClaim; instanceId: string; instanceState: string } | undefined> {
  const { cluster, cloud, logger } = pass.ports;
  const kept = (why: string) => {
    logger.warn('nodeClaim not collected', {
      nodeClaim: step.claim.name,
      listedInstanceId: step.instanceId,
      why,
    });
    return undefined;
  };
  const claim = await cluster.nodeClaim(step.claim.name);
  if (claim === undefined) return undefined;
  if (claim.uid !== step.claim.uid) return kept('the API server has another NodeClaim of that name');
  const node = claim.status.nodeName === undefined ? undefined : await cluster.node(claim.status.nodeName);
  const again = decideCollection({
    instances: pass.instances,
    claims: [claim],
    nodes: node === undefined ? [] : [node],
    nowMs: pass.nowMs,
    lookupWindowMs: INSTANCE_LOOKUP_WINDOW_MS,
  }).find((s) => s.kind === 'confirmGone');
  if (again === undefined) {
    return kept(
      `not to be collected as the API server has it (providerID ${claim.status.providerId ?? '(none)'}, ${claim.deleting ? 'deleting' : 'not deleting'})`,
    );
  }
  // The list of live instances may lag behind; a read by id is the answer.
  const instance = await cloud.get(again.instanceId);
  if (instance !== undefined && instance.state !== 'terminated') return undefined;
  return { claim, instanceId: again.instanceId, instanceState: instance?.state ?? 'not found' };
}
