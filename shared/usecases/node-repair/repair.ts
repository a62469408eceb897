import {
  Annotation,
  assertNever,
  Label,
  NodeClaimConditionType,
  NodePoolConditionType,
  parseInstanceId,
} from '../../core/index.ts';
import type { Cluster, ClusterNodePool, ReadResult } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { ImpairedInstanceReader } from '../../ports/instance-status.ts';
import type { Logger } from '../../runtime/logger.ts';
import { DECISION_SAMPLE_SIZE, type MetricsSink, writeDecision } from '../decisions/decision.ts';
import { handToTermination } from '../termination/handover.ts';
import {
  decideRepair,
  describeCause,
  doNotRepairOn,
  type ImpairedInstance,
  NodeHold,
  type PoolBudget,
  type PoolHealth,
  type RepairStep,
  type RepairTarget,
  UNHEALTHY_THRESHOLD_PERCENT,
  type UnhealthyCause,
} from './decide.ts';

/** The `DisruptionReason` of a repaired NodeClaim (Karpenter's metric reason is `unhealthy`). */
export const REPAIR_DISRUPTION_REASON = 'Unhealthy';

/** The ports repairNodes uses. */
export interface NodeRepairPorts {
  readonly cluster: Cluster;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /**
   * The instances among `instanceIds` (this cluster's, from its NodeClaims) that EC2 reports
   * impaired; without it only Node conditions count.
   */
  readonly impairedInstances?: ImpairedInstanceReader;
  /** Hands a NodeClaim this pass deleted to termination at once; else the termination sweep finds it. */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
}

/** What one repair pass did. */
export interface NodeRepairResult {
  /** NodeClaims deleted to replace their unhealthy nodes. */
  readonly repaired: readonly string[];
  /** NodePools whose repairs were held back from this pass on. */
  readonly blocked: readonly string[];
  readonly unblocked: readonly string[];
  /**
   * NodeClaims whose due repair was held back by their node (`karpenter.sh/do-not-repair`) or by
   * their NodePool not being read; present when there were any.
   */
  readonly held?: readonly string[];
  /** Steps that failed (the next pass decides again); the others went on. */
  readonly failed: readonly { readonly step: string; readonly error: unknown }[];
}

const cause = (c: UnhealthyCause) =>
  c.source === 'condition' ? `${c.conditionType}=${c.status}` : c.checks.join(',');

const poolFields = (health: PoolHealth) => ({
  ...(health.nodePool === undefined ? {} : { nodePool: health.nodePool }),
  unhealthyNodes: health.unhealthy,
  poolNodes: health.nodes,
  threshold: health.threshold,
});

/**
 * One node-repair pass (Karpenter's NodeRepair): reads the Nodes, NodeClaims and NodePools (and,
 * when wired, which of this cluster's instances EC2 reports impaired), decides (decideRepair) and
 * applies each step on its own. A node is replaced by deleting its NodeClaim forcefully, as
 * Karpenter v1.14 did (v1.15's AWS repair policies drain for a bounded time first): the
 * `karpenter.sh/nodeclaim-termination-timestamp` annotation is set to now, so termination does not
 * wait for PDBs, do-not-disrupt pods or volume detachment; the NodePool's disruption budgets for
 * `Unhealthy` pace how many initialized nodes go at once. A pass with a repair due decides again on
 * the API server's own Nodes and NodeClaims (one consistent list each: the lists may come from the
 * cluster summary), and before each repair the NodeClaim and Node are read by name and the repair
 * decided again on them. Nodes that could not be read count as unhealthy in every NodePool, so they
 * never let a repair through that the 20% rule would hold back; NodeClaims that could not be read
 * count as being disrupted in their NodePool's budgets. A node annotated
 * `karpenter.sh/do-not-repair: "true"`, or whose NodePool was not read, is held, never repaired.
 * @throws ClusterApiError or CloudApiError when the reading fails.
 */
