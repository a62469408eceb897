import {
  findCondition,
  type InstanceType,
  NodeOverlayConditionType,
  type OverlayResolution,
} from '../../core/index.ts';
import type { Cloud, EC2NodeClass } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeOverlay, ClusterNodePool, ConditionUpdate } from '../../ports/cluster.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { resolveClusterOverlays } from '../state/overlays.ts';

// NodeOverlay status (Karpenter's nodeoverlay controller): ValidationSucceeded (False with
// RuntimeValidation for an invalid spec, Conflict for an overlay another of the same weight
// overrules) and Ready, which follows it. computeNodeOverlayConditions is pure;
// reconcileNodeOverlayStatus resolves the overlays against every NodePool and writes what changed.

/** Karpenter's message for an overlay left out because of a conflict. */
export const CONFLICT_MESSAGE = 'conflict with another overlay';

/** The conditions an overlay should have, given the overlays that conflict. Pure. */
export function computeNodeOverlayConditions(
  overlay: ClusterNodeOverlay,
  conflicts: ReadonlySet<string>,
): [ConditionUpdate, ConditionUpdate] {
  const { validationSucceeded, ready } = NodeOverlayConditionType;
  const validation: ConditionUpdate =
    overlay.invalid !== undefined
      ? { type: validationSucceeded, status: 'False', reason: 'RuntimeValidation', message: overlay.invalid }
      : conflicts.has(overlay.name)
        ? { type: validationSucceeded, status: 'False', reason: 'Conflict', message: CONFLICT_MESSAGE }
        : { type: validationSucceeded, status: 'True', reason: validationSucceeded, message: '' };
  const readiness: ConditionUpdate =
    validation.status === 'True'
      ? { type: ready, status: 'True', reason: ready, message: '' }
      : {
          type: ready,
          status: 'False',
          reason: 'UnhealthyDependents',
          message: `${validationSucceeded}=False`,
        };
  return [validation, readiness];
}

/** Whether writing `updates` would change the overlay's conditions (or their observed generation). */
export function overlayStatusChanges(
  overlay: ClusterNodeOverlay,
  updates: readonly ConditionUpdate[],
): boolean {
  return updates.some((u) => {
    const c = findCondition(overlay.conditions, u.type);
    return (
      c === undefined ||
      c.status !== u.status ||
      c.reason !== u.reason ||
      c.message !== u.message ||
      (overlay.generation !== undefined && c.observedGeneration !== overlay.generation)
    );
  });
}

/** What reconcileNodeOverlayStatus reads. */
export interface NodeOverlayStatusInput {
  readonly overlays: readonly ClusterNodeOverlay[];
  readonly pools: readonly ClusterNodePool[];
  readonly nodeClasses: readonly EC2NodeClass[];
}

/** What reconcileNodeOverlayStatus did. */
export interface NodeOverlayStatusResult {
  /** Overlays whose status was written. */
  readonly updated: readonly string[];
  readonly resolution: OverlayResolution;
}

/**
 * Resolves the NodeOverlays against every NodePool that is not being deleted and whose
 * EC2NodeClass exists (each class's instance types read once), and writes each overlay's
 * ValidationSucceeded and Ready where they change, one decision line per write.
 * @throws ClusterApiError / CloudApiError / CatalogUnavailableError when a read or write fails.
 */
export async function reconcileNodeOverlayStatus(
  ports: DecisionOutput & { readonly cluster: Pick<Cluster, 'patchNodeOverlayStatus'> },
  cloud: Pick<Cloud, 'instanceTypes'>,
  input: NodeOverlayStatusInput,
): Promise<NodeOverlayStatusResult> {
  const classes = new Map(input.nodeClasses.map((c) => [c.name, c]));
  const pools = input.pools.filter((p) => !p.deleting && classes.has(p.nodeClassRef.name));
  const typesByClass = new Map<string, readonly InstanceType[]>();
  if (input.overlays.some((o) => o.overlay !== undefined)) {
    for (const pool of pools) {
      const nodeClass = classes.get(pool.nodeClassRef.name);
      if (nodeClass === undefined || typesByClass.has(nodeClass.name)) continue;
      typesByClass.set(nodeClass.name, await cloud.instanceTypes(nodeClass));
    }
  }
  const resolution = resolveClusterOverlays(input.overlays, pools, typesByClass);
  const updated: string[] = [];
  for (const overlay of input.overlays) {
    const conditions = computeNodeOverlayConditions(overlay, resolution.conflicts);
    if (!overlayStatusChanges(overlay, conditions)) continue;
    await ports.cluster.patchNodeOverlayStatus(overlay.name, conditions);
    const [validation] = conditions;
    writeDecision(ports, {
      kind: 'updateNodeOverlay',
      reason: validation.reason,
      nodeOverlay: overlay.name,
      validationSucceeded: validation.status,
      ...(validation.message === '' ? {} : { detail: validation.message }),
    });
    updated.push(overlay.name);
  }
  return { updated, resolution };
}
