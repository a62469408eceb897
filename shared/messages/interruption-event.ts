import { z } from 'zod';
import type { Decoded } from './decoded.ts';
import {
  INTERRUPTION_KINDS,
  type Interruption,
  type InterruptionDetailShape,
  type InterruptionKind,
  type InterruptionKindRow,
} from './interruption-kinds.ts';

export { DetailType } from './interruption-kinds.ts';

// EventBridge events the interruption rules deliver to the interruption queue (one event per SQS
// message body), parsed once at the edge into a small domain message. Shapes follow the EC2 and
// AWS Health event references: an envelope with version "0", source, detail-type, time and a
// detail object whose fields depend on the detail-type. Which events are which kind is the table's
// (interruption-kinds.ts): source and detail-type pick the rows, the detail filter picks the row.

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

const healthDetail = z
  .object({
    service: z.string(),
    eventTypeCategory: z.string(),
    eventTypeCode: z.string().optional(),
    affectedEntities: z.array(z.object({ entityValue: z.string() }).loose()).default([]),
  })
  .loose();

/** A detail as the codec reads it, whatever its shape. */
interface ReadDetail {
  /** The detail's fields, for the rows' detail filters. */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly instanceIds: readonly string[];
  /** Why the event needs no action when it is outside every row's detail filter. */
  readonly unmatched: string;
  /** Why the event needs no action when it names no instance. */
  readonly noInstance: string;
}

/** How the codec reads each detail shape of INTERRUPTION_KINDS. */
const SHAPES: { readonly [S in InterruptionDetailShape]: z.ZodType<ReadDetail> } = {
  instance: z
    .object({ 'instance-id': instanceId })
    .loose()
    .transform((d) => ({
      fields: d,
      instanceIds: [d['instance-id']],
      unmatched: 'event needs no action',
      noInstance: 'event names no EC2 instance',
    })),
  instanceState: z
    .object({ 'instance-id': instanceId, state: z.string().min(1) })
    .loose()
    .transform((d) => ({
      fields: d,
      instanceIds: [d['instance-id']],
      unmatched: `instance state "${d.state}" needs no action`,
      noInstance: 'state change names no EC2 instance',
    })),
  health: healthDetail.transform((d) => ({
    fields: d,
    instanceIds: d.affectedEntities.map((a) => a.entityValue).filter((v) => instanceId.safeParse(v).success),
    unmatched: `health event of service "${d.service}", category "${d.eventTypeCategory}" needs no action`,
    noInstance: 'scheduled change names no EC2 instance',
  })),
};

/** Whether a detail has, for every filtered field, one of the row's values. */
function matchesFilter(row: InterruptionKindRow, detail: ReadDetail): boolean {
  return Object.entries(row.detailFilter ?? {}).every(([field, values]) => {
    const value = detail.fields[field];
    return typeof value === 'string' && values.includes(value);
  });
}

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

  const rows = INTERRUPTION_KINDS.filter((r) => r.source === e.source && r.detailType === e['detail-type']);
  const [first] = rows;
  if (first === undefined) {
    return INTERRUPTION_KINDS.some((r) => r.source === e.source)
      ? noop(`unknown detail-type "${e['detail-type']}" from ${e.source}`)
      : noop(`unknown event "${e['detail-type']}" from ${e.source}`);
  }
  // Rows of one detail-type share a rule and so a detail shape (interruptionRulePatterns).
  const d = detail(SHAPES[first.detail]);
  if (typeof d === 'string') return { ok: false, problem: d };
  const row = rows.find((r) => matchesFilter(r, d));
  if (row === undefined) return noop(d.unmatched);
  return d.instanceIds.length === 0 ? noop(d.noInstance) : act(row.kind, d.instanceIds);
}
