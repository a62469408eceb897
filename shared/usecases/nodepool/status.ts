import {
  budgetActive,
  budgetNodes,
  NodePoolConditionType,
  Resource,
  type ResourceList,
  type ValidationError,
} from '../../core/index.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import type {
  Cluster,
  ClusterNodeClaim,
  ClusterNodePool,
  Condition,
  ConditionUpdate,
  NodeInfo,
  NodePoolStatusPatch,
} from '../../ports/cluster.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { nodesByProviderId } from '../state/node-index.ts';
import { nodePoolReadiness } from '../state/nodepool-readiness.ts';
import { scheduleCondition } from './schedule-condition.ts';

// NodePool status (Karpenter's nodepool readiness, validation and counter controllers):
// ValidationSucceeded, NodeClassReady, Ready, NodeRegistrationHealthy, status.resources and
// status.nodes. computeNodePoolStatus is pure; reconcileNodePoolStatus writes what changed.

/** What computeNodePoolStatus reads. */
export interface NodePoolStatusInput {
  readonly nodeClasses: readonly EC2NodeClass[];
  readonly claims: readonly ClusterNodeClaim[];
  readonly nodes: readonly NodeInfo[];
  /** `NodeRegistrationHealthy` updates decided by this lifecycle pass, by NodePool name. */
  readonly registrationHealth?: ReadonlyMap<string, ConditionUpdate>;
  /** The pass's time, for the `ScheduleHolds` condition; without it that condition is not written. */
  readonly nowMs?: number;
}

/** Sum of the capacity of the pool's launched NodeClaims and Nodes, plus `nodes`: their count. */
export function computeNodePoolResources(
  poolName: string,
  claims: readonly ClusterNodeClaim[],
  nodes: readonly NodeInfo[],
): { readonly resources: ResourceList; readonly nodes: number } {
  const total: Record<string, number> = {};
  const add = (capacity: ResourceList | undefined) => {
    for (const [k, v] of Object.entries(capacity ?? {})) total[k] = (total[k] ?? 0) + v;
  };
  const counted = new Set<string>();
  let count = 0;
  const byProviderId = nodesByProviderId(nodes);
  for (const claim of claims) {
    if (claim.nodePoolName !== poolName || claim.status.providerId === undefined) continue;
    const node = byProviderId.get(claim.status.providerId)?.[0];
    if (node !== undefined) counted.add(node.name);
    const nodeCapacity = node?.capacity ?? node?.allocatable;
    add(
      nodeCapacity !== undefined && Object.keys(nodeCapacity).length > 0
        ? nodeCapacity
        : claim.status.capacity,
    );
    count += 1;
  }
  for (const node of nodes) {
    if (node.nodePoolName !== poolName || counted.has(node.name)) continue;
    add(node.capacity ?? node.allocatable);
    count += 1;
  }
  return { resources: { ...total, [Resource.nodes]: count }, nodes: count };
}

const sameCondition = (current: Condition | undefined, update: ConditionUpdate) =>
  current?.status === update.status && current.reason === update.reason && current.message === update.message;

function sameResources(a: ResourceList | undefined, b: ResourceList): boolean {
  const keys = new Set([...Object.keys(a ?? {}), ...Object.keys(b)]);
  return [...keys].every((k) => (a?.[k] ?? 0) === (b[k] ?? 0));
}

/** Why each malformed budget of a NodePool is left out, as `budgets[i]: …`. */
export function budgetProblems(pool: ClusterNodePool): string[] {
  return pool.disruption.budgets.flatMap((budget, i) => {
    if (budgetNodes(budget.nodes, 0) === undefined) {
      return [`budgets[${i}]: nodes "${budget.nodes}" is neither a count nor a percentage 0-100%`];
    }
    // Parsing does not depend on the time; any instant tells whether the window can be judged.
    const active = budgetActive(budget, 0);
    if (typeof active === 'boolean') return [];
    return [`budgets[${i}]: ${active.problem}${active.holds === true ? '' : '; it is left out'}`];
  });
}

function budgetsCondition(pool: ClusterNodePool): ConditionUpdate | undefined {
  const type = NodePoolConditionType.disruptionBudgetsValid;
  const problems = budgetProblems(pool);
  if (problems.length > 0) {
    return {
      type,
      status: 'False',
      reason: 'InvalidBudget',
      message: problems.join('; '),
    };
  }
  return pool.conditions.some((c) => c.type === type)
    ? { type, status: 'True', reason: type, message: '' }
    : undefined;
}

