import type { CapacityType } from '../../core/index.ts';
import type { OfferingKey } from '../../ports/cloud.ts';

// Windows of insufficient capacity a scenario opens on the memory cloud: while one is open, EC2 has
// no capacity for the offerings it matches.

/**
 * A window of insufficient capacity: while it is open, EC2 has no capacity for the offerings it
 * matches. An absent field matches everything.
 */
export interface CapacityWindow {
  /** Instance type name; `*` matches any run of characters (`m5.*`, `*.metal`). */
  readonly instanceType?: string;
  readonly zone?: string;
  readonly capacityType?: CapacityType;
  /** Only launches into this capacity reservation (ReservationCapacityExceeded). @default any */
  readonly reservationId?: string;
  /** Opens at this instant (inclusive). @default always open */
  readonly from?: Date;
  /** Closes at this instant (exclusive). @default never closes */
  readonly until?: Date;
}

/** `*` as a wildcard, everything else literal. */
function globMatches(pattern: string | undefined, value: string): boolean {
  if (pattern === undefined) return true;
  if (!pattern.includes('*')) return pattern === value;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(value);
}

/** The windows of one memory cloud, and whether one is open for an offering. */
export function makeCapacityWindows(initial: readonly CapacityWindow[]) {
  const windows: CapacityWindow[] = [...initial];

  function noCapacity(key: OfferingKey, nowMs: number): boolean {
    return windows.some(
      (w) =>
        (w.from === undefined || w.from.getTime() <= nowMs) &&
        (w.until === undefined || nowMs < w.until.getTime()) &&
        globMatches(w.instanceType, key.instanceType) &&
        (w.zone === undefined || w.zone === key.zone) &&
        (w.capacityType === undefined || w.capacityType === key.capacityType) &&
        (w.reservationId === undefined || w.reservationId === key.reservationId),
    );
  }

  /** Opens a window; the returned function removes it again. */
  function add(window: CapacityWindow): () => void {
    windows.push(window);
    return () => {
      const index = windows.indexOf(window);
      if (index >= 0) windows.splice(index, 1);
    };
  }

  return { noCapacity, add, list: (): readonly CapacityWindow[] => [...windows] };
}
