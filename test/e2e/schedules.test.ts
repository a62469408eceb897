import { GetScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { describe, expect, it } from 'vitest';
import { makeSchedulerWakeUps, wakeUpScheduleName } from '../../shared/adapters/aws/wake-ups.ts';
import { wallClockMs } from '../../shared/core/index.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { STACK_ARNS, STACK_NAMES } from '../harness/aws/stack.ts';
import { awsClientConfig } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { launched, ProvisionerE2E } from './provisioner-fixture.ts';

// NodePool schedules (flotilla.io/schedules) on the real API server and moto: a NodePool annotated
// as a user writes it, with a window open now, launches nothing (or within the window's limits)
// for pending pods, which are told which schedule holds them and until when; the lifecycle pass
// writes the NodePool's ScheduleHolds condition.

const e2e = new ProvisionerE2E('sched');
const { id, namespace } = e2e;

/** Two hours ahead of Auckland's wall clock now: the window's end, always within a day. */
const endHour = (new Date(wallClockMs(Date.now(), 'Pacific/Auckland')).getUTCHours() + 2) % 24;
const hh = String(endHour).padStart(2, '0');

/** A window open now (it opened this minute), closing at `endHour`:00 Auckland time. */
const openNow = (hold: Record<string, unknown>) => ({
  'flotilla.io/schedules': JSON.stringify([
    { name: 'freeze', start: '* * * * *', end: `0 ${endHour} * * *`, timeZone: 'Pacific/Auckland', ...hold },
  ]),
});

describe('NodePool schedules (moto + kube-apiserver + kube-scheduler)', () => {
  it('launches nothing while a window holds no new nodes, and says so on the pods and the NodePool', async () => {
    const pool = await e2e.createPool('frozen', 'frozen', {
      instanceTypes: ['m5.large'],
      annotations: openNow({ noNewNodes: true }),
    });
    await e2e.deploy('frozen', 'frozen', 2, '500m');
    const result = await e2e.run(`sched-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims.filter((c) => c.nodePool === pool))).toEqual([]);
    expect(await e2e.instancesOf(pool)).toEqual([]);
    const events = await e2e.failedSchedulingEvents('frozen', 2);
    for (const e of events) {
      expect(e.message).toMatch(
        new RegExp(
          `nodePool ${pool}: schedule "freeze" holds no new nodes until \\d{4}-\\d\\d-\\d\\dT\\d\\d:00:00Z \\(${hh}:00 Pacific/Auckland\\)`,
        ),
      );
    }
    const condition = await waitFor(
      'the ScheduleHolds condition',
      async () => {
        const found = (await e2e.env.cluster.nodePools()).items.find((p) => p.pool.name === pool);
        return found?.conditions.find((c) => c.type === 'ScheduleHolds');
      },
      { timeoutMs: 15_000 },
    );
    expect(condition).toMatchObject({ status: 'True', reason: 'WindowOpen' });
    expect(condition.message).toMatch(/^schedule "freeze" holds no new nodes until /);
  });

  it('arms the NodePool a wake-up at its window’s end on EventBridge Scheduler, as the provisioner’s role', async () => {
    const pool = await e2e.createPool('woken', 'woken', {
      instanceTypes: ['m5.large'],
      annotations: openNow({ noNewNodes: true }),
    });
    const { server } = e2e.env;
    const wakeUps = makeSchedulerWakeUps({
      scheduler: new SchedulerClient(awsConfigAs(server, 'provisioner')),
      clusterName: CLUSTER,
      group: STACK_NAMES.wakeUpGroup,
      roleArn: STACK_ARNS.wakeUpRole,
      queueArn: STACK_ARNS.queues.podEvents,
      clock: systemClock,
    });
    await e2e.provisioner({}, { wakeUps }).controllersPass(`wake-${id}`, new Date());
    const schedule = await new SchedulerClient(awsClientConfig(server)).send(
      new GetScheduleCommand({ GroupName: STACK_NAMES.wakeUpGroup, Name: wakeUpScheduleName(pool) }),
    );
    const at = /^at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)$/.exec(schedule.ScheduleExpression ?? '')?.[1];
    const atMs = Date.parse(`${at}Z`);
    // The window's end: the next endHour:00 on Auckland's clock, within a day.
    expect(new Date(wallClockMs(atMs, 'Pacific/Auckland')).getUTCHours()).toBe(endHour);
    expect(new Date(wallClockMs(atMs, 'Pacific/Auckland')).getUTCMinutes()).toBe(0);
    expect(atMs - Date.now()).toBeGreaterThan(0);
    expect(atMs - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
    expect(schedule.Target).toMatchObject({
      Arn: STACK_ARNS.queues.podEvents,
      RoleArn: STACK_ARNS.wakeUpRole,
    });
  });

  it("holds a static NodePool to a window's replicas, and says which schedule does", async () => {
    const pool = await e2e.createPool('static', 'fixed', {
      instanceTypes: ['m5.large'],
      replicas: 3,
      annotations: openNow({ replicas: 1 }),
    });
    const result = await e2e.run(`sched-static-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims.filter((c) => c.nodePool === pool))).toHaveLength(1);
    expect(await e2e.instancesOf(pool)).toHaveLength(1);
    const line = e2e.logLines.find((l) => l['decision'] === 'staticCapacity' && l['nodePool'] === pool);
    expect(line).toMatchObject({ action: 'launch', replicas: 1, count: 1 });
    expect(String(line?.['replicasHeldBy'])).toMatch(
      new RegExp(`^schedule "freeze" holds replicas 1 until .* \\(${hh}:00 Pacific/Auckland\\)$`),
    );
  });

  it("holds a NodePool to a window's limits, naming the schedule beside them", async () => {
    const pool = await e2e.createPool('capped', 'capped', {
      instanceTypes: ['m5.large'],
      limits: { cpu: '100' },
      annotations: openNow({ limits: { cpu: '2' } }),
    });
    // One pod per m5.large: the window's 2 cpu hold one node.
    await e2e.deploy('capped', 'capped', 2, '1500m');
    const result = await e2e.run(`sched-capped-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims.filter((c) => c.nodePool === pool))).toHaveLength(1);
    const [event] = await e2e.failedSchedulingEvents('capped', 1);
    expect(event?.message).toContain(
      `nodePool ${pool}: limits cpu 2 (schedule "freeze" holds limits cpu 2 until `,
    );
    expect(
      (await e2e.env.core.listNamespacedPod({ namespace, labelSelector: 'app=capped' })).items,
    ).toHaveLength(2);
  });
});