export async function repairNodes(ports: NodeRepairPorts, now: Date): Promise<NodeRepairResult> {
  const { cluster, logger } = ports;
  const pools = await cluster.nodePools();
  let reading = await readAndDecide(ports, pools, now, false);
  if (reading.decided.steps.some((s) => s.kind === 'repair')) {
    // A repair deletes a NodeClaim: decided again on the API server's own Nodes and NodeClaims,
    // as the lists may come from the cluster summary, which may hide unhealthy nodes from the 20%
    // rule or show a healthy one unhealthy. Only passes with a repair due pay for these reads.
    reading = await readAndDecide(ports, pools, now, true);
  }
  const { nodes, claims, impaired, decided } = reading;
  if (nodes.problems.length > 0) {
    logger.warn('unreadable nodes counted as unhealthy', {
      why: 'a Node that cannot be read may be unhealthy: every NodePool counts it against the 20% rule',
      nodes: nodes.problems.slice(0, 10).map((p) => p.message),
    });
  }
  if (claims.unreadable.length > 0 || pools.problems.length > 0) {
    logger.warn('unreadable nodeclaims or nodepools', {
      why: 'a NodeClaim that cannot be read may be deleting: its NodePool (else every one) counts it as disrupted; a node whose NodePool cannot be read is not repaired',
      nodeClaims: claims.unreadable.slice(0, 10).map((u) => `${u.name}: ${u.problem}`),
      nodePools: pools.problems.slice(0, 10).map((p) => p.message),
    });
  }
  if (decided.untimed.length > 0) {
    logger.warn('unhealthy nodes not repaired', {
      why: 'the unhealthy condition has no transition time and the Node no creation time',
      nodes: decided.untimed.slice(0, 10),
    });
  }
  const impairedById = new Map((impaired ?? []).map((i) => [i.instanceId, i]));
  const result = { repaired: [] as string[], blocked: [] as string[], unblocked: [] as string[] };
  const held: string[] = [];
  const failed: { step: string; error: unknown }[] = [];
  for (const step of decided.steps) {
    const subject =
      step.kind === 'repair'
        ? step.claim.name
        : step.kind === 'hold'
          ? (step.nodePool ?? 'standalone NodeClaims')
          : step.pool.pool.name;
    try {
      switch (step.kind) {
        case 'repair':
          if (await replace(ports, step, impairedById, now)) result.repaired.push(step.claim.name);
          break;
        case 'block':
          if (await block(ports, step)) result.blocked.push(subject);
          break;
        case 'unblock':
          if (await unblock(ports, step.pool, step.health)) result.unblocked.push(subject);
          break;
        case 'hold':
          await hold(ports, step);
          held.push(...step.held.map((t) => t.claim.name));
          break;
        default:
          assertNever(step);
      }
    } catch (error) {
      logger.error('node repair step failed', { step: step.kind, subject, error });
      failed.push({ step: `${step.kind} ${subject}`, error });
    }
  }
  return { ...result, ...(held.length === 0 ? {} : { held }), failed };
}

/** One reading of the Nodes and NodeClaims (from the API server itself when `consistent`), decided. */
async function readAndDecide(
  ports: NodeRepairPorts,
  pools: ReadResult<ClusterNodePool>,
  now: Date,
  consistent: boolean,
) {
  const options = consistent ? { consistent: true } : undefined;
  const [nodes, claims] = await Promise.all([
    ports.cluster.nodeInfos(options),
    ports.cluster.nodeClaims(options),
  ]);
  const instanceIds = new Set(claims.items.flatMap((c) => parseInstanceId(c.status.providerId) ?? []));
  const impaired =
    ports.impairedInstances === undefined || instanceIds.size === 0
      ? undefined
      : await ports.impairedInstances(instanceIds);
  const decided = decideRepair({
    nodes: nodes.items,
    claims: claims.items,
    pools: pools.items,
    unreadableNodes: nodes.problems.length,
    unreadableClaims: claims.unreadable,
    unreadablePools: pools.problems.length,
    ...(impaired === undefined ? {} : { impaired }),
    nowMs: now.getTime(),
  });
  return { nodes, claims, impaired, decided };
}

