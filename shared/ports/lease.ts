/** A lease held by one invocation: who holds it, until when, and its fencing token. */
export interface Lease {
  readonly name: string;
  readonly holder: string;
  /**
   * Grows by one each time the lease changes hands. Work done under a lease is fenced by it:
   * before an effect, the holder checks that the stored token is still its own.
   */
  readonly token: number;
  /** Epoch milliseconds after which anyone may take the lease. */
  readonly expiresAtMs: number;
  /**
   * Until when the holder before this one held it (epoch ms): when it released the lease, or when
   * its lease ran out. Whatever that holder wrote, it wrote before then. Undefined for the first.
   */
  readonly previousUntilMs?: number;
  /**
   * The last mark a holder left on release (epoch ms), however many holders ago: how far a
   * holder's work got, for the next to go on from there (a disruption pass: up to when pod
   * startups are counted). Undefined until a holder leaves one.
   */
  readonly previousMarkMs?: number;
}

/**
 * Mutual exclusion across Lambda invocations ("one provisioner decision at a time per
 * cluster"). Expiry is checked on every read against the caller's clock, so a crashed holder
 * blocks others for at most its TTL.
 */
export interface LeaseStore {
  /** Takes the lease if it is free, expired or already this holder's; undefined if someone else holds it. */
  acquire(name: string, holder: string, now: Date, ttlSeconds: number): Promise<Lease | undefined>;
  /** Extends a lease still held with the same token; undefined if it was lost. */
  renew(lease: Lease, now: Date, ttlSeconds: number): Promise<Lease | undefined>;
  /** Whether `lease` is still held (same holder and token, not expired), read consistently. */
  isHeld(lease: Lease, now: Date): Promise<boolean>;
  /**
   * Gives the lease up early if still held (recording `now` as when, for the next holder's
   * `previousUntilMs`, and `markMs`, when given, for every later holder's `previousMarkMs`); a
   * lost lease is left alone, its mark too.
   */
  release(lease: Lease, now?: Date, markMs?: number): Promise<void>;
}
