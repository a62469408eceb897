import { runEndMs } from './holds.ts';
import type { SimulationRecord } from './record.ts';

// The stretches in which a NodePool's drift and expiration waited on its alarms, read from the
// disruption passes' `rollout hold` decision lines (start, then end). Pure and deterministic.

export interface RolloutHold {
  readonly nodePool: string;
  /** Why it started: AlarmFiring, AlarmUnreadable or AlarmsAnnotationInvalid. */
  readonly reason: string;
  /** The alarms that held it when it started. */
  readonly alarms: readonly string[];
  readonly fromMs: number;
  readonly untilMs: number;
  /** Still holding when the run ended. */
  readonly atEnd: boolean;
}

const str = (value: unknown) => (typeof value === 'string' ? value : '');
const num = (value: unknown) => (typeof value === 'number' ? value : 0);

/** Every hold, in the order they started. */
export function rolloutHolds(record: SimulationRecord): RolloutHold[] {
  const open = new Map<string, Omit<RolloutHold, 'untilMs' | 'atEnd'>>();
  const holds: RolloutHold[] = [];
  for (const d of record.decisions) {
    if (d['decision'] !== 'rolloutHold') continue;
    const nodePool = str(d['nodePool']);
    const atMs = num(d['atMs']);
    const started = open.get(nodePool);
    if (d['action'] === 'start') {
      if (started !== undefined) continue;
      const alarms = Array.isArray(d['alarms']) ? (d['alarms'] as unknown[]).map(str) : [];
      open.set(nodePool, { nodePool, reason: str(d['reason']), alarms, fromMs: atMs });
    } else if (started !== undefined) {
      holds.push({ ...started, untilMs: atMs, atEnd: false });
      open.delete(nodePool);
    }
  }
  const endMs = runEndMs(record);
  for (const started of open.values()) holds.push({ ...started, untilMs: endMs, atEnd: true });
  return holds.sort((a, b) => a.fromMs - b.fromMs || a.nodePool.localeCompare(b.nodePool));
}
