/**
 * CloudWatch Logs Insights queries shipped with the stack (AWS::Logs::QueryDefinition), over the
 * log groups of every Flotilla Lambda. Log lines are the JSON of shared/runtime/logger.ts:
 * `level`, `time`, `message` plus fields; Logs Insights discovers JSON fields by name, and nested
 * arrays as `field.0`, `field.1`, ….
 *
 * The queries rely on the logging rule of STYLE §7 (one line per decision with a fixed message
 * and the keys `decision`, `reason`, `nodePool`, `instanceTypes`, …). The lines they match:
 * - any line with a `decision` field (e.g. the launcher's `launch decided`);
 * - launches: message `launch decided` with `decision: 'launched'`, `nodePool`, `capacityType`,
 *   `instanceType` when the launched type is known, else the cheapest candidate `instanceTypes.0`;
 * - unschedulable pods: a message containing `unschedulable`, with `pod`, `nodePool`, `reason`;
 * - interruptions: a message starting with `interruption`, with `kind`, `action`, `instanceId`,
 *   `nodeClaim`.
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
      'filter ispresent(decision)',
      'stats count(*) as decisions by message, decision, reason',
      'sort decisions desc',
    ].join('\n| '),
  },
  {
    name: 'launches-by-nodepool-and-instance-type',
    queryString: [
      'fields @timestamp, nodePool, capacityType, coalesce(instanceType, `instanceTypes.0`) as type',
      "filter message = 'launch decided' and decision = 'launched'",
      'stats count(*) as launches by nodePool, type, capacityType',
      'sort launches desc',
    ].join('\n| '),
  },
  {
    name: 'unschedulable-pods',
    queryString: [
      'fields @timestamp, pod, nodePool, reason, message',
      'filter message like /unschedulable/',
      'sort @timestamp desc',
      'limit 200',
    ].join('\n| '),
  },
  {
    name: 'interruptions-handled',
    queryString: [
      'fields @timestamp, kind, action, instanceId, nodeClaim',
      'filter message like /^interruption/',
      'stats count(*) as events by kind, action',
      'sort events desc',
    ].join('\n| '),
  },
];