/** The RFC 3339 time Karpenter writes (whole seconds). */
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Replaces one node; false when, read again, it is no longer to be repaired. */
async function replace(
  ports: NodeRepairPorts,
  step: Extract<RepairStep, { kind: 'repair' }>,
  impaired: ReadonlyMap<string, ImpairedInstance>,
  now: Date,
): Promise<boolean> {
  const { cluster, logger } = ports;
  const [claim, node] = await Promise.all([cluster.nodeClaim(step.claim.name), cluster.node(step.node.name)]);
  if (claim === undefined || node === undefined) return false;
  // The same decision on this NodeClaim and Node as the API server has them: still a pair (same
  // providerID), neither deleting nor annotated do-not-repair, and the node's repair due on its own
  // conditions.
  const again = decideRepair({
    nodes: [node],
    claims: [claim],
    pools: step.pool === undefined ? [] : [step.pool],
    impaired: [...impaired.values()],
    nowMs: now.getTime(),
  }).steps.some((s) => s.kind === 'repair' && s.claim.uid === claim.uid && s.node.uid === node.uid);
  if (!again || claim.uid !== step.claim.uid || node.uid !== step.node.uid) return false;
  const message = `node ${node.name} unhealthy: ${describeCause(step.cause)}`;
  // The deadline now: termination force-deletes the pods and skips PDBs and volume waits.
  await cluster.patchNodeClaimMetadata(claim.name, {
    annotations: { [Annotation.terminationTimestamp]: rfc3339(now) },
  });
  await cluster.patchNodeClaimStatus(claim.name, {
    conditions: [
      {
        type: NodeClaimConditionType.disruptionReason,
        status: 'True',
        reason: REPAIR_DISRUPTION_REASON,
        message,
      },
    ],
  });
  await cluster.deleteNodeClaim(claim.name);
  const handedOver = await handToTermination(ports.requestTermination, claim.name, logger);
  const instanceId = parseInstanceId(claim.status.providerId);
  const capacityType = claim.labels[Label.capacityType];
  writeDecision(ports, {
    kind: 'repair',
    reason: describeCause(step.cause),
    action: 'replace',
    ...poolFields(step.health),
    node: node.name,
    nodeClaim: claim.name,
    ...(instanceId === undefined ? {} : { instanceId }),
    cause: cause(step.cause),
    conditionType:
      step.cause.source === 'condition'
        ? step.cause.conditionType
        : (step.cause.checks[0] ?? 'instanceStatus'),
    ...(capacityType === undefined ? {} : { capacityType }),
    ...(claim.status.imageId === undefined ? {} : { imageId: claim.status.imageId }),
    unhealthySeconds: Math.round(step.unhealthyForMs / 1000),
    tolerationSeconds: Math.round(step.cause.tolerationMs / 1000),
    handedOver,
  });
  return true;
}

const thresholdMessage = (health: PoolHealth) =>
  `more than ${UNHEALTHY_THRESHOLD_PERCENT}% of nodes in nodepool "${health.nodePool}" are unhealthy (${health.unhealthy} of ${health.nodes}, at most ${health.threshold} may be)`;

/** What the budgets allowed, which one set it, and what the pool's nodes already used of it. */
function budgetMessage(pool: ClusterNodePool, budget: PoolBudget, held: number): string {
  const name = pool.pool.name;
  const which =
    budget.limitedBy === undefined
      ? ''
      : `, budgets[${budget.limitedBy}] nodes "${pool.disruption.budgets[budget.limitedBy]?.nodes}"`;
  const allowed = `${budget.allowed} more ${budget.allowed === 1 ? 'node' : 'nodes'}`;
  return `disruption budgets of nodepool "${name}" allow ${allowed} for reason Unhealthy (${budget.counts.disrupting} of ${budget.counts.nodes} nodes being disrupted${which}): ${held} due ${held === 1 ? 'repair' : 'repairs'} held back`;
}

/** Writes the pool's condition, then the Events; false when the NodePool is gone. */
async function block(ports: NodeRepairPorts, step: Extract<RepairStep, { kind: 'block' }>): Promise<boolean> {
  const { cluster } = ports;
  const { pool, health, held } = step;
  const name = pool.pool.name;
  const message =
    step.budget === undefined ? thresholdMessage(health) : budgetMessage(pool, step.budget, held.length);
  if (!(await patchCondition(cluster, name, 'True', step.by, message))) return false;
  // Karpenter records NodeRepairBlocked on the Node, its NodeClaim and the NodePool, once in 15
  // minutes; Flotilla records it once per blocked state, so the message is part of the key.
  await cluster.recordEvent({
    ...repairBlocked(message),
    subject: { kind: 'NodePool', name, uid: pool.uid },
  });
  for (const target of held) await recordHeld(cluster, target, message);
  writeDecision(ports, {
    kind: 'repair',
    reason: message,
    action: 'block',
    ...poolFields(health),
    held: held.length,
    heldBy: step.by,
    ...(step.budget === undefined ? {} : { allowedDisruptions: step.budget.allowed }),
  });
  return true;
}

