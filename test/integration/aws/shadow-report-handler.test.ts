import {
  CloudWatchLogsClient,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/core/errors.ts';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { METRIC_NAMESPACE } from '../../../shared/runtime/metrics.ts';
import type { CompareDecision } from '../../../shared/usecases/decisions/decision.ts';
import { compareShadow } from '../../../shared/usecases/shadow/compare.ts';
import { compareDecisionOf, utcDayBefore } from '../../../shared/usecases/shadow/day.ts';
import { LINES, observe } from '../../fixtures/shadow-lines.ts';
import { deployShadowStack, SHADOW_STACK_NAMES, STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { asLambda, capturingStdout } from './lambda-cold-start.ts';

// The shadow stack's shadow-report Lambda as deployed, on moto: its handler cold-starts with the
// environment the stack gives it and its role's policy from the synthesized shadow stack (the IAM
// check holds its FilterLogEvents to the two log groups), reads the day before's lines of the
// shadow's provisioner and disruption log groups, and writes the day's decision and its metrics as
// EMF lines dated at that day's start. Set-up plays the shadow's Lambdas writing their lines.
// moto answers a JSON filter pattern with every event, so the comparison's own reading of the
// lines (lines.ts) is what picks the shadow lines here, as in shadow-logs.test.ts.

let server: Moto;
let logs: CloudWatchLogsClient;
let handler: (event: unknown) => Promise<CompareDecision>;
const now = Date.now();
const yesterday = utcDayBefore(now);
/** The fixture's lines (2026-12-03, 10:00 to 12:00 UTC), moved to the same hours of yesterday. */
const shift = yesterday.fromMs - Date.parse('2026-12-03T00:00:00Z');
const moved = (line: { time: string }) => new Date(Date.parse(line.time) + shift).toISOString();
const shifted = LINES.map((l) => ({ ...l, time: moved(l) }));

async function put(logGroupName: string, lines: readonly Record<string, unknown>[]): Promise<void> {
  const logStreamName = `stream-${Math.random().toString(36).slice(2)}`;
  await logs.send(new CreateLogStreamCommand({ logGroupName, logStreamName }));
  await logs.send(
    new PutLogEventsCommand({
      logGroupName,
      logStreamName,
      logEvents: lines
        .map((l) => ({ timestamp: Date.parse(String(l['time'])), message: JSON.stringify(l) }))
        .sort((a, b) => a.timestamp - b.timestamp),
    }),
  );
}

const outOfDay = (time: number) => ({ ...observe('10:00', 99), time: new Date(time).toISOString() });

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  await deployShadowStack(server);
  logs = new CloudWatchLogsClient(awsClientConfig(server));
  const byDisruption = (l: { decision?: unknown }) => l.decision === 'observe' || l.decision === 'disrupt';
  // The day's lines, and observations just outside what a run reads on either side: before the
  // day before (read for what it pairs) and after the day (never read).
  await put(SHADOW_STACK_NAMES.logGroups.disruption, [
    outOfDay(yesterday.fromMs - 86_400_000 - 1),
    ...shifted.filter(byDisruption),
    outOfDay(yesterday.toMs),
  ]);
  await put(
    SHADOW_STACK_NAMES.logGroups.provisioner,
    shifted.filter((l) => !byDisruption(l)),
  );
  Object.assign(process.env, {
    AWS_REGION: server.region,
    AWS_ENDPOINT_URL: server.endpoint,
    [EnvVar.clusterName]: STACK_CLUSTER,
    [EnvVar.mode]: 'shadow',
    [EnvVar.logLevel]: 'info',
    [EnvVar.shadowLogGroups]: `${SHADOW_STACK_NAMES.logGroups.provisioner},${SHADOW_STACK_NAMES.logGroups.disruption}`,
  });
  const cold: string[] = [];
  ({ handler } = await capturingStdout(cold, () =>
    asLambda(server, 'shadow-shadow-report', () => import('../../../lambdas/shadow-report/handler.ts')),
  ));
});