/** The NodePool status patch, or undefined when the status is already what it should be. */
export function computeNodePoolStatus(
  pool: ClusterNodePool,
  input: NodePoolStatusInput,
): NodePoolStatusPatch | undefined {
  const name = pool.pool.name;
  const { validation, nodeClass, readyCondition: ready } = nodePoolReadiness(pool, input.nodeClasses);
  const health = input.registrationHealth?.get(name);
  const budgets = budgetsCondition(pool);
  const schedule = input.nowMs === undefined ? undefined : scheduleCondition(pool, input.nowMs);
  const conditions = [
    validation,
    nodeClass,
    ready,
    ...(health === undefined ? [] : [health]),
    ...(budgets === undefined ? [] : [budgets]),
    ...(schedule === undefined ? [] : [schedule]),
  ].filter(
    (u) =>
      !sameCondition(
        pool.conditions.find((c) => c.type === u.type),
        u,
      ),
  );
  const counted = computeNodePoolResources(name, input.claims, input.nodes);
  const resourcesChanged = !sameResources(pool.resources, counted.resources);
  const nodesChanged = pool.nodes !== counted.nodes;
  const observed = input.nodeClasses.find((c) => c.name === pool.nodeClassRef.name)?.generation;
  const observedChanged = observed !== undefined && observed !== pool.nodeClassObservedGeneration;
  if (conditions.length === 0 && !resourcesChanged && !nodesChanged && !observedChanged) return undefined;
  return {
    ...(conditions.length > 0 ? { conditions } : {}),
    ...(resourcesChanged ? { resources: counted.resources } : {}),
    ...(nodesChanged ? { nodes: counted.nodes } : {}),
    ...(observedChanged ? { nodeClassObservedGeneration: observed } : {}),
  };
}

/** The NodePool name in a read problem's object (`nodePool "x"`), when there is one. */
function malformedPoolName(problem: ValidationError): string | undefined {
  return /^nodePool "([^"]+)"$/i.exec(problem.object)?.[1];
}

export interface NodePoolStatusResult {
  /** NodePools whose status was written. */
  readonly updated: readonly string[];
}

/**
 * Writes each NodePool's status where it differs from what the cluster shows. Malformed NodePools
 * (read problems) get ValidationSucceeded=False and Ready=False with the problem as the message.
 * @throws ClusterApiError from the Cluster port.
 */
export async function reconcileNodePoolStatus(
  ports: DecisionOutput & { readonly cluster: Cluster },
  input: NodePoolStatusInput & {
    readonly pools: readonly ClusterNodePool[];
    readonly malformedPools?: readonly ValidationError[];
  },
): Promise<NodePoolStatusResult> {
  const { cluster } = ports;
  const updated: string[] = [];
  for (const pool of input.pools) {
    if (pool.deleting) continue;
    const patch = computeNodePoolStatus(pool, input);
    if (patch === undefined) continue;
    await cluster.patchNodePoolStatus(pool.pool.name, patch);
    updated.push(pool.pool.name);
    const ready = patch.conditions?.find((c) => c.type === NodePoolConditionType.ready);
    writeDecision(ports, {
      kind: 'updateNodePool',
      reason: ready === undefined || ready.status === 'True' ? 'status changed' : ready.message,
      nodePool: pool.pool.name,
      conditions: (patch.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`),
      ...(patch.nodes === undefined ? {} : { nodes: patch.nodes }),
      ...(patch.resources === undefined ? {} : { resources: patch.resources }),
    });
    // The Ready condition is in the patch only when it changed: one Event per new reason.
    if (ready !== undefined && ready.status !== 'True') {
      await cluster.recordEvent({
        subject: { kind: 'NodePool', name: pool.pool.name, uid: pool.uid },
        type: 'Warning',
        reason: ready.reason,
        message: `NodePool ${pool.pool.name} is not ready: ${ready.message}`,
      });
    }
  }
  for (const problem of input.malformedPools ?? []) {
    const name = malformedPoolName(problem);
    if (name === undefined) continue;
    const message = problem.message;
    await cluster.patchNodePoolStatus(name, {
      conditions: [
        {
          type: NodePoolConditionType.validationSucceeded,
          status: 'False',
          reason: 'ValidationFailed',
          message,
        },
        { type: NodePoolConditionType.ready, status: 'False', reason: 'ValidationFailed', message },
      ],
    });
    updated.push(name);
    writeDecision(ports, { kind: 'rejectNodePool', reason: message, nodePool: name });
    await cluster.recordEvent({
      subject: { kind: 'NodePool', name },
      type: 'Warning',
      reason: 'ValidationFailed',
      message: `NodePool ${name} is not ready: ${message}`,
    });
  }
  return { updated };
}
