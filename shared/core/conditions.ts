// Status conditions of the objects Flotilla reconciles, by name, and how long one has held its
// status. Every condition type Flotilla reads or writes is named here, once: Karpenter's v1 names
// for NodeClaims (`karpenter.sh/v1`), NodePools and EC2NodeClasses (`karpenter.k8s.aws/v1`), and
// the few that are Flotilla's own (marked so). Pure: times are read from the conditions themselves.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** One of an object's `status.conditions`. */
export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  /** RFC 3339; empty when the writer gave none. */
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

/** NodeClaim condition types (Karpenter v1 has no `Empty` or `Expired` condition). */
export const NodeClaimConditionType = {
  /** The instance was created (the cloud provider answered). */
  launched: 'Launched',
  /** A Node with the NodeClaim's provider id joined and was synced. */
  registered: 'Registered',
  /** The Node is Ready, its startup and ephemeral taints are gone, its resources are reported. */
  initialized: 'Initialized',
  /** True when Launched, Registered and Initialized all are. */
  ready: 'Ready',
  /** The NodeClaim no longer matches its NodePool or EC2NodeClass. */
  drifted: 'Drifted',
  /** The node may be consolidated: `consolidateAfter` has passed since its last pod event. */
  consolidatable: 'Consolidatable',
  /** Why the NodeClaim is being disrupted (its reason: Empty, Drifted, Underutilized, …). */
  disruptionReason: 'DisruptionReason',
  /** Termination: the node's pods are drained. */
  drained: 'Drained',
  /** Termination: the node's volumes are detached. */
  volumesDetached: 'VolumesDetached',
  /** Termination: the instance's deletion was asked for. */
  instanceTerminating: 'InstanceTerminating',
  /** The Node matches what the NodeClaim says of it. */
  consistentStateFound: 'ConsistentStateFound',
} as const;

/** NodePool condition types. */
export const NodePoolConditionType = {
  /** True when ValidationSucceeded and NodeClassReady are. */
  ready: 'Ready',
  validationSucceeded: 'ValidationSucceeded',
  nodeClassReady: 'NodeClassReady',
  /** False after launches or registrations failed, True again after one succeeds. */
  nodeRegistrationHealthy: 'NodeRegistrationHealthy',
  /**
   * Flotilla's own: False while a disruption budget does not parse (the CRD lets some malformed
   * schedules and durations through); that budget is left out, the others apply. Written only once
   * a budget has been malformed, and it does not count towards Ready.
   */
  disruptionBudgetsValid: 'DisruptionBudgetsValid',
  /**
   * Flotilla's own: True while the runaway guard pauses the NodePool's launches because its recent
   * NodeClaims keep failing (usecases/runaway-guard), with why and until when; False once they
   * resume. Written only once a NodeClaim failed, and it does not count towards Ready.
   */
  launchBackoff: 'LaunchBackoff',
  /** Flotilla's own: True while node repair holds back because too many of the pool's nodes are unhealthy. */
  nodeRepairBlocked: 'NodeRepairBlocked',
  /**
   * Flotilla's own: True while an alarm the NodePool names (`flotilla.io/rollout-alarms`) is in
   * ALARM or cannot be read, and drift and expiration replacements wait; False once they go on.
   * Written only once a hold started, and it does not count towards Ready.
   */
  rolloutPaused: 'RolloutPaused',
  /**
   * Flotilla's own: True while a schedule of the NodePool's `flotilla.io/schedules` annotation holds
   * it (reason `WindowOpen`, the message naming each open window and until when) or the annotation
   * does not read (`SchedulesInvalid`); False (`NoWindowOpen`) once none holds. First written when
   * one holds; it does not count towards Ready.
   */
  scheduleHolds: 'ScheduleHolds',
} as const;

/** EC2NodeClass condition types; `Ready` is True only when all the others are. */
export const NodeClassConditionType = {
  ready: 'Ready',
  subnetsReady: 'SubnetsReady',
  securityGroupsReady: 'SecurityGroupsReady',
  amisReady: 'AMIsReady',
  instanceProfileReady: 'InstanceProfileReady',
  validationSucceeded: 'ValidationSucceeded',
  /** Only on a class with `spec.placementGroupSelector`: the group was found and is available. */
  placementGroupReady: 'PlacementGroupReady',
  capacityReservationsReady: 'CapacityReservationsReady',
} as const;

/** NodeOverlay condition types (`karpenter.sh/v1alpha1`); `Ready` follows ValidationSucceeded. */
export const NodeOverlayConditionType = {
  ready: 'Ready',
  /** False with `RuntimeValidation` (the spec is invalid) or `Conflict` (another overlay wins). */
  validationSucceeded: 'ValidationSucceeded',
} as const;

/** The condition of `type`, or undefined when the object has none. */
export function findCondition<C extends Pick<Condition, 'type'>>(
  conditions: readonly C[],
  type: string,
): C | undefined {
  return conditions.find((c) => c.type === type);
}

/** True when the condition of `type` has status True. */
export function isConditionTrue(
  conditions: readonly Pick<Condition, 'type' | 'status'>[],
  type: string,
): boolean {
  return conditions.some((c) => c.type === type && c.status === 'True');
}

/**
 * A condition's `lastTransitionTime` in epoch ms; undefined when there is no condition or its time
 * is empty or not a timestamp.
 */
export function transitionTimeMs(
  condition: Pick<Condition, 'lastTransitionTime'> | undefined,
): number | undefined {
  if (condition === undefined || condition.lastTransitionTime === '') return undefined;
  const ms = Date.parse(condition.lastTransitionTime);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Since when (epoch ms) the condition of `type` has had `status`: its last transition. Undefined
 * when it is absent, has another status, or has no readable transition time.
 */
export function conditionSinceMs(
  conditions: readonly Condition[],
  type: string,
  status: ConditionStatus,
): number | undefined {
  const condition = findCondition(conditions, type);
  return condition?.status === status ? transitionTimeMs(condition) : undefined;
}

/** Since when (epoch ms) the condition of `type` has been True; see conditionSinceMs. */
export function trueSinceMs(conditions: readonly Condition[], type: string): number | undefined {
  return conditionSinceMs(conditions, type, 'True');
}
