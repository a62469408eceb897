// Lambda invocations on virtual time. An invocation is an async function handed a `sleep` that
// parks it until the engine wakes it, at or after the instant the sleep ends. The engine steps one
// invocation at a time (start it, or wake a parked one) and each step returns once the invocation
// has parked again or ended, so invocations run concurrently in virtual time while their effects
// keep a deterministic order. The drive loops of the Lambdas run unchanged this way.

/** Runs an invocation's work; its sleeps are virtual. */
export type InvocationBody = (sleep: (ms: number) => Promise<void>) => Promise<void>;

export interface VirtualInvocations {
  /**
   * Starts an invocation under `key` and returns once it has parked in a sleep or ended.
   * @throws what the invocation throws
   */
  start(key: string, body: InvocationBody): Promise<void>;
  /**
   * Wakes the invocation parked under `key` and returns once it has parked again or ended.
   * @throws what the invocation throws, and Error when nothing is parked under `key`
   */
  resume(key: string): Promise<void>;
  /** Whether an invocation is parked under `key`. */
  has(key: string): boolean;
  /** The keys of parked invocations whose sleep has ended by `nowMs`. */
  due(nowMs: number): readonly string[];
  /** The instants the parked sleeps end. */
  wakeTimes(): readonly number[];
}

interface Parked {
  readonly atMs: number;
  readonly wake: () => void;
}

type Settle = (outcome: { readonly error: unknown } | undefined) => void;

/** Invocations whose sleeps end `ms` after `nowMs()` at the time they sleep. */
export function makeVirtualInvocations(nowMs: () => number): VirtualInvocations {
  const parked = new Map<string, Parked>();
  /** Ends the step in progress: its invocation parked (or ended, with an error or without). */
  let settle: Settle | undefined;

  function step(begin: () => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      settle = (outcome) => {
        settle = undefined;
        if (outcome === undefined) resolve();
        else reject(outcome.error);
      };
      begin();
    });
  }

  return {
    start(key, body) {
      return step(() => {
        const sleep = (ms: number) =>
          new Promise<void>((wake) => {
            parked.set(key, { atMs: nowMs() + ms, wake });
            settle?.(undefined);
          });
        body(sleep).then(
          () => settle?.(undefined),
          (error: unknown) => settle?.({ error }),
        );
      });
    },
    resume(key) {
      const sleeping = parked.get(key);
      if (sleeping === undefined) return Promise.reject(new Error(`no invocation is parked under "${key}"`));
      parked.delete(key);
      return step(sleeping.wake);
    },
    has: (key) => parked.has(key),
    due: (at) => [...parked].filter(([, p]) => p.atMs <= at).map(([key]) => key),
    wakeTimes: () => [...parked.values()].map((p) => p.atMs),
  };
}
