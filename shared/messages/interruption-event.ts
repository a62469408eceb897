import { z } from 'zod';
import type { Interruption, InterruptionKind } from '../core/index.ts';
import type { Decoded } from './decoded.ts';

// EventBridge events the interruption rules deliver to the interruption queue (one event per SQS
// message body), parsed once at the edge into a small domain message. Shapes follow the EC2 and
// AWS Health event references: an envelope with version "0", source, detail-type, time and a
// detail object whose fields depend on the detail-type.

/** One parsed interruption event, with what the logs want to know of its envelope. */
export interface InterruptionMessage extends Interruption {
  readonly detailType: string;
  readonly source: string;
  /** The event's `time`, RFC 3339. */
  readonly time: string;
}

/** The outcome of parsing one message body: a message, or the problem with a malformed one. */
export type ParsedInterruption = Decoded<InterruptionMessage>;

const instanceId = z.string().regex(/^i-[0-9a-zA-Z]+$/, 'an EC2 instance id such as i-0123456789abcdef0');

const envelope = z
  .object({
    version: z.literal('0'),
    id: z.string().min(1),
    'detail-type': z.string().min(1),
    source: z.string().min(1),
    time: z.string().min(1),
    detail: z.record(z.string(), z.unknown()),
  })
  .loose();

const spotDetail = z.object({ 'instance-id': instanceId, 'instance-action': z.string().optional() }).loose();
const rebalanceDetail = z.object({ 'instance-id': instanceId }).loose();
const stateChangeDetail = z.object({ 'instance-id': instanceId, state: z.string().min(1) }).loose();
const capacityReservationDetail = z.object({ 'instance-id': instanceId }).loose();
const healthDetail = z
  .object({
    service: z.string(),
    eventTypeCategory: z.string(),
    eventTypeCode: z.string().optional(),
    affectedEntities: z.array(z.object({ entityValue: z.string() }).loose()).default([]),
  })
  .loose();

const STOPPED_STATES: ReadonlySet<string> = new Set(['stopping', 'stopped']);
const TERMINATED_STATES: ReadonlySet<string> = new Set(['shutting-down', 'terminated']);

/** The detail-types of the interruption rules (infra/flotilla-cluster.ts INTERRUPTION_RULES). */
export const DetailType = {
  spotInterruption: 'EC2 Spot Instance Interruption Warning',
  rebalanceRecommendation: 'EC2 Instance Rebalance Recommendation',
  stateChange: 'EC2 Instance State-change Notification',
  health: 'AWS Health Event',
  capacityReservationInterruption: 'EC2 Capacity Reservation Instance Interruption Warning',
} as const;

function describe(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/**
 * Parses one SQS message body holding an EventBridge event. A body that is not JSON, not an
 * EventBridge envelope, or a known detail-type with a malformed detail is a problem (the message
 * is retried and ends in the dead-letter queue); a well-formed event Flotilla does not act on is
 * a `noop` message (acknowledged and logged).
 */
export function parseInterruptionEvent(body: string): ParsedInterruption {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `message body is not JSON: ${(error as Error).message}` };
  }
  const env = envelope.safeParse(json);
  if (!env.success) return { ok: false, problem: `not an EventBridge event: ${describe(env.error)}` };
  const e = env.data;
  const base = { eventId: e.id, detailType: e['detail-type'], source: e.source, time: e.time };
  const noop = (why: string): ParsedInterruption => ({
    ok: true,
    message: { ...base, kind: 'noop', instanceIds: [], why },
  });
  const detail = <T extends z.ZodType>(schema: T): z.infer<T> | string => {
    const d = schema.safeParse(e.detail);
    return d.success ? d.data : `${e['detail-type']}: detail: ${describe(d.error)}`;
  };
  const act = (kind: InterruptionKind, instanceIds: readonly string[]): ParsedInterruption => ({
    ok: true,
    message: { ...base, kind, instanceIds },
  });

  if (e.source === 'aws.ec2') {
    switch (e['detail-type']) {
      case DetailType.spotInterruption: {
        const d = detail(spotDetail);
        return typeof d === 'string'
          ? { ok: false, problem: d }
          : act('spotInterruption', [d['instance-id']]);
      }
      case DetailType.rebalanceRecommendation: {
        const d = detail(rebalanceDetail);
        return typeof d === 'string'
          ? { ok: false, problem: d }
          : act('rebalanceRecommendation', [d['instance-id']]);
      }
      case DetailType.stateChange: {
        const d = detail(stateChangeDetail);
        if (typeof d === 'string') return { ok: false, problem: d };
        if (STOPPED_STATES.has(d.state)) return act('instanceStopped', [d['instance-id']]);
        if (TERMINATED_STATES.has(d.state)) return act('instanceTerminated', [d['instance-id']]);
        return noop(`instance state "${d.state}" needs no action`);
      }
      case DetailType.capacityReservationInterruption: {
        const d = detail(capacityReservationDetail);
        return typeof d === 'string'
          ? { ok: false, problem: d }
          : act('capacityReservationInterruption', [d['instance-id']]);
      }
      default:
        return noop(`unknown detail-type "${e['detail-type']}" from aws.ec2`);
    }
  }
  if (e.source === 'aws.health' && e['detail-type'] === DetailType.health) {
    const d = detail(healthDetail);
    if (typeof d === 'string') return { ok: false, problem: d };
    if (d.service !== 'EC2' || d.eventTypeCategory !== 'scheduledChange') {
      return noop(
        `health event of service "${d.service}", category "${d.eventTypeCategory}" needs no action`,
      );
    }
    const ids = d.affectedEntities.map((a) => a.entityValue).filter((v) => instanceId.safeParse(v).success);
    return ids.length === 0 ? noop('scheduled change names no EC2 instance') : act('scheduledChange', ids);
  }
  return noop(`unknown event "${e['detail-type']}" from ${e.source}`);
}
