import type { OfferingCatalog } from './catalog.ts';
import type { OfferingKey } from './offering.ts';

// State that must outlive one Lambda invocation and is not cluster state. The DynamoDB adapter is
// in shared/adapters/aws/dynamo-state.ts.

/** The offering cache: instance types, offerings and prices per region, refreshed on a schedule. */
export interface OfferingCache {
  /** The newest complete catalog for `region`, or undefined before the first refresh. */
  readCatalog(region: string): Promise<OfferingCatalog | undefined>;
  /** Stores `catalog` so readers switch to it at once (never a half-written mix). */
  writeCatalog(catalog: OfferingCatalog): Promise<void>;
}

/** One backed-off offering. */
export interface UnavailableOffering extends OfferingKey {
  /** Epoch milliseconds; the offering is available again from then on. */
  readonly untilMs: number;
  readonly reason: string;
}

/**
 * ICE back-offs: offerings EC2 recently had no capacity for. Expiry is checked on read against
 * the given instant; storage-level TTL deletion is only eventual clean-up.
 */
export interface UnavailableOfferings {
  /** Marks each offering unavailable until `now + ttlSeconds`; re-marking extends the back-off. */
  mark(offerings: readonly OfferingKey[], reason: string, now: Date, ttlSeconds: number): Promise<void>;
  /** Offerings still backed off at `now`, keyed by `offeringKeyString`. */
  list(now: Date): Promise<ReadonlyMap<string, UnavailableOffering>>;
}

/** Karpenter's UnavailableOfferingsTTL. */
export const UNAVAILABLE_OFFERING_TTL_SECONDS = 180;
