// The interruption event kinds Flotilla acts on, one row each (Karpenter's AWS interruption
// controller, §6 of the behaviour reference). Everything else about a kind derives from its row:
// the EventBridge rules of the stack (infra/interruption-rules.ts), what the codec accepts
// (interruption-event.ts) and what the use case does (shared/usecases/interruption/interruption.ts). Adding a
// kind is adding a row.

/** What a kind's EventBridge `detail` holds, and so how the codec reads it. */
export type InterruptionDetailShape =
  /** `instance-id` (spot interruption, rebalance, capacity reservation). */
  | 'instance'
  /** `instance-id` and `state` (EC2 Instance State-change Notification). */
  | 'instanceState'
  /** `service`, `eventTypeCategory` and the instance ids in `affectedEntities` (AWS Health). */
  | 'health';

/** The Kubernetes Event recorded on the NodeClaim (and its Node), in Karpenter's AWS wording. */
export interface InterruptionEventWording {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/** One interruption kind: how it arrives, how it is recognised and what Flotilla does about it. */
export interface InterruptionKindRow<K extends string = string> {
  /** The parsed kind, in Karpenter's vocabulary. */
  readonly kind: K;
  /**
   * The EventBridge rule that delivers it, the stack's `<rule>Rule`. Kinds of one detail-type
   * (instance stopped and terminated) share a rule, whose detail filter is the union of theirs.
   */
  readonly rule: string;
  readonly source: 'aws.ec2' | 'aws.health';
  readonly detailType: string;
  readonly detail: InterruptionDetailShape;
  /**
   * Values of `detail` fields this kind needs, e.g. `{ state: ['stopping', 'stopped'] }`. The rule
   * matches only these (sparing invocations for events nothing acts on) and the codec turns an
   * event outside them into a `noop`.
   * @default every event of the detail-type
   */
  readonly detailFilter?: Readonly<Record<string, readonly string[]>>;
  /**
   * `cordonAndDrain` deletes the NodeClaim gracefully (condition `DisruptionReason`, Event
   * `TerminatingOnInterruption`) and starts the drain now; `event` records the Event only.
   */
  readonly action: 'cordonAndDrain' | 'event';
  /**
   * The stack setting that can turn `event` into `cordonAndDrain` (`rebalanceAction: 'drain'`).
   * @default none: the action is fixed
   */
  readonly actionSetting?: 'rebalanceAction';
  /** Whether a drain also backs off the NodeClaim's spot offering (as an ICE) before the next launch. */
  readonly backsOffSpotOffering: boolean;
  /** The reason of the NodeClaim's `DisruptionReason` condition when it drains. */
  readonly disruptionReason: string;
  readonly event: InterruptionEventWording;
  /**
   * Karpenter's name of the kind, the value of its interruption metrics' `message_type` and of
   * `karpenter_nodeclaims_disrupted_total`'s `reason`.
   */
  readonly messageType: string;
}

const ROWS = [
  {
    kind: 'spotInterruption',
    rule: 'SpotInterruption',
    source: 'aws.ec2',
    detailType: 'EC2 Spot Instance Interruption Warning',
    detail: 'instance',
    action: 'cordonAndDrain',
    backsOffSpotOffering: true,
    disruptionReason: 'SpotInterruption',
    messageType: 'spot_interrupted',
    event: { type: 'Warning', reason: 'SpotInterrupted', message: 'Spot interruption warning was triggered' },
  },
  {
    kind: 'rebalanceRecommendation',
    rule: 'Rebalance',
    source: 'aws.ec2',
    detailType: 'EC2 Instance Rebalance Recommendation',
    detail: 'instance',
    // Karpenter publishes the Event only; its docs say it does not taint or drain on rebalance.
    action: 'event',
    actionSetting: 'rebalanceAction',
    backsOffSpotOffering: false,
    disruptionReason: 'RebalanceRecommendation',
    messageType: 'rebalance_recommendation',
    event: {
      type: 'Normal',
      reason: 'SpotRebalanceRecommendation',
      message: 'Spot rebalance recommendation was triggered',
    },
  },
  {
    kind: 'instanceStopped',
    rule: 'InstanceStateChange',
    source: 'aws.ec2',
    detailType: 'EC2 Instance State-change Notification',
    detail: 'instanceState',
    // Karpenter acts only on these states (and the terminating ones below); matching them in the
    // rule spares an invocation for every pending/running transition in the account.
    detailFilter: { state: ['stopping', 'stopped'] },
    action: 'cordonAndDrain',
    backsOffSpotOffering: false,
    disruptionReason: 'InstanceStopped',
    messageType: 'instance_stopped',
    event: { type: 'Warning', reason: 'InstanceStopping', message: 'Instance is stopping' },
  },
  {
    kind: 'instanceTerminated',
    rule: 'InstanceStateChange',
    source: 'aws.ec2',
    detailType: 'EC2 Instance State-change Notification',
    detail: 'instanceState',
    detailFilter: { state: ['shutting-down', 'terminated'] },
    action: 'cordonAndDrain',
    backsOffSpotOffering: false,
    disruptionReason: 'InstanceTerminated',
    messageType: 'instance_terminated',
    event: { type: 'Warning', reason: 'InstanceTerminating', message: 'Instance is terminating' },
  },
  {
    kind: 'scheduledChange',
    rule: 'ScheduledChange',
    source: 'aws.health',
    detailType: 'AWS Health Event',
    detail: 'health',
    detailFilter: { service: ['EC2'], eventTypeCategory: ['scheduledChange'] },
    action: 'cordonAndDrain',
    backsOffSpotOffering: false,
    disruptionReason: 'ScheduledChange',
    messageType: 'scheduled_change',
    event: {
      type: 'Warning',
      reason: 'InstanceUnhealthy',
      message: 'An unhealthy warning was triggered for the instance',
    },
  },
  {
    kind: 'capacityReservationInterruption',
    rule: 'CapacityReservationInterruption',
    source: 'aws.ec2',
    detailType: 'EC2 Capacity Reservation Instance Interruption Warning',
    detail: 'instance',
    action: 'cordonAndDrain',
    backsOffSpotOffering: false,
    disruptionReason: 'CapacityReservationInterruption',
    messageType: 'capacity_reservation_interrupted',
    event: {
      type: 'Warning',
      reason: 'CapacityReservationInstanceInterrupted',
      message: 'Capacity reservation instance interruption warning was triggered',
    },
  },
] as const satisfies readonly InterruptionKindRow[];

/**
 * A kind of EC2's instance status poll (DescribeInstanceStatus, as Karpenter's instance status
 * controller polls it): not an EventBridge event, so no rule delivers it.
 */
export interface StatusPollKindRow<K extends string = string> {
  readonly kind: K;
  /**
   * `forcefulTermination` is a drain whose deadline is now (the instance is broken: pods are
   * deleted without waiting for PodDisruptionBudgets); `cordonAndDrain` a graceful one.
   */
  readonly action: 'forcefulTermination' | 'cordonAndDrain';
  readonly backsOffSpotOffering: false;
  readonly disruptionReason: string;
  readonly event: InterruptionEventWording;
  /** Karpenter's name of the kind (`karpenter_nodeclaims_disrupted_total`'s `reason`). */
  readonly messageType: string;
  /** The EC2 status check category, `karpenter_interruption_instance_status_unhealthy_total`'s `category`. */
  readonly category: 'InstanceStatus' | 'SystemStatus' | 'EventStatus';
}

/** Karpenter's wording for every unhealthy instance, whatever told of it. */
const UNHEALTHY: InterruptionEventWording = {
  type: 'Warning',
  reason: 'InstanceUnhealthy',
  message: 'An unhealthy warning was triggered for the instance',
};

const STATUS_ROWS = [
  {
    kind: 'instanceStatus',
    action: 'forcefulTermination',
    backsOffSpotOffering: false,
    disruptionReason: 'InstanceStatusFailure',
    messageType: 'instance_status',
    category: 'InstanceStatus',
    event: UNHEALTHY,
  },
  {
    kind: 'systemStatus',
    action: 'forcefulTermination',
    backsOffSpotOffering: false,
    disruptionReason: 'SystemStatusFailure',
    messageType: 'system_status',
    category: 'SystemStatus',
    event: UNHEALTHY,
  },
  {
    kind: 'eventStatus',
    action: 'cordonAndDrain',
    backsOffSpotOffering: false,
    disruptionReason: 'ScheduledEvent',
    messageType: 'event_status',
    category: 'EventStatus',
    event: UNHEALTHY,
  },
] as const satisfies readonly StatusPollKindRow[];

/** A kind Flotilla acts on from an EventBridge event: one row of `INTERRUPTION_KINDS`. */
export type ActionableInterruptionKind = (typeof ROWS)[number]['kind'];

/** A kind of the instance status poll: one row of `STATUS_POLL_KINDS`. */
export type StatusPollKind = (typeof STATUS_ROWS)[number]['kind'];

/** The instance status poll's kinds, one row each. */
export const STATUS_POLL_KINDS: readonly StatusPollKindRow<StatusPollKind>[] = STATUS_ROWS;

/**
 * What an interruption asks for: a row's kind (an EC2 or AWS Health event's, or the instance status
 * poll's), or `noop` for anything else.
 */
export type InterruptionKind = ActionableInterruptionKind | StatusPollKind | 'noop';

/** One interruption event in domain terms (parsed at the edge from its EventBridge shape). */
export interface Interruption {
  readonly kind: InterruptionKind;
  /** The event's id, for logs and Event messages. */
  readonly eventId: string;
  /** Instances the event is about; empty for `noop`. */
  readonly instanceIds: readonly string[];
  /** Why a `noop` is one (unknown detail-type, a state or category that needs no action). */
  readonly why?: string;
}

/** The interruption kinds, one row each, in the order of the stack's rules. */
export const INTERRUPTION_KINDS: readonly InterruptionKindRow<ActionableInterruptionKind>[] = ROWS;

/** The row of a kind. */
export function interruptionKindRow(
  kind: ActionableInterruptionKind | StatusPollKind,
): InterruptionKindRow<ActionableInterruptionKind> | StatusPollKindRow<StatusPollKind> {
  const row =
    INTERRUPTION_KINDS.find((r) => r.kind === kind) ?? STATUS_POLL_KINDS.find((r) => r.kind === kind);
  // Unreachable: the kind type is the table's own.
  if (row === undefined) throw new Error(`interruption kind "${kind}" has no row in INTERRUPTION_KINDS`);
  return row;
}

/** Karpenter's name of a message that asks for nothing (`no_op`). */
export const NO_OP_MESSAGE_TYPE = 'no_op';

/** The row of a kind named by a string (a decision's `interruption`), or undefined for `noop` or any other. */
export function findInterruptionKindRow(
  kind: string,
): InterruptionKindRow<ActionableInterruptionKind> | StatusPollKindRow<StatusPollKind> | undefined {
  return INTERRUPTION_KINDS.find((r) => r.kind === kind) ?? STATUS_POLL_KINDS.find((r) => r.kind === kind);
}

/** The detail-type of each kind's events (e.g. for a simulator that sends them). */
export const DetailType: Readonly<Record<ActionableInterruptionKind, string>> = Object.fromEntries(
  ROWS.map((row) => [row.kind, row.detailType]),
) as Record<ActionableInterruptionKind, string>;

/** One EventBridge rule feeding the interruption queue, as EventBridge writes its pattern. */
export interface InterruptionRulePattern {
  /** The rule's id in the stack, without the `Rule` suffix. */
  readonly rule: string;
  /** The kinds its events parse to. */
  readonly kinds: readonly ActionableInterruptionKind[];
  readonly source: string;
  readonly detailType: string;
  /** Allowed values per `detail` field: the union of its kinds' filters. */
  readonly detail?: Readonly<Record<string, readonly string[]>>;
}

/**
 * The rules of the interruption queue, derived from the rows: one per `rule`, in the order of the
 * rows. Rows of one rule must agree on source, detail-type and detail shape, and either all filter
 * on the same fields or none does (EventBridge ANDs the fields of one pattern).
 * @throws Error naming the rule when its rows disagree.
 */
export function interruptionRulePatterns(
  rows: readonly InterruptionKindRow<ActionableInterruptionKind>[] = INTERRUPTION_KINDS,
): readonly InterruptionRulePattern[] {
  const groups = new Map<string, InterruptionKindRow<ActionableInterruptionKind>[]>();
  for (const row of rows) groups.set(row.rule, [...(groups.get(row.rule) ?? []), row]);
  return [...groups].map(([rule, members]) => {
    const [first, ...rest] = members as [(typeof members)[number], ...typeof members];
    const fields = Object.keys(first.detailFilter ?? {});
    for (const other of rest) {
      const otherFields = Object.keys(other.detailFilter ?? {});
      if (
        other.source !== first.source ||
        other.detailType !== first.detailType ||
        other.detail !== first.detail ||
        otherFields.length !== fields.length ||
        otherFields.some((f) => !fields.includes(f))
      ) {
        throw new Error(
          `interruption rule "${rule}": kinds ${first.kind} and ${other.kind} differ in source, detail-type, detail shape or filtered fields; give them separate rules`,
        );
      }
    }
    const detail =
      fields.length === 0
        ? undefined
        : Object.fromEntries(
            fields.map((field) => [
              field,
              [...new Set(members.flatMap((m) => m.detailFilter?.[field] ?? []))],
            ]),
          );
    return {
      rule,
      kinds: members.map((m) => m.kind),
      source: first.source,
      detailType: first.detailType,
      ...(detail === undefined ? {} : { detail }),
    };
  });
}
