import { findCondition, NodePoolConditionType } from '../../core/index.ts';
import type { AlarmState } from '../../ports/alarms.ts';
import type { ClusterNodePool, ConditionUpdate } from '../../ports/cluster.ts';

// Flotilla's own rollout guard (Karpenter has none): a NodePool may name CloudWatch alarms in its
// `flotilla.io/rollout-alarms` annotation (so GitOps owns them, and Flotilla never writes it).
// While any of them is in ALARM, the NodePool's drift and expiration replacements wait; they go on
// once every alarm is out of ALARM. An alarm that cannot be read (it does not exist, CloudWatch
// refused, the annotation does not parse) holds them too: what cannot be read is never taken for
// OK. INSUFFICIENT_DATA is not ALARM. The hold is said by the NodePool's `RolloutPaused`
// condition. This file parses and decides; rollout-hold.ts reads the alarms and writes. Pure.

/** The NodePool annotation naming its alarms: names separated by commas, or a JSON array of names. */
export const ROLLOUT_ALARMS_ANNOTATION = 'flotilla.io/rollout-alarms';
/** CloudWatch's longest alarm name. */
const MAX_ALARM_NAME = 255;
/** At most this many alarms a NodePool (DescribeAlarms takes 100 names a call). */
export const MAX_ROLLOUT_ALARMS = 100;

export type RolloutAlarms =
  | { readonly kind: 'none' }
  | { readonly kind: 'alarms'; readonly names: readonly string[] }
  | { readonly kind: 'invalid'; readonly problem: string };

/** The alarms a NodePool's annotation names, or why it cannot be read. */
export function parseRolloutAlarms(annotations: Readonly<Record<string, string>> | undefined): RolloutAlarms {
  const raw = annotations?.[ROLLOUT_ALARMS_ANNOTATION]?.trim();
  if (raw === undefined || raw === '') return { kind: 'none' };
  const invalid = (why: string) =>
    ({ kind: 'invalid', problem: `${ROLLOUT_ALARMS_ANNOTATION} ${JSON.stringify(raw)}: ${why}` }) as const;
  let names: string[];
  if (raw.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return invalid('starts with [ but is not a JSON array');
    }
    if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) {
      return invalid('is not a JSON array of alarm names');
    }
    names = parsed.map((n) => n.trim());
  } else {
    names = raw.split(',').map((n) => n.trim());
  }
  if (names.some((n) => n === '')) return invalid('names an empty alarm');
  const long = names.find((n) => n.length > MAX_ALARM_NAME);
  if (long !== undefined)
    return invalid(`alarm name "${long.slice(0, 40)}…" is longer than ${MAX_ALARM_NAME}`);
  const unique = [...new Set(names)];
  if (unique.length > MAX_ROLLOUT_ALARMS) return invalid(`names more than ${MAX_ROLLOUT_ALARMS} alarms`);
  return { kind: 'alarms', names: unique };
}

/** What the alarms say of one NodePool's rollouts now. */
export type RolloutVerdict =
  | { readonly hold: false; readonly reason: 'AlarmsClear'; readonly message: string }
  | {
      readonly hold: true;
      readonly reason: 'AlarmFiring' | 'AlarmUnreadable' | 'AlarmsAnnotationInvalid';
      readonly message: string;
      /** The alarms that hold it (firing or unreadable). */
      readonly alarms: readonly string[];
    };

/**
 * The verdict for a NodePool's alarms (not `none`), from the states read (`undefined` when
 * CloudWatch could not be read at all, with `problem` saying why).
 */
export function rolloutVerdict(
  alarms: Exclude<RolloutAlarms, { kind: 'none' }>,
  states: ReadonlyMap<string, AlarmState> | undefined,
  problem?: string,
): RolloutVerdict {
  if (alarms.kind === 'invalid') {
    return {
      hold: true,
      reason: 'AlarmsAnnotationInvalid',
      message: `drift and expiration replacements wait: ${alarms.problem}`,
      alarms: [],
    };
  }
  if (states === undefined) {
    return {
      hold: true,
      reason: 'AlarmUnreadable',
      message: `drift and expiration replacements wait: alarm(s) ${alarms.names.join(', ')} could not be read (${problem ?? 'no answer'})`,
      alarms: alarms.names,
    };
  }
  const firing = alarms.names.filter((n) => states.get(n) === 'ALARM');
  if (firing.length > 0) {
    return {
      hold: true,
      reason: 'AlarmFiring',
      message: `drift and expiration replacements wait: alarm(s) ${firing.join(', ')} in ALARM`,
      alarms: firing,
    };
  }
  const missing = alarms.names.filter((n) => !states.has(n));
  if (missing.length > 0) {
    return {
      hold: true,
      reason: 'AlarmUnreadable',
      message: `drift and expiration replacements wait: alarm(s) ${missing.join(', ')} not found in CloudWatch`,
      alarms: missing,
    };
  }
  return {
    hold: false,
    reason: 'AlarmsClear',
    message: `drift and expiration replacements go on: no alarm of ${alarms.names.join(', ')} in ALARM`,
  };
}

/**
 * The condition to write for a verdict, or undefined when the NodePool already says it. A NodePool
 * that names no alarms and never had the condition gets none; one whose annotation went gets it
 * False (`AlarmsRemoved`) once.
 */
export function rolloutCondition(
  pool: ClusterNodePool,
  verdict: RolloutVerdict | undefined,
): ConditionUpdate | undefined {
  const current = findCondition(pool.conditions, NodePoolConditionType.rolloutPaused);
  const wanted: ConditionUpdate | undefined =
    verdict === undefined
      ? current === undefined || current.status === 'False'
        ? undefined
        : {
            type: NodePoolConditionType.rolloutPaused,
            status: 'False',
            reason: 'AlarmsRemoved',
            message: `drift and expiration replacements go on: the NodePool names no alarms (${ROLLOUT_ALARMS_ANNOTATION})`,
          }
      : {
          type: NodePoolConditionType.rolloutPaused,
          status: verdict.hold ? 'True' : 'False',
          reason: verdict.reason,
          message: verdict.message,
        };
  if (wanted === undefined) return undefined;
  if (current === undefined && wanted.status === 'False' && verdict?.reason === 'AlarmsClear') {
    // Never held: the condition is first written when a hold starts.
    return undefined;
  }
  return current?.status === wanted.status &&
    current.reason === wanted.reason &&
    current.message === wanted.message
    ? undefined
    : wanted;
}
