import { toEmfDocuments } from '../../runtime/emf.ts';
import type { LogFields, Logger, LogLevel } from '../../runtime/logger.ts';
import { MetricDimension, type MetricPoint } from '../../runtime/metrics.ts';
import { toMetricPoints } from './metrics.ts';
import type { Decision, DecisionKind, PodName } from './types.ts';

export type {
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
export type { RepairDecision } from './node-repair.ts';
export type {
  FinalizeNodeClassDecision,
  ReservationEndDecision,
  ResolveNodeClassDecision,
  WaitForNodeClaimsDecision,
} from './nodeclass.ts';
export type { UpdateNodeOverlayDecision } from './nodeoverlay.ts';
export type { RejectNodePoolDecision, UpdateNodePoolDecision } from './nodepool.ts';

// Decisions are values: every use case describes what it decided (and what came of it) as one
// `Decision`, and writeDecision turns it into the one log line of that decision, with a fixed
// message per kind and fixed keys (STYLE §7). The saved Logs Insights queries (infra/log-queries.ts)
// and the simulator's decision log read these keys; adapters log no decisions.

/** At most this many pod names and instance types go on a line; the counts say how many there were. */
export const DECISION_SAMPLE_SIZE = 10;

export type {
  BatchDecision,
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
  disrupt: 'disruption command',
  drifted: 'nodeclaim drifted',
  unconsolidatable: 'nodeclaim unconsolidatable',
  disruptionPass: 'disruption pass',
  observe: 'cluster observed',
} as const satisfies Record<DecisionKind, string>;

/** Kinds written at another level than `info`. */
const LEVELS: Partial<Record<DecisionKind, LogLevel>> = {
  rejectNodePool: 'warn',
  launchBackoff: 'warn',
  repair: 'warn',
};

/** A decision's line: its level, fixed message and fields. */
export interface DecisionLine {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: LogFields;
}

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
 * Receives each decision written through an observed logger, with the fields its logger adds and
 * the metric points it yielded (toMetricPoints).
 */
export type DecisionObserver = (
  decision: Decision,
  context: LogFields,
  metrics: readonly MetricPoint[],
) => void;

const observers = new WeakMap<Logger, (decision: Decision, metrics: readonly MetricPoint[]) => void>();

/**
 * A logger that writes as `logger` does and also hands every decision written through it (or its
 * children) to `observer`, with the fields the children added (e.g. `holder`): the simulator reads
 * decisions as values this way.
 */
export function observeDecisions(
  logger: Logger,
  observer: DecisionObserver,
  context: LogFields = {},
): Logger {
  const observed: Logger = {
    debug: (message, fields) => logger.debug(message, fields),
    info: (message, fields) => logger.info(message, fields),
    warn: (message, fields) => logger.warn(message, fields),
    error: (message, fields) => logger.error(message, fields),
    child: (fields) => observeDecisions(logger.child(fields), observer, { ...context, ...fields }),
    fields: logger.fields,
    now: () => logger.now(),
    metrics: (fields) => logger.metrics(fields),
  };
  observers.set(observed, (decision, metrics) => observer(decision, context, metrics));
  return observed;
}

/**
 * The metric points of a decision written through `logger`: the cluster its lines name, at its
 * clock's time (or `timeMs`). None when the logger names no cluster (a logger of tests and scripts).
 */
export function decisionMetrics(
  logger: Logger,
  decision: Decision,
  timeMs: number = logger.now().getTime(),
): MetricPoint[] {
  const cluster = logger.fields[MetricDimension.cluster];
  if (typeof cluster !== 'string' || cluster === '') return [];
  return toMetricPoints(decision, { cluster, timeMs });
}

/**
 * Writes the decision's one line (toDecisionLine), then its metrics (decisionMetrics) as Embedded
 * Metric Format documents through the same logger, and hands both to the logger's observer, if any.
 * No use case writes a metric otherwise.
 */
export function writeDecision(logger: Logger, decision: Decision): void {
  writeDecisions(logger, [decision]);
}

/**
 * Writes decisions made together (a disruption pass's summary and its observation) as
 * writeDecision does, their metrics at one moment and packed into EMF documents together: each
 * decision's line, then the documents, then each decision to the observer.
 */
export function writeDecisions(logger: Logger, decisions: readonly Decision[]): void {
  const timeMs = logger.now().getTime();
  const written = decisions.map((decision) => {
    const line = toDecisionLine(decision);
    logger[line.level](line.message, line.fields);
    return { decision, metrics: decisionMetrics(logger, decision, timeMs) };
  });
  for (const document of toEmfDocuments(written.flatMap((w) => w.metrics))) logger.metrics(document);
  const observer = observers.get(logger);
  for (const w of written) observer?.(w.decision, w.metrics);
}
