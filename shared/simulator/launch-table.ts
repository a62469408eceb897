import { ASSUMED_PRICE_MEANING, type CapacityType } from '../core/index.ts';
import type { SimulationRecord } from './record.ts';

// The reports' table of launches by instance type, with the marks of prices that are not the
// catalog's published ones (assumed, or a NodeOverlay's). Pure.

/** Capacity types in the order reports list them. */
export const CAPACITY_TYPES: readonly CapacityType[] = ['on-demand', 'spot', 'reserved'];

/** Launches of one instance type, split by capacity type. */
export interface LaunchRow {
  readonly instanceType: string;
  readonly byCapacityType: Readonly<Record<CapacityType, number>>;
  readonly total: number;
  /** Lowest and highest price seen for this type, $/hour. */
  readonly minPricePerHour: number;
  readonly maxPricePerHour: number;
  /** Some launch of this type was at a price the catalog only assumes (SimLaunch.priceAssumed). */
  readonly priceAssumed: boolean;
  /** Some launch of this type was at a NodeOverlay's price (SimLaunch.priceOverlaid). */
  readonly priceOverlaid: boolean;
  /** Some launch of this type was a Windows node at its Linux price (SimLaunch.priceWithoutWindowsLicense). */
  readonly priceWithoutWindowsLicense: boolean;
}

/** What a mark of an assumed price means, for the reports' footnotes. */
export const ASSUMED_PRICE_NOTE = `* assumed price: ${ASSUMED_PRICE_MEANING}; the costs include them; \`flotilla simulate --known-prices\` leaves such offerings out`;
/** What a mark of a NodeOverlay's price means. */
export const OVERLAY_PRICE_NOTE =
  '† NodeOverlay price: the price an overlay set for the NodePool, which it launched with; the costs use it';

/** What the mark of a Windows node's price means. */
export const WINDOWS_PRICE_NOTE =
  '‡ Linux price: the catalog holds no Windows license prices, so these nodes cost more than shown and than the costs count';

/** The marks after a row's price: assumed, a NodeOverlay's, a Windows node's at its Linux price. */
export function priceMarks(
  row: Pick<LaunchRow, 'priceAssumed' | 'priceOverlaid' | 'priceWithoutWindowsLicense'>,
): string {
  return `${row.priceAssumed ? ' *' : ''}${row.priceOverlaid ? ' †' : ''}${row.priceWithoutWindowsLicense ? ' ‡' : ''}`;
}

/** Orders names, so equal records give equal reports. */
export const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function zeroByCapacity(): Record<CapacityType, number> {
  return { 'on-demand': 0, spot: 0, reserved: 0 };
}

/** The launches by instance type, most first, and their totals by capacity type. */
export function launchRows(record: SimulationRecord): {
  rows: LaunchRow[];
  totals: Record<CapacityType, number>;
} {
  const rows = new Map<
    string,
    {
      by: Record<CapacityType, number>;
      min: number;
      max: number;
      assumed: boolean;
      overlaid: boolean;
      windows: boolean;
    }
  >();
  const totals = zeroByCapacity();
  for (const launch of record.launches) {
    let row = rows.get(launch.instanceType);
    if (row === undefined) {
      const [min, max] = [launch.pricePerHour, launch.pricePerHour];
      row = { by: zeroByCapacity(), min, max, assumed: false, overlaid: false, windows: false };
      rows.set(launch.instanceType, row);
    }
    if (launch.priceAssumed === true) row.assumed = true;
    if (launch.priceOverlaid === true) row.overlaid = true;
    if (launch.priceWithoutWindowsLicense === true) row.windows = true;
    row.by[launch.capacityType] += 1;
    row.min = Math.min(row.min, launch.pricePerHour);
    row.max = Math.max(row.max, launch.pricePerHour);
    totals[launch.capacityType] += 1;
  }
  const out = [...rows.entries()].map(([instanceType, r]) => ({
    instanceType,
    byCapacityType: r.by,
    total: CAPACITY_TYPES.reduce((sum, c) => sum + r.by[c], 0),
    minPricePerHour: r.min,
    maxPricePerHour: r.max,
    priceAssumed: r.assumed,
    priceOverlaid: r.overlaid,
    priceWithoutWindowsLicense: r.windows,
  }));
  out.sort((a, b) => b.total - a.total || byName(a.instanceType, b.instanceType));
  return { rows: out, totals };
}
