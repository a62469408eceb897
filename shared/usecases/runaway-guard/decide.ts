import { findCondition, NodePoolConditionType } from '../../core/index.ts';
import type { ClusterNodePool, ConditionUpdate } from '../../ports/cluster.ts';
import type { NodeClaimFailure } from './failures.ts';
import { encodeLaunchBackoff, type LaunchBackoffState, readLaunchBackoff } from './state.ts';

// The runaway guard, Flotilla's own (Karpenter has none): a NodePool whose new NodeClaims keep
// failing to host the pods they were launched for pauses its launches, 1 min after the first
// failure in a row, then 2, 4, … up to 30 min. A NodeClaim fails when it times out (launch or
// registration, which the lifecycle deletes it for), when it registers but does not initialize
// within INITIALIZATION_TIMEOUT_MS of registering, or when its Node has stayed empty since it
// initialized (or uninitialized since it registered), for UNEXPECTED_TAINT_PERSISTENCE_MS or more,
// under a taint the NodePool did not ask for and that keeps pending pods the pool could host away
// (a rogue controller tainting every new node). The state is an annotation on the NodePool
// (state.ts), read with it by every invocation; the `LaunchBackoff` condition says the same in
// words. This file decides; failures.ts judges the NodeClaims; launch-backoff.ts reads and writes.

/** The pause after the first failure in a row; each further failure doubles it. */
export const LAUNCH_BACKOFF_BASE_MS = 60_000;
/** The longest pause. */
export const LAUNCH_BACKOFF_MAX_MS = 30 * 60_000;

/** How long launches pause after `failures` consecutive failed NodeClaims (0 for none). */
export function launchBackoffMs(failures: number): number {
  if (!(failures >= 1)) return 0;
  // 2^25 minutes is far past the cap; clamping the exponent keeps the arithmetic exact.
  return Math.min(LAUNCH_BACKOFF_MAX_MS, LAUNCH_BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 25));
}

/** Why a pause ended. */
export type BackoffEnd = 'expired' | 'recovered' | 'nodePoolChanged';

/** What the guard decided for one NodePool. */
export type LaunchBackoffOutcome =
  | {
      /** Nothing to write: the condition already says it. */
      readonly kind: 'unchanged';
      readonly state: LaunchBackoffState | undefined;
    }
  | {
      /** A new failure: launches pause (again, or longer). */
      readonly kind: 'start';
      readonly state: LaunchBackoffState;
      readonly failure: NodeClaimFailure;
      readonly backoffMs: number;
      readonly condition: ConditionUpdate;
      /** The annotation's new value (state.ts). */
      readonly annotation: string;
    }
  | {
      /**
       * The state could not be read (state.ts) and no failure is seen now: launches pause as after
       * one failure (LAUNCH_BACKOFF_BASE_MS from now), then a probe must initialize with pods.
       * Never "no failures": a state lost while a rogue taint empties every node would restart
       * the loop the guard is for.
       */
      readonly kind: 'restart';
      readonly state: LaunchBackoffState;
      readonly problem: string;
      readonly backoffMs: number;
      readonly condition: ConditionUpdate;
      readonly annotation: string;
    }
  | {
      /** Launches resume: the pause ran out, or the counters reset. */
      readonly kind: 'end';
      readonly why: BackoffEnd;
      readonly state: LaunchBackoffState;
      /** The NodeClaim that proved the pool works, when `recovered`. */
      readonly nodeClaim?: string;
      readonly condition: ConditionUpdate;
      readonly annotation: string;
    };

