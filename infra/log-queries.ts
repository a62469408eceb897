/**
 * CloudWatch Logs Insights queries shipped with the stack (AWS::Logs::QueryDefinition), over the
 * log groups of every Flotilla Lambda. Log lines are the JSON of shared/runtime/logger.ts:
 * `level`, `time`, `message` plus fields; Logs Insights discovers JSON fields by name, and nested
 * arrays as `field.0`, `field.1`, ….
 *
 * The queries read the decision lines of shared/usecases/decision.ts (STYLE §7: one line per
 * decision, a fixed message per kind, fixed keys: `decision` (the kind), `reason`, and where they
 * apply `nodePool`, `nodeClaim`, `podCount` and `pods` (the first 10), `instanceTypes`,
 * `instanceType`, `capacityType`, `zone`, `pricePerHour`, …). test/infra/log-queries.test.ts runs
 * every query's fields and filter against the lines the use cases write. The lines they match:
 * - every decision (`decision` is present, on a line that is not a metrics line);
 * - launches: `decision: 'launch'` with `outcome: 'launched'`, `nodePool`, `instanceType`,
 *   `capacityType`, `zone` and `pricePerHour`;
 * - unschedulable pods: `decision: 'unschedulable'`, one line per reason, with `podCount` and the
 *   first pods;
 * - interruptions: `decision: 'handleInterruption'`, one line per instance of an event, with
 *   `interruption` (its kind), `action`, `instanceId` and `nodeClaim`;
 * - disruptions: `decision: 'disrupt'`, one line per step of a command, with `method`, `reason`,
 *   `action`, `outcome`, `candidates` (each `nodeClaim`, `nodePool`, `instanceType`, …) and the
 *   `pricePerHourBefore` and `pricePerHourAfter`.
 */
export interface LogQuery {
  /** Name in the console's saved queries; the stack prefixes `flotilla/<cluster>/`. */
  readonly name: string;
  readonly queryString: string;
}

export const LOG_QUERIES: readonly LogQuery[] = [
  {
    name: 'decisions-by-reason',
    queryString: [
      'fields @timestamp, message, decision, reason, nodePool',
      // A metrics line's dimensions may hold a `decision` too (Karpenter's label of a disruption
      // decision): it is no decision line.
      "filter ispresent(decision) and message != 'metrics'",
      'stats count(*) as decisions by message, decision, reason',
      'sort decisions desc',
    ].join('\n| '),
  },
  {
    name: 'launches-by-nodepool-and-instance-type',
    queryString: [
      'fields @timestamp, nodePool, instanceType, capacityType, zone, pricePerHour',
      "filter decision = 'launch' and outcome = 'launched'",
      'stats count(*) as launches, sum(pricePerHour) as addedPerHour by nodePool, instanceType, capacityType',
      'sort launches desc',
    ].join('\n| '),
  },
  {
    name: 'unschedulable-pods',
    queryString: [
      'fields @timestamp, podCount, reason, `pods.0` as firstPod, `pods.1` as secondPod',
      "filter decision = 'unschedulable'",
      'sort @timestamp desc',
      'limit 200',
    ].join('\n| '),
  },
  {
    name: 'interruptions-handled',
    queryString: [
      'fields @timestamp, interruption, action, instanceId, nodeClaim',
      "filter decision = 'handleInterruption'",
      'stats count(*) as events by interruption, action',
      'sort events desc',
    ].join('\n| '),
  },
  {
    name: 'disruptions',
    queryString: [
      'fields @timestamp, method, reason, action, outcome, `candidates.0.nodeClaim` as firstCandidate, `candidates.0.nodePool` as nodePool, pricePerHourBefore, pricePerHourAfter',
      "filter decision = 'disrupt'",
      'sort @timestamp desc',
      'limit 200',
    ].join('\n| '),
  },
];
