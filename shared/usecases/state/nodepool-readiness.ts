import { Label, NodeClassConditionType, NodePoolConditionType } from '../../core/index.ts';
import { type EC2NodeClass, nodeClassNotReady } from '../../ports/cloud.ts';
import {
  type ClusterNodePool,
  type ConditionUpdate,
  EC2_NODE_CLASS,
  isEC2NodeClassRef,
} from '../../ports/cluster.ts';

// Whether a NodePool may launch, from its spec and its EC2NodeClass alone (Karpenter's nodepool
// validation and readiness controllers): the provisioner's choice of NodePools and the NodePool
// status controller both read it here, so they never disagree. Pure.

/** Labels Karpenter sets itself; a NodePool may not require or template them. */
const RESTRICTED_LABELS: ReadonlySet<string> = new Set([
  Label.nodePool,
  Label.registered,
  Label.initialized,
  Label.hostname,
]);

/** Problems that make a NodePool invalid (Karpenter's runtime validation), as readable sentences. */
export function validateNodePool(pool: ClusterNodePool): string[] {
  const problems: string[] = [];
  const ref = pool.nodeClassRef;
  if (!isEC2NodeClassRef(ref)) {
    problems.push(
      `spec.template.spec.nodeClassRef must be ${EC2_NODE_CLASS.group}/${EC2_NODE_CLASS.kind}, got ${ref.group}/${ref.kind}`,
    );
  }
  for (const r of pool.pool.requirements) {
    if (RESTRICTED_LABELS.has(r.key)) problems.push(`requirement key "${r.key}" is restricted`);
  }
  for (const key of Object.keys(pool.pool.labels ?? {})) {
    if (RESTRICTED_LABELS.has(key)) problems.push(`template label "${key}" is restricted`);
  }
  return problems;
}

function nodeClassCondition(pool: ClusterNodePool, nodeClasses: readonly EC2NodeClass[]): ConditionUpdate {
  const type = NodePoolConditionType.nodeClassReady;
  const ref = pool.nodeClassRef;
  const nodeClass = nodeClasses.find((c) => c.name === ref.name);
  if (!isEC2NodeClassRef(ref) || nodeClass === undefined) {
    return {
      type,
      status: 'False',
      reason: 'NodeClassNotFound',
      message: `${ref.kind} "${ref.name}" not found; create it or fix spec.template.spec.nodeClassRef`,
    };
  }
  if (nodeClass.deleting) {
    return {
      type,
      status: 'False',
      reason: 'NodeClassTerminating',
      message: `EC2NodeClass "${nodeClass.name}" is being deleted`,
    };
  }
  const notReady = nodeClassNotReady(nodeClass);
  if (notReady === undefined) return { type, status: 'True', reason: type, message: '' };
  const ready = nodeClass.status?.conditions.find((c) => c.type === NodeClassConditionType.ready);
  return {
    type,
    status: ready?.status === 'False' ? 'False' : 'Unknown',
    reason: 'NodeClassNotReady',
    message: `EC2NodeClass "${nodeClass.name}" is not ready: ${notReady}`,
  };
}

/** Whether a NodePool may launch now, from its spec and its EC2NodeClass alone. */
export interface NodePoolReadiness {
  readonly ready: boolean;
  readonly validation: ConditionUpdate;
  readonly nodeClass: ConditionUpdate;
  /** The `Ready` condition: True, or the first of the two above that is not, with its reason. */
  readonly readyCondition: ConditionUpdate;
}

/**
 * The readiness of a NodePool (Karpenter's nodepool validation and readiness controllers): valid,
 * and its EC2NodeClass exists, is not being deleted and is Ready. Pure; both the NodePool status
 * and the provisioner's choice of NodePools come from it, so they never disagree.
 */
export function nodePoolReadiness(
  pool: ClusterNodePool,
  nodeClasses: readonly EC2NodeClass[],
): NodePoolReadiness {
  const problems = validateNodePool(pool);
  const validation: ConditionUpdate =
    problems.length === 0
      ? {
          type: NodePoolConditionType.validationSucceeded,
          status: 'True',
          reason: NodePoolConditionType.validationSucceeded,
          message: '',
        }
      : {
          type: NodePoolConditionType.validationSucceeded,
          status: 'False',
          reason: 'ValidationFailed',
          message: `nodePool "${pool.pool.name}": ${problems.join('; ')}`,
        };
  const nodeClass = nodeClassCondition(pool, nodeClasses);
  const notReady = [validation, nodeClass].find((c) => c.status !== 'True');
  const readyCondition: ConditionUpdate =
    notReady === undefined
      ? {
          type: NodePoolConditionType.ready,
          status: 'True',
          reason: NodePoolConditionType.ready,
          message: '',
        }
      : {
          type: NodePoolConditionType.ready,
          status: notReady.status,
          reason: notReady.reason,
          message: notReady.message,
        };
  return { ready: notReady === undefined, validation, nodeClass, readyCondition };
}
