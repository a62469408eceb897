import { createHash } from 'node:crypto';
import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ListSchedulesCommand,
  type SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { type WakeUp, wakeUpVersion } from '../../messages/pod-event.ts';
import type { Clock } from '../../ports/clock.ts';
import { CloudApiError } from '../../ports/errors.ts';
import type { WakeUps } from '../../ports/wake-ups.ts';
import { call } from './errors.ts';

// NodePools' wake-ups as EventBridge Scheduler schedules: one one-time schedule per NodePool in the
// stack's schedule group, `at(<instant>)` in UTC (Flotilla reads each window's cron in its own
// zone, daylight-saving changes included, and arms the instant it computes), sending a wake-up
// message to the pod-event queue through the stack's scheduler role. A container remembers what it
// armed, and lists the group on its first call and every RELIST_MS after: a schedule of a NodePool
// gone since is removed, and one another container removed is armed again.

/** Whether `error` is Scheduler's answer `code`. */
const answered = (error: unknown, code: string) => error instanceof CloudApiError && error.awsCode === code;

/** How often a container lists the group again, whatever it remembers. */
export const RELIST_MS = 15 * 60_000;

/** Prefix of the NodePools' schedules in the group. */
const PREFIX = 'np-';
/** Scheduler's longest schedule name. */
const MAX_NAME = 64;

/** The schedule of `nodePool`: `np-<name>`, or a prefix of it and a hash when that is too long. */
export function wakeUpScheduleName(nodePool: string): string {
  const name = `${PREFIX}${nodePool}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(nodePool).digest('hex').slice(0, 16);
  return `${name.slice(0, MAX_NAME - hash.length - 1)}-${hash}`;
}

export interface SchedulerWakeUpsOptions {
  readonly scheduler: Pick<SchedulerClient, 'send'>;
  readonly clusterName: string;
  /** The stack's schedule group. */
  readonly group: string;
  /** The role Scheduler sends the message as. */
  readonly roleArn: string;
  /** The pod-event queue. */
  readonly queueArn: string;
  readonly clock: Clock;
}

export function makeSchedulerWakeUps(options: SchedulerWakeUpsOptions): WakeUps {
  const { scheduler, group } = options;
  /** Schedule name → the instant it is armed at (NaN: found in the group, instant not read). */
  let armed = new Map<string, number>();
  let listedAtMs = Number.NEGATIVE_INFINITY;

  /** The group's schedules, each at the instant remembered for it (NaN when none is). */
  const listed = async (): Promise<Map<string, number>> => {
    const found = new Map<string, number>();
    let token: string | undefined;
    do {
      const next = token;
      const out = await call('scheduler:ListSchedules', () =>
        scheduler.send(
          new ListSchedulesCommand({
            GroupName: group,
            NamePrefix: PREFIX,
            ...(next === undefined ? {} : { NextToken: next }),
          }),
        ),
      );
      for (const s of out.Schedules ?? []) {
        if (s.Name !== undefined) found.set(s.Name, armed.get(s.Name) ?? Number.NaN);
      }
      token = out.NextToken;
    } while (token !== undefined);
    return found;
  };

  const put = async (name: string, nodePool: string, atMs: number, exists: boolean): Promise<void> => {
    const at = new Date(atMs).toISOString();
    const message: WakeUp = {
      version: wakeUpVersion,
      kind: 'ScheduleWakeUp',
      cluster: options.clusterName,
      nodePool,
      at,
    };
    const input = {
      Name: name,
      GroupName: group,
      Description: `Flotilla ${options.clusterName}: provisioning run when nodePool ${nodePool}'s schedules change what they hold`,
      ScheduleExpression: `at(${at.slice(0, 19)})`,
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' as const },
      Target: { Arn: options.queueArn, RoleArn: options.roleArn, Input: JSON.stringify(message) },
      State: 'ENABLED' as const,
    };
    const update = () =>
      call('scheduler:UpdateSchedule', () => scheduler.send(new UpdateScheduleCommand(input)));
    const create = () =>
      call('scheduler:CreateSchedule', () =>
        scheduler.send(new CreateScheduleCommand({ ...input, ActionAfterCompletion: 'NONE' })),
      );
    // What this container knows may be stale (another container armed or removed it): the other
    // call follows the answer that says so.
    try {
      await (exists ? update() : create());
    } catch (error) {
      if (exists && answered(error, 'ResourceNotFoundException')) await create();
      else if (!exists && answered(error, 'ConflictException')) await update();
      else throw error;
    }
  };

  const remove = async (name: string): Promise<void> => {
    try {
      await call('scheduler:DeleteSchedule', () =>
        scheduler.send(new DeleteScheduleCommand({ Name: name, GroupName: group })),
      );
    } catch (error) {
      if (!answered(error, 'ResourceNotFoundException')) throw error;
    }
  };

  return {
    async arm(wanted) {
      const nowMs = options.clock.now().getTime();
      if (nowMs - listedAtMs >= RELIST_MS) {
        armed = await listed();
        listedAtMs = nowMs;
      }
      const known = armed;
      const want = new Map([...wanted].map(([pool, atMs]) => [wakeUpScheduleName(pool), { pool, atMs }]));
      const changed: string[] = [];
      const removed: string[] = [];
      for (const [name, { pool, atMs }] of want) {
        if (known.get(name) === atMs) continue;
        await put(name, pool, atMs, known.has(name));
        known.set(name, atMs);
        changed.push(pool);
      }
      for (const name of [...known.keys()]) {
        if (want.has(name)) continue;
        await remove(name);
        known.delete(name);
        removed.push(name);
      }
      return { armed: changed, removed };
    },
  };
}
