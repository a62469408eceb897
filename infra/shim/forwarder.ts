/** Delivers one batch (at most `maxBatch` items); rejects if any item was not accepted. */
export type SendBatch<T> = (batch: readonly T[]) => Promise<void>;

export interface ForwarderOptions<T> {
  readonly send: SendBatch<T>;
  /** Quiet time after the last item before a flush. @default 250 */
  readonly idleMs?: number;
  /** Longest an item waits while items keep arriving. @default 1000 */
  readonly maxWaitMs?: number;
  /** @default 10 (SQS SendMessageBatch's limit) */
  readonly maxBatch?: number;
  /** Items kept while the queue cannot be reached; the oldest are dropped past it. @default 10000 */
  readonly maxPending?: number;
  /** Called when a flush fails; the items are kept and retried with backoff. */
  readonly onError?: (error: unknown, pending: number, retryInMs: number) => void;
  /** Called when items are dropped because `maxPending` was reached. */
  readonly onDrop?: (dropped: number) => void;
}

/**
 * Collects items and sends them in batches: a burst of pod events becomes a few
 * SendMessageBatch calls, sent after `idleMs` of quiet or `maxWaitMs` at the latest. A failed
 * send keeps its items and is retried with exponential backoff (capped at 30 s) and jitter.
 */
export class BatchForwarder<T> {
  private readonly pending: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private firstQueuedAt = 0;
  private failures = 0;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: ForwarderOptions<T>) {}

  add(item: T): void {
    if (this.closed) throw new Error('forwarder is closed');
    if (this.pending.length === 0) this.firstQueuedAt = Date.now();
    this.pending.push(item);
    const overflow = this.pending.length - (this.options.maxPending ?? 10_000);
    if (overflow > 0) {
      this.pending.splice(0, overflow);
      this.options.onDrop?.(overflow);
    }
    if (this.failures === 0) this.arm();
  }

  /** Items not yet delivered. */
  get size(): number {
    return this.pending.length;
  }

  /** Sends everything pending now, once (no retry). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    this.flushing = this.sendAll().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Flushes what is pending and stops accepting items. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pending.length > 0) await this.flush();
    if (this.timer) clearTimeout(this.timer);
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    const idle = this.options.idleMs ?? 250;
    const deadline = this.firstQueuedAt + (this.options.maxWaitMs ?? 1_000);
    const wait = Math.max(0, Math.min(idle, deadline - Date.now()));
    this.timer = setTimeout(() => void this.flushWithRetry(), wait);
  }

  private async flushWithRetry(): Promise<void> {
    this.timer = undefined;
    try {
      await this.flush();
      this.failures = 0;
      if (this.pending.length > 0 && !this.closed) this.arm();
    } catch (error) {
      this.failures += 1;
      const base = Math.min(30_000, 200 * 2 ** (this.failures - 1));
      const retryInMs = Math.round(base / 2 + Math.random() * (base / 2));
      this.options.onError?.(error, this.pending.length, retryInMs);
      if (!this.closed) this.timer = setTimeout(() => void this.flushWithRetry(), retryInMs);
    }
  }

  private async sendAll(): Promise<void> {
    const maxBatch = this.options.maxBatch ?? 10;
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, maxBatch);
      await this.options.send(batch);
      this.pending.splice(0, batch.length);
    }
  }
}