export interface LaunchBackoffInput {
  readonly pool: ClusterNodePool;
  /** Failed NodeClaims seen now (findNodeClaimFailures plus the caller's timeouts), any order. */
  readonly failures: readonly NodeClaimFailure[];
  /** A NodeClaim that initialized with pods since the last failure (findRecoveredNodeClaim). */
  readonly recovered?: string;
  readonly nowMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** `90s`, `4m`, `30m`. */
function formatDuration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/**
 * The guard's decision for one NodePool, from its state (state.ts) and what the cluster shows now.
 * In order: a change of the NodePool's spec (its generation differs from the state's
 * observedGeneration) resets the count; a failure of a NodeClaim created after the last
 * one counted starts a pause of launchBackoffMs(count + 1) from now; else a NodeClaim that
 * initialized with pods resets the count; else a pause whose time is up ends (the count stays, so
 * the next failure pauses longer). A state that cannot be read counts as none when a failure is
 * seen now, else restarts a pause (the `restart` outcome).
 */
export function decideLaunchBackoff(input: LaunchBackoffInput): LaunchBackoffOutcome {
  const { pool, nowMs } = input;
  const read = readLaunchBackoff(pool);
  const previous = read.kind === 'state' ? read.state : undefined;
  const paused = findCondition(pool.conditions, NodePoolConditionType.launchBackoff)?.status === 'True';
  const changed =
    previous !== undefined &&
    previous.failures > 0 &&
    previous.observedGeneration !== undefined &&
    pool.generation !== undefined &&
    previous.observedGeneration !== pool.generation;
  const counted = changed ? 0 : (previous?.failures ?? 0);
  const since = previous?.lastFailedCreatedMs ?? Number.NEGATIVE_INFINITY;
  const generation = pool.generation === undefined ? {} : { observedGeneration: pool.generation };

  const fresh = input.failures.filter((f) => f.createdAtMs > since);
  const newest = fresh.reduce<NodeClaimFailure | undefined>(
    (a, f) => (a === undefined || f.createdAtMs > a.createdAtMs ? f : a),
    undefined,
  );
  if (newest !== undefined) {
    // Failures seen together (NodeClaims of one decision) count once.
    const failures = counted + 1;
    const backoffMs = launchBackoffMs(failures);
    const state = {
      failures,
      lastFailedCreatedMs: newest.createdAtMs,
      pausedUntilMs: nowMs + backoffMs,
      ...generation,
    };
    const more = fresh.length > 1 ? ` (and ${fresh.length - 1} more NodeClaim(s))` : '';
    return {
      kind: 'start',
      state,
      failure: newest,
      backoffMs,
      condition: {
        type: NodePoolConditionType.launchBackoff,
        status: 'True',
        reason: newest.kind,
        message: `launches paused for ${formatDuration(backoffMs)}, until ${iso(state.pausedUntilMs)}, after ${failures} failed NodeClaim(s) in a row; last: ${newest.detail}${more}`,
      },
      annotation: encodeLaunchBackoff(state),
    };
  }
  if (read.kind === 'unreadable') {
    const backoffMs = launchBackoffMs(1);
    const state = {
      failures: 1,
      lastFailedCreatedMs: nowMs,
      pausedUntilMs: nowMs + backoffMs,
      ...generation,
    };
    return {
      kind: 'restart',
      state,
      problem: read.problem,
      backoffMs,
      condition: {
        type: NodePoolConditionType.launchBackoff,
        status: 'True',
        reason: 'StateUnreadable',
        message: `launches paused for ${formatDuration(backoffMs)}, until ${iso(state.pausedUntilMs)}, then one NodeClaim at a time until one hosts pods: the guard's state could not be read (${read.problem}), so it starts over as after one failed NodeClaim`,
      },
      annotation: encodeLaunchBackoff(state),
    };
  }
  if (previous === undefined) return { kind: 'unchanged', state: undefined };

  const ended = (why: BackoffEnd, state: LaunchBackoffState, message: string, nodeClaim?: string) =>
    ({
      kind: 'end',
      why,
      state,
      ...(nodeClaim === undefined ? {} : { nodeClaim }),
      condition: {
        type: NodePoolConditionType.launchBackoff,
        status: 'False',
        reason:
          why === 'expired'
            ? 'BackoffExpired'
            : why === 'recovered'
              ? 'NodeClaimInitialized'
              : 'NodePoolChanged',
        message,
      },
      annotation: encodeLaunchBackoff(state),
    }) as const;
  const reset = {
    ...previous,
    failures: 0,
    pausedUntilMs: Math.min(previous.pausedUntilMs, nowMs),
    ...generation,
  };
  if (changed) {
    return ended('nodePoolChanged', reset, 'launches resume: the NodePool changed, failures count from 0');
  }
  if (input.recovered !== undefined && previous.failures > 0) {
    return ended(
      'recovered',
      reset,
      `launches resume: nodeClaim "${input.recovered}" initialized and hosts pods, failures count from 0`,
      input.recovered,
    );
  }
  if (paused && nowMs >= previous.pausedUntilMs) {
    return ended(
      'expired',
      previous,
      `launches resume at ${iso(previous.pausedUntilMs)}; after ${previous.failures} failed NodeClaim(s) in a row the next failure pauses them for ${formatDuration(launchBackoffMs(previous.failures + 1))}`,
    );
  }
  return { kind: 'unchanged', state: previous };
}

/** Until when a NodePool's launches pause at `nowMs` (from its state), or undefined. */
export function launchPausedUntil(state: LaunchBackoffState | undefined, nowMs: number): number | undefined {
  return state !== undefined && state.failures > 0 && state.pausedUntilMs > nowMs
    ? state.pausedUntilMs
    : undefined;
}