afterAll(() => logs?.destroy());

/** One invocation, with what it printed. */
async function invoke(
  event: unknown,
): Promise<{ decision: CompareDecision; lines: Record<string, unknown>[] }> {
  const out: string[] = [];
  const decision = await capturingStdout(out, () =>
    asLambda(server, 'shadow-shadow-report', () => handler(event)),
  );
  const lines = out
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { decision, lines };
}

describe('the shadow-report Lambda', () => {
  it('compares the day before the schedule fires, as the report does, and writes its figures dated that day', async () => {
    const firedAt = new Date(yesterday.toMs + 20 * 60_000).toISOString();
    const { decision, lines } = await invoke({
      version: '0',
      id: 'e1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: firedAt.replace(/\.\d{3}Z$/, 'Z'),
      region: server.region,
      resources: [],
      detail: {},
    });
    // Exactly the day's lines of both groups: the two just outside it are left out.
    expect(decision).toEqual(
      compareDecisionOf(yesterday, compareShadow(shifted), {
        read: LINES.length,
        unreadable: 0,
      }),
    );
    expect(decision.live?.pricePerHour).toBeCloseTo(2.85 / 2, 6);
    const line = lines.find((l) => l['message'] === 'shadow day compared');
    expect(line).toMatchObject({
      lambda: 'shadow-report',
      cluster: STACK_CLUSTER,
      shadow: true,
      decision: 'compare',
      reason: 'compared',
      day: yesterday.day,
    });
    const emf = lines.filter((l) => l['message'] === 'metrics');
    expect(emf.length).toBeGreaterThan(0);
    for (const doc of emf) {
      expect(doc['cluster']).toBe(`${STACK_CLUSTER}/shadow`);
      // Dated in the day's last minute.
      expect(doc['_aws']).toMatchObject({ Timestamp: yesterday.toMs - 60_000 });
      for (const d of (doc['_aws'] as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics) {
        expect(d.Namespace).toBe(METRIC_NAMESPACE);
      }
    }
    const cost = emf.filter((d) => d['shadow_cost_per_hour'] !== undefined);
    expect(cost.map((d) => [d['side'], d['shadow_cost_per_hour']])).toEqual([
      ['live', decision.live?.pricePerHour],
      ['flotilla', decision.flotilla?.pricePerHour],
    ]);
  });

  it('compares a day asked for, and refuses a day that has not ended or an event it does not know', async () => {
    const { decision } = await invoke({ day: yesterday.day });
    expect(decision.reason).toBe('compared');
    // Three days back holds one observation only, an instant: no hours to average over.
    const before = new Date(yesterday.fromMs - 2 * 86_400_000).toISOString().slice(0, 10);
    expect((await invoke({ day: before })).decision).toMatchObject({
      reason: 'no observation',
      hours: 0,
      lines: 1,
    });
    const today = new Date(yesterday.toMs).toISOString().slice(0, 10);
    await expect(invoke({ day: today })).rejects.toThrow(ValidationError);
    await expect(invoke({ source: 'aws.ec2' })).rejects.toThrow(/schedule's event or \{ "day"/);
    // A day whose metrics CloudWatch would drop in silence.
    const old = new Date(yesterday.fromMs - 14 * 86_400_000).toISOString().slice(0, 10);
    await expect(invoke({ day: old })).rejects.toThrow(/more than 14 days ago/);
  });

  it('says so when a day holds no observation', async () => {
    const long = new Date(yesterday.fromMs - 5 * 86_400_000).toISOString().slice(0, 10);
    const { decision, lines } = await invoke({ day: long });
    expect(decision).toMatchObject({ reason: 'no observation', hours: 0, lines: 0 });
    const emf = lines.filter((l) => l['message'] === 'metrics');
    expect(emf.map((d) => d['shadow_observed_hours'])).toEqual([0]);
  });
});
