import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { z } from 'zod';
import { awsClientConfig } from '../../shared/adapters/aws/clients.ts';
import { makeCloudWatchShadowLines } from '../../shared/adapters/aws/shadow-lines.ts';
import { ValidationError } from '../../shared/core/errors.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { metricsClusterOf } from '../../shared/runtime/metrics.ts';
import { makeEmfMetrics } from '../../shared/runtime/metrics-sink.ts';
import type { CompareDecision } from '../../shared/usecases/decisions/decision.ts';
import { compareShadowDay, type ShadowDay, utcDay, utcDayBefore } from '../../shared/usecases/shadow/day.ts';
import { parseLambdaEnv } from '../common/env.ts';

// A shadow stack's daily comparison: a schedule just after midnight UTC compares the day before
// (shared/usecases/shadow/day.ts); `{ "day": "YYYY-MM-DD" }` compares that day (within CloudWatch's
// two weeks for dated metrics), for a day the schedule missed.

const Env = z.object({
  AWS_REGION: z.string().min(1),
  [EnvVar.clusterName]: z.string().min(1),
  [EnvVar.logLevel]: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  // Only a shadow stack has this Lambda: there is nothing to compare beside the live autoscaler.
  [EnvVar.mode]: z.literal('shadow', { error: 'must be "shadow": only a shadow stack compares' }),
  [EnvVar.shadowLogGroups]: z
    .string()
    .min(1)
    .transform((value) => value.split(',').filter((group) => group !== '')),
});

/** How old a metric value CloudWatch still takes (its timestamps go back two weeks). */
const METRIC_MAX_AGE_MS = 14 * 86_400_000;

/** What invokes it: the schedule's event (its `time`), or a day asked for. */
const Event = z.union([
  z.object({ day: z.string() }).strict(),
  z.object({ 'detail-type': z.literal('Scheduled Event'), time: z.iso.datetime() }),
]);

/** The day an invocation asks for. */
export function dayOf(event: unknown, nowMs: number): ShadowDay {
  const parsed = Event.safeParse(event);
  if (!parsed.success) {
    throw new ValidationError(
      'shadow-report event',
      'event',
      'expected the schedule\'s event or { "day": "YYYY-MM-DD" }',
    );
  }
  if ('day' in parsed.data) {
    const day = utcDay(parsed.data.day);
    if (day === undefined || day.toMs > nowMs) {
      throw new ValidationError(
        'shadow-report event',
        'day',
        `"${parsed.data.day}" is not a UTC day that has ended (YYYY-MM-DD)`,
      );
    }
    // CloudWatch drops metric values dated more than two weeks back: they would be lost in silence.
    if (day.fromMs < nowMs - METRIC_MAX_AGE_MS) {
      throw new ValidationError(
        'shadow-report event',
        'day',
        `"${parsed.data.day}" began more than 14 days ago: CloudWatch takes no metric that old; run flotilla shadow report for it`,
      );
    }
    return day;
  }
  return utcDayBefore(Date.parse(parsed.data.time));
}

// Built once per cold start.
const config = parseLambdaEnv('shadow-report', Env, process.env);
const clusterName = config[EnvVar.clusterName];
const fields = { lambda: 'shadow-report', cluster: clusterName, shadow: true };
const logger = makeLogger(fields, { level: config[EnvVar.logLevel] });
const metrics = makeEmfMetrics({ cluster: metricsClusterOf(clusterName, true), fields });
// A page of a busy day's lines is up to a megabyte: a minute per attempt.
const client = new CloudWatchLogsClient(
  awsClientConfig({ region: config.AWS_REGION, logger, requestTimeoutMs: 60_000 }),
);
const lines = makeCloudWatchShadowLines({ client, logGroups: config[EnvVar.shadowLogGroups] });

/** EventBridge schedule target (or a day asked for): compares the day and writes its figures. */
export async function handler(event: unknown): Promise<CompareDecision> {
  const day = dayOf(event, systemClock.now().getTime());
  return compareShadowDay({ lines, output: { logger, metrics }, logger }, day);
}
