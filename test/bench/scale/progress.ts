// Progress lines on stderr and bounded fan-out for the loader.

const started = Date.now();

/** One progress line on stderr, stamped with the seconds since the bench started. */
export function say(message: string): void {
  process.stderr.write(`[bench:scale +${Math.round((Date.now() - started) / 1000)}s] ${message}\n`);
}

/**
 * Runs `work` on every item with at most `limit` in flight, saying how far it got every
 * `everyMs`. Rejects with the first error (the others in flight finish first).
 */
export async function forEachLimit<T>(
  label: string,
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
  everyMs = 5_000,
  quiet = false,
): Promise<void> {
  const began = Date.now();
  let next = 0;
  let done = 0;
  let failure: unknown;
  const ticker = setInterval(() => {
    const seconds = (Date.now() - began) / 1000;
    say(`${label}: ${done}/${items.length} (${Math.round(done / Math.max(seconds, 0.001))}/s)`);
  }, everyMs);
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const index = next++;
      try {
        await work(items[index] as T, index);
        done += 1;
      } catch (error) {
        failure ??= error;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  } finally {
    clearInterval(ticker);
  }
  if (failure !== undefined) throw failure;
  if (items.length > 0 && !quiet)
    say(`${label}: ${items.length} in ${((Date.now() - began) / 1000).toFixed(1)}s`);
}

/** Polls `check` until it returns a value other than undefined, saying what it waits for. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastSaid = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    if (Date.now() - lastSaid > 5_000) {
      say(`waiting for ${what}`);
      lastSaid = Date.now();
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
