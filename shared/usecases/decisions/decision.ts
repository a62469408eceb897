import type { LogLevel } from '../../runtime/logger.ts';
import { toMetricPoints } from './metrics.ts';
import type { DecisionLine, DecisionOutput } from './sink.ts';
import type { Decision, DecisionKind, PodName } from './types.ts';

export type { ConsistencyDecision } from './consistency.ts';
export type {
  AdoptedDecision,
  DisruptDecision,
  DisruptionPassDecision,
  DriftedDecision,
  NodePoolObservation,
  ObserveDecision,
  UnconsolidatableDecision,
} from './disruption.ts';
export type { HandleInterruptionDecision, IgnoreInterruptionDecision } from './interruption.ts';
export type {
  DeleteDecision,
  InitializeDecision,
  RegisterDecision,
  WaitDecision,
} from './lifecycle.ts';
export { nodeClaimFields } from './lifecycle.ts';
export type { RepairDecision } from './node-repair.ts';
export type {
  FinalizeNodeClassDecision,
  ReservationEndDecision,
  ResolveNodeClassDecision,
  WaitForNodeClaimsDecision,
} from './nodeclass.ts';
export type { UpdateNodeOverlayDecision } from './nodeoverlay.ts';
export type { RejectNodePoolDecision, UpdateNodePoolDecision } from './nodepool.ts';
export type { CompareDecision, ComparedDifference, ComparedSide } from './shadow.ts';
export type { DecisionLine, DecisionObserver, DecisionOutput, MetricsSink } from './sink.ts';

// Decisions are values: every use case describes what it decided (and what came of it) as one
// `Decision`, and writeDecision turns it into the one log line of that decision, with a fixed
// message per kind and fixed keys (STYLE §7), and into its metric points, which go to the metrics
// sink beside the logger (sink.ts). The saved Logs Insights queries (infra/log-queries.ts) and the
// simulator's decision log read these keys; adapters log no decisions.

/** At most this many pod names and instance types go on a line; the counts say how many there were. */
export const DECISION_SAMPLE_SIZE = 10;

export type {
  BatchDecision,
  CleanUpDecision,
  CollectDecision,
  ContinueDecision,
  DeadlineDecision,
  Decision,
  DecisionKind,
  DeleteNodeDecision,
  DrainDecision,
  FinalizeNodeClaimDecision,
  FinalizeNodeDecision,
  FollowUpDecision,
  LaunchBackoffDecision,
  LaunchDecision,
  LaunchOutcome,
  PlanDecision,
  PodName,
  RolloutHoldDecision,
  SchedulePassesDecision,
  SkipDecision,
  StaticCapacityDecision,
  TaintDecision,
  TerminateDecision,
  UnschedulableDecision,
} from './types.ts';

/** The fixed message of each kind's line; no two kinds share one. */
export const DECISION_MESSAGES = {
  skip: 'provisioning skipped',
  batch: 'batch closed',
  launch: 'launch decided',
  unschedulable: 'pods unschedulable',
  plan: 'provisioning planned',
  followUp: 'follow-up scheduled',
  schedulePasses: 'disruption passes scheduled',
  launchBackoff: 'launch backoff',
  rolloutHold: 'rollout hold',
  cleanUp: 'cluster clean-up',
  register: 'registered nodeclaim',
  initialize: 'initialized nodeclaim',
  wait: 'waiting for node',
  delete: 'deleting nodeclaim',
  resolveNodeClass: 'ec2NodeClass resolved',
  waitForNodeClaims: 'ec2NodeClass deletion waiting',
  finalizeNodeClass: 'ec2NodeClass finalized',
  reservationEnd: 'capacity reservation ending',
  updateNodePool: 'updated nodepool status',
  rejectNodePool: 'nodepool failed validation',
  updateNodeOverlay: 'updated nodeoverlay status',
  handleInterruption: 'interruption handled',
  ignoreInterruption: 'interruption ignored',
  deadline: 'termination deadline set',
  deleteNode: 'node deleted',
  taint: 'tainted node',
  drain: 'drain step',
  terminate: 'instance terminated',
  finalizeNode: 'node finalized',
  finalizeNodeClaim: 'deleted nodeclaim',
  continue: 'termination continues later',
  collect: 'garbage collected',
  staticCapacity: 'static nodepool scaled',
  repair: 'node repair',
  consistency: 'nodeclaim consistency checked',
  disrupt: 'disruption command',
  drifted: 'nodeclaim drifted',
  adopted: 'nodeclaim hashes adopted',
  unconsolidatable: 'nodeclaim unconsolidatable',
  disruptionPass: 'disruption pass',
  observe: 'cluster observed',
  compare: 'shadow day compared',
} as const satisfies Record<DecisionKind, string>;

/** Kinds written at another level than `info`. */
const LEVELS: Partial<Record<DecisionKind, LogLevel>> = {
  rejectNodePool: 'warn',
  launchBackoff: 'warn',
  rolloutHold: 'warn',
  cleanUp: 'warn',
  repair: 'warn',
};

/**
 * The line of a decision: `decision` (the kind) and `reason` first, then the decision's own keys as
 * they are, except that `pods` becomes `podCount` and the first DECISION_SAMPLE_SIZE pods as
 * `namespace/name`, and `instanceTypes` the first DECISION_SAMPLE_SIZE names and `instanceTypeCount`.
 * Undefined keys are left out. Pure.
 */
export function toDecisionLine(decision: Decision): DecisionLine {
  const fields: Record<string, unknown> = { decision: decision.kind, reason: decision.reason };
  for (const [key, value] of Object.entries(decision)) {
    if (key === 'kind' || key === 'reason' || value === undefined) continue;
    if (key === 'pods') {
      const pods = value as readonly PodName[];
      fields['podCount'] = pods.length;
      fields['pods'] = pods.slice(0, DECISION_SAMPLE_SIZE).map((p) => `${p.namespace}/${p.name}`);
    } else if (key === 'instanceTypes') {
      const types = value as readonly string[];
      fields['instanceTypes'] = types.slice(0, DECISION_SAMPLE_SIZE);
      fields['instanceTypeCount'] = types.length;
    } else {
      fields[key] = value;
    }
  }
  return { level: LEVELS[decision.kind] ?? 'info', message: DECISION_MESSAGES[decision.kind], fields };
}

/**
 * Writes the decision's one line (toDecisionLine) to `out.logger`, publishes its metric points
 * (toMetricPoints) to `out.metrics` and hands both to the sink's observer, if any. No use case
 * writes a metric otherwise.
 */
export function writeDecision(out: DecisionOutput, decision: Decision): void {
  writeDecisions(out, [decision]);
}

/**
 * Writes decisions made together (a disruption pass's summary and its observation) as
 * writeDecision does, their points dated at one moment and published together: each decision's
 * line, then the points (once, when there are any), then each decision to the observer. A sink
 * without a cluster gets no points.
 */
export function writeDecisions(out: DecisionOutput, decisions: readonly Decision[]): void {
  const { logger, metrics } = out;
  const { cluster } = metrics;
  const timeMs = cluster === undefined ? 0 : metrics.now().getTime();
  const written = decisions.map((decision) => {
    const line = toDecisionLine(decision);
    logger[line.level](line.message, line.fields);
    const points = cluster === undefined ? [] : toMetricPoints(decision, { cluster, timeMs });
    return { decision, points, line };
  });
  const points = written.flatMap((w) => w.points);
  if (points.length > 0) metrics.publish(points);
  for (const w of written) metrics.observe?.(w.decision, logger.fields, w.points, w.line);
}
