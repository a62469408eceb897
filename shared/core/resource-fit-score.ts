// kube-scheduler's NodeResourcesFit score, the part of its choice of node that Flotilla models:
// the simulator's kube-scheduler binds pods by it, and disruption replays by it where the pods a
// command moves will go. Pure.

/** NodeResourcesFit's scoring strategies: LeastAllocated (kube-scheduler's default) spreads pods, MostAllocated packs them. */
export const FIT_SCORINGS = ['LeastAllocated', 'MostAllocated'] as const;
export type FitScoring = (typeof FIT_SCORINGS)[number];
/** kube-scheduler's default strategy. */
export const DEFAULT_FIT_SCORING: FitScoring = 'LeastAllocated';
/** Whether `value` names one of the strategies. */
export function isFitScoring(value: unknown): value is FitScoring {
  return (FIT_SCORINGS as readonly unknown[]).includes(value);
}

/** kube-scheduler scores a pod without a cpu request as asking this many millicores… */
export const DEFAULT_SCORED_CPU_MILLIS = 100;
/** …and one without a memory request as asking this many bytes. */
export const DEFAULT_SCORED_MEMORY_BYTES = 200 * 1024 * 1024;

/** A pod's cpu (millicores) and memory (bytes) as NodeResourcesFit scores them: a missing request at the default. */
export function scoredRequests(cpu: number, memory: number): { cpu: number; memory: number } {
  return { cpu: cpu || DEFAULT_SCORED_CPU_MILLIS, memory: memory || DEFAULT_SCORED_MEMORY_BYTES };
}

/** What the score counts beyond a pod's cpu and memory requests: the default of a missing one. */
export function scoredBeyondRequests(cpu: number, memory: number): { cpu: number; memory: number } {
  return { cpu: cpu ? 0 : DEFAULT_SCORED_CPU_MILLIS, memory: memory ? 0 : DEFAULT_SCORED_MEMORY_BYTES };
}

/** Below this, a share is rounded up to the whole it stands for (floating-point noise). */
const EPSILON = 1e-9;

/**
 * The score, 0–100, of a node whose cpu and memory would be `requested` (the pod's with those
 * already there) of `allocatable`: the share left free (LeastAllocated) or taken (MostAllocated),
 * cpu and memory weighted alike; a resource the node has none of scores 0. Whole numbers, as
 * kube-scheduler computes them: each share rounded down, then their mean.
 */
export function resourceFitScore(
  strategy: FitScoring,
  requested: { readonly cpu: number; readonly memory: number },
  allocatable: { readonly cpu: number; readonly memory: number },
): number {
  const share = (resource: 'cpu' | 'memory') => {
    const total = allocatable[resource];
    if (total <= 0) return 0;
    const used = Math.min(requested[resource], total);
    const part = strategy === 'LeastAllocated' ? total - used : used;
    return Math.floor((part * 100) / total + EPSILON);
  };
  return Math.floor((share('cpu') + share('memory')) / 2);
}