/** A NodeRepairBlocked Event saying `message`, deduplicated by it for 15 minutes. */
const repairBlocked = (message: string) =>
  ({
    type: 'Warning',
    reason: 'NodeRepairBlocked',
    message,
    dedupeValues: [message],
    dedupeSeconds: 15 * 60,
  }) as const;

/** Records NodeRepairBlocked (`message`) on a held node's Node and NodeClaim. */
async function recordHeld(cluster: Cluster, target: RepairTarget, message: string): Promise<void> {
  const event = repairBlocked(message);
  await cluster.recordEvent({
    ...event,
    subject: { kind: 'Node', name: target.node.name, uid: target.node.uid },
  });
  await cluster.recordEvent({
    ...event,
    subject: { kind: 'NodeClaim', name: target.claim.name, uid: target.claim.uid },
  });
}

/** Why a `hold` step holds `target` back, for its Events. */
function holdMessage(step: Extract<RepairStep, { kind: 'hold' }>, target: RepairTarget): string {
  const node = target.node.name;
  switch (step.by) {
    case NodeHold.doNotRepair:
      return `repair of node ${node} held back: its ${doNotRepairOn(target.node, target.claim).join(' and ')} is annotated ${Annotation.doNotRepair}="true"`;
    case NodeHold.nodePoolNotFound:
      return `repair of node ${node} held back: its nodepool "${step.nodePool}" does not exist, and node repair acts only on nodes of a NodePool`;
    case NodeHold.clusterUnhealthy:
      return `repair of node ${node} held back: more than ${UNHEALTHY_THRESHOLD_PERCENT}% of the cluster's nodes are unhealthy (${step.health.unhealthy} of ${step.health.nodes}, at most ${step.health.threshold} may be), and its NodeClaim is in no NodePool`;
    case NodeHold.nodePoolUnreadable:
      return `repair of node ${node} held back: its nodepool "${step.nodePool}" was not read, and some NodePools cannot be read; node repair acts only on nodes of a NodePool it can read`;
    default:
      return assertNever(step.by);
  }
}

/**
 * Records NodeRepairBlocked on each held node's Node and NodeClaim (once per message in 15
 * minutes, as Karpenter's), then the decision line.
 */
async function hold(ports: NodeRepairPorts, step: Extract<RepairStep, { kind: 'hold' }>): Promise<void> {
  const { cluster } = ports;
  const messages = step.held.map((target) => holdMessage(step, target));
  for (const [i, target] of step.held.entries()) await recordHeld(cluster, target, messages[i] ?? '');
  const more = step.held.length > 1 ? ` (and ${step.held.length - 1} more held back the same way)` : '';
  writeDecision(ports, {
    kind: 'repair',
    reason: `${messages[0] ?? ''}${more}`,
    action: 'hold',
    ...poolFields(step.health),
    held: step.held.length,
    heldBy: step.by,
    nodes: step.held.slice(0, DECISION_SAMPLE_SIZE).map((t) => t.node.name),
  });
}

async function unblock(ports: NodeRepairPorts, pool: ClusterNodePool, health: PoolHealth): Promise<boolean> {
  const name = pool.pool.name;
  const message = `${health.unhealthy} of ${health.nodes} nodes unhealthy (at most ${health.threshold} may be), and no due repair held back by the disruption budgets`;
  if (!(await patchCondition(ports.cluster, name, 'False', 'UnhealthyThresholdNotExceeded', message))) {
    return false;
  }
  writeDecision(ports, {
    kind: 'repair',
    reason: message,
    action: 'unblock',
    ...poolFields(health),
  });
  return true;
}

/** Sets the NodePool's NodeRepairBlocked condition; false when the NodePool is gone. */
async function patchCondition(
  cluster: Cluster,
  name: string,
  status: 'True' | 'False',
  reason: string,
  message: string,
): Promise<boolean> {
  try {
    await cluster.patchNodePoolStatus(name, {
      conditions: [{ type: NodePoolConditionType.nodeRepairBlocked, status, reason, message }],
    });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
