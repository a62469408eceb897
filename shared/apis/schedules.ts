// Flotilla's own NodePool schedules: the annotation `flotilla.io/schedules`, a JSON array so GitOps
// owns it (Flotilla never writes it), each entry
//   { "name": "nightly", "start": "0 20 * * *", "end": "0 7 * * *", "timeZone": "Europe/Berlin",
//     "limits": { "cpu": "0" } }   or   ..., "noNewNodes": true }
// and on a static NodePool (spec.replicas)   ..., "replicas": 0 }
// An annotation that does not read is kept as the problem it is: the NodePool then launches
// nothing, rather than launching as if it had no schedule.
import { z } from 'zod';
import {
  isTimeZone,
  type PoolSchedule,
  type PoolSchedules,
  parseCron,
  parseResourceList,
  ValidationError,
} from '../core/index.ts';

export const SCHEDULES_ANNOTATION = 'flotilla.io/schedules';
/** At most this many schedules a NodePool. */
export const MAX_SCHEDULES = 10;
/** The most replicas a schedule may set (the NodePool CRD's bound on spec.replicas). */
const MAX_REPLICAS = 2_147_483_647;

const entrySchema = z.strictObject({
  name: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
      'a lower-case name of up to 63 letters, digits and dashes',
    ),
  start: z.string().min(1),
  end: z.string().min(1),
  timeZone: z.string().min(1),
  limits: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  noNewNodes: z.literal(true).optional(),
  replicas: z.number().int().min(0).max(MAX_REPLICAS).optional(),
});

/** A NodePool's schedules from its annotations, or undefined when it names none. */
export function parseSchedules(
  annotations: Readonly<Record<string, string>> | undefined,
  nodePool: string,
  isStatic: boolean,
): PoolSchedules | undefined {
  const raw = annotations?.[SCHEDULES_ANNOTATION];
  if (raw === undefined) return undefined;
  const invalid = (why: string): PoolSchedules => ({
    kind: 'invalid',
    problem: `annotation ${SCHEDULES_ANNOTATION}: ${why}; the NodePool ${isStatic ? 'keeps the NodeClaims it has, launching and removing none for its replicas,' : 'launches nothing'} until it is fixed`,
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return invalid('is not JSON');
  }
  const list = z.array(entrySchema).max(MAX_SCHEDULES).safeParse(parsed);
  if (!list.success) {
    const issue = list.error.issues[0];
    return invalid(
      `${issue?.path.length ? `[${issue.path.join('.')}] ` : ''}${issue?.message ?? 'does not read'}`,
    );
  }
  const schedules: PoolSchedule[] = [];
  for (const [i, e] of list.data.entries()) {
    const at = `[${i}] (${e.name})`;
    if (schedules.some((s) => s.name === e.name)) return invalid(`${at} repeats the name`);
    const startCron = parseCron(e.start);
    if ('problem' in startCron) return invalid(`${at} start ${startCron.problem}`);
    const endCron = parseCron(e.end);
    if ('problem' in endCron) return invalid(`${at} end ${endCron.problem}`);
    if (!isTimeZone(e.timeZone)) return invalid(`${at} timeZone "${e.timeZone}" is not an IANA time zone`);
    const holds = [e.limits, e.noNewNodes, e.replicas].filter((h) => h !== undefined).length;
    if (isStatic ? e.replicas === undefined || holds > 1 : e.replicas !== undefined || holds !== 1) {
      return invalid(
        isStatic
          ? `${at} sets replicas, and only replicas, on a static NodePool (spec.replicas)`
          : `${at} sets exactly one of limits and noNewNodes (replicas only on a static NodePool)`,
      );
    }
    let hold: PoolSchedule['hold'];
    if (e.replicas !== undefined) {
      hold = { kind: 'replicas', replicas: e.replicas };
    } else if (e.limits === undefined) {
      hold = { kind: 'noNewNodes' };
    } else {
      try {
        hold = {
          kind: 'limits',
          limits: parseResourceList(e.limits, {
            object: `nodePool "${nodePool}"`,
            field: `${SCHEDULES_ANNOTATION}${at}.limits`,
          }),
        };
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        return invalid(`${at} limits: ${error.message}`);
      }
    }
    schedules.push({
      name: e.name,
      start: e.start,
      startCron,
      end: e.end,
      endCron,
      timeZone: e.timeZone,
      hold,
    });
  }
  return { kind: 'schedules', schedules };
}
