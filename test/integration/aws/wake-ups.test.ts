import { GetScheduleCommand, ListSchedulesCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  makeSchedulerWakeUps,
  RELIST_MS,
  wakeUpScheduleName,
} from '../../../shared/adapters/aws/wake-ups.ts';
import { parseQueueMessage } from '../../../shared/messages/pod-event.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_ARNS, STACK_CLUSTER, STACK_NAMES } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// The provisioner's NodePool wake-ups on moto's EventBridge Scheduler, with the provisioner's role
// (the IAM check holds every call, and the role it passes, to its policy from the synthesized
// stack): one one-time schedule per NodePool in the stack's group, at the instant asked, sending a
// wake-up message to the pod-event queue as the stack's wake-up role; moved when the instant
// changes, left alone when it does not, removed when the NodePool has none. moto does not fire
// schedules: the test reads what Scheduler was asked to send, and decodes it as the provisioner does.

let server: Moto;
let admin: SchedulerClient;

beforeEach(async () => {
  server = await moto();
  await resetMoto(server);
  await deployStack(server);
  admin = new SchedulerClient(awsClientConfig(server));
});

const wakeUps = (clock = makeManualClock(new Date('2026-10-24T12:00:00Z'))) =>
  makeSchedulerWakeUps({
    scheduler: new SchedulerClient(awsConfigAs(server, 'provisioner')),
    clock,
    clusterName: STACK_CLUSTER,
    group: STACK_NAMES.wakeUpGroup,
    roleArn: STACK_ARNS.wakeUpRole,
    queueArn: STACK_ARNS.queues.podEvents,
  });

const read = (nodePool: string) =>
  admin.send(
    new GetScheduleCommand({ GroupName: STACK_NAMES.wakeUpGroup, Name: wakeUpScheduleName(nodePool) }),
  );

const names = async () =>
  ((await admin.send(new ListSchedulesCommand({ GroupName: STACK_NAMES.wakeUpGroup }))).Schedules ?? [])
    .map((s) => s.Name)
    .sort();

const T = (iso: string) => Date.parse(iso);

describe("the provisioner's NodePool wake-ups on EventBridge Scheduler", () => {
  it('arms one schedule per NodePool at its instant, moves it, keeps it, and removes it', async () => {
    const armer = wakeUps();
    expect(
      await armer.arm(
        new Map([
          ['web', T('2026-10-25T06:00:00Z')],
          ['batch', T('2026-10-24T18:00:00Z')],
        ]),
      ),
    ).toEqual({ armed: ['web', 'batch'], removed: [] });
    const web = await read('web');
    expect(web).toMatchObject({
      ScheduleExpression: 'at(2026-10-25T06:00:00)',
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      State: 'ENABLED',
      Target: { Arn: STACK_ARNS.queues.podEvents, RoleArn: STACK_ARNS.wakeUpRole },
    });
    const message = parseQueueMessage(web.Target?.Input ?? '');
    expect(message).toEqual({
      ok: true,
      message: {
        kind: 'wakeUp',
        wakeUp: {
          version: 'flotilla.wake-up/v1',
          kind: 'ScheduleWakeUp',
          cluster: STACK_CLUSTER,
          nodePool: 'web',
          at: '2026-10-25T06:00:00.000Z',
        },
      },
    });

    // The same instants again: nothing to do. web's window moves on; batch has no schedule now.
    expect(
      await armer.arm(
        new Map([
          ['web', T('2026-10-25T06:00:00Z')],
          ['batch', T('2026-10-24T18:00:00Z')],
        ]),
      ),
    ).toEqual({ armed: [], removed: [] });
    expect(await armer.arm(new Map([['web', T('2026-10-25T19:00:00Z')]]))).toEqual({
      armed: ['web'],
      removed: ['np-batch'],
    });
    expect((await read('web')).ScheduleExpression).toBe('at(2026-10-25T19:00:00)');
    expect(await names()).toEqual(['np-web']);
  });

  it('takes over from another container: finds what it armed, and removes what is no longer wanted', async () => {
    await wakeUps().arm(
      new Map([
        ['gone', T('2026-10-24T18:00:00Z')],
        ['web', T('2026-10-25T06:00:00Z')],
      ]),
    );
    // A fresh container lists the group first: web is moved in place, gone removed.
    const fresh = wakeUps();
    expect(await fresh.arm(new Map([['web', T('2026-10-25T19:00:00Z')]]))).toEqual({
      armed: ['web'],
      removed: ['np-gone'],
    });
    expect(await names()).toEqual(['np-web']);
    // One that remembers a schedule another container removed since creates it again: at once
    // when its instant moves, and at its next listing of the group when it does not.
    const clock = makeManualClock(new Date('2026-10-24T12:00:00Z'));
    const stale = wakeUps(clock);
    await stale.arm(new Map([['web', T('2026-10-25T19:00:00Z')]]));
    await wakeUps().arm(new Map());
    expect(await stale.arm(new Map([['web', T('2026-10-26T06:00:00Z')]]))).toEqual({
      armed: ['web'],
      removed: [],
    });
    expect((await read('web')).ScheduleExpression).toBe('at(2026-10-26T06:00:00)');
    await wakeUps().arm(new Map());
    expect(await stale.arm(new Map([['web', T('2026-10-26T06:00:00Z')]]))).toEqual({
      armed: [],
      removed: [],
    });
    expect(await names()).toEqual([]);
    clock.advance(RELIST_MS);
    expect(await stale.arm(new Map([['web', T('2026-10-26T06:00:00Z')]]))).toEqual({
      armed: ['web'],
      removed: [],
    });
    expect(await names()).toEqual(['np-web']);
  });

  it('names a long NodePool’s schedule within Scheduler’s 64 characters, one of its own', async () => {
    const long = `pool-${'x'.repeat(240)}`;
    await wakeUps().arm(new Map([[long, T('2026-10-25T06:00:00Z')]]));
    const [name] = await names();
    expect(name).toBe(wakeUpScheduleName(long));
    expect(name?.length).toBeLessThanOrEqual(64);
    expect(wakeUpScheduleName(long)).not.toBe(wakeUpScheduleName(`${long}y`));
  });
});
