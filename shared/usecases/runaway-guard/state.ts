import { z } from 'zod';
import { findCondition, NodePoolConditionType } from '../../core/index.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';

// The runaway guard's memory for one NodePool: a JSON annotation on the NodePool, read with it at
// no extra cost and validated here. Not a status field: the NodePool CRD is Karpenter's own, whose
// structural schema would prune a field Karpenter does not define. The `LaunchBackoff` condition
// stays the human view (True while paused, why and until when); the annotation is the truth the
// guard decides on, and its write is the decision's commit (launch-backoff.ts writes the condition first).

/** The annotation that holds the guard's state (JSON, see encodeLaunchBackoff). */
export const LAUNCH_BACKOFF_ANNOTATION = 'flotilla.io/launch-backoff';

/** The guard's memory for one NodePool. */
export interface LaunchBackoffState {
  /** Failed NodeClaims in a row (0 after a NodeClaim succeeded or the NodePool changed). */
  readonly failures: number;
  /**
   * Creation time of the newest NodeClaim counted as failed: only NodeClaims created later count
   * again, so a failed node that lingers is counted once.
   */
  readonly lastFailedCreatedMs: number;
  /** Launches pause until then (epoch ms); in the past once the pause ended. */
  readonly pausedUntilMs: number;
  /** The NodePool's `metadata.generation` when the state was written: a spec change resets the count. */
  readonly observedGeneration?: number;
}

const stateSchema = z.strictObject({
  failures: z.int().min(0),
  lastFailedNodeClaimCreated: z.iso.datetime({ offset: true }),
  pausedUntil: z.iso.datetime({ offset: true }),
  observedGeneration: z.int().min(0).optional(),
});

/** What a NodePool says of the guard's state. */
export type LaunchBackoffRead =
  /** Nothing: the guard never counted a failure here. */
  | { readonly kind: 'none' }
  | { readonly kind: 'state'; readonly state: LaunchBackoffState }
  /**
   * The annotation does not parse, or the condition says launches pause while the annotation is
   * missing (removed by hand, or written by a release that kept the counters in the condition's
   * message). Never read as "no failures": the guard starts over paused (decide.ts).
   */
  | { readonly kind: 'unreadable'; readonly problem: string };

/** The annotation's value for `state`. */
export function encodeLaunchBackoff(state: LaunchBackoffState): string {
  const value: z.infer<typeof stateSchema> = {
    failures: state.failures,
    lastFailedNodeClaimCreated: new Date(state.lastFailedCreatedMs).toISOString(),
    pausedUntil: new Date(state.pausedUntilMs).toISOString(),
    ...(state.observedGeneration === undefined ? {} : { observedGeneration: state.observedGeneration }),
  };
  return JSON.stringify(value);
}

/** The guard's state as the NodePool's annotation (and condition) show it. */
export function readLaunchBackoff(
  pool: Pick<ClusterNodePool, 'annotations' | 'conditions'>,
): LaunchBackoffRead {
  const value = pool.annotations?.[LAUNCH_BACKOFF_ANNOTATION];
  if (value === undefined) {
    const condition = findCondition(pool.conditions, NodePoolConditionType.launchBackoff);
    return condition?.status === 'True'
      ? {
          kind: 'unreadable',
          problem: `the ${NodePoolConditionType.launchBackoff} condition is True but annotation ${LAUNCH_BACKOFF_ANNOTATION} is missing`,
        }
      : { kind: 'none' };
  }
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (error) {
    return { kind: 'unreadable', problem: unreadable(value, (error as Error).message) };
  }
  const parsed = stateSchema.safeParse(json);
  if (!parsed.success)
    return { kind: 'unreadable', problem: unreadable(value, z.prettifyError(parsed.error)) };
  const { failures, lastFailedNodeClaimCreated, pausedUntil, observedGeneration } = parsed.data;
  return {
    kind: 'state',
    state: {
      failures,
      lastFailedCreatedMs: Date.parse(lastFailedNodeClaimCreated),
      pausedUntilMs: Date.parse(pausedUntil),
      ...(observedGeneration === undefined ? {} : { observedGeneration }),
    },
  };
}

const unreadable = (value: string, why: string) =>
  `annotation ${LAUNCH_BACKOFF_ANNOTATION} ${JSON.stringify(value.slice(0, 200))} does not parse: ${why.replaceAll('\n', ' ')}`;
