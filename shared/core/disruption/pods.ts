import { parseGoDurationMs } from '../duration.ts';
import type { Labels } from '../labels.ts';
import { type LabelSelector, matchesSelector, type Pod } from '../pod.ts';
import { DISRUPTED_TAINT, tolerates } from '../taints.ts';
import { Annotation } from '../well-known.ts';

// What the pods on a node say about disrupting it, as Karpenter v1 judges them: which pods must
// move elsewhere (reschedulable), which pods forbid voluntary disruption (do-not-disrupt, a
// PodDisruptionBudget that allows no eviction, several budgets on one pod; only for pods the drain
// would evict), and the cost of moving them.

/** A PodDisruptionBudget as disruption needs it. */
export interface PdbLimit {
  readonly namespace: string;
  readonly name: string;
  /** Undefined selects nothing; `{}` selects every pod of the namespace. */
  readonly selector?: LabelSelector;
  /** `status.disruptionsAllowed`. */
  readonly disruptionsAllowed: number;
  /** `unhealthyPodEvictionPolicy: AlwaysAllow`: a pod that is not Ready may go even at 0 allowed. */
  readonly alwaysAllowUnhealthy?: boolean;
}

/** Why a pod keeps its node from voluntary disruption. */
export interface PodBlocker {
  readonly pod: string;
  /** What blocks: the pod's `karpenter.sh/do-not-disrupt`, or its PodDisruptionBudget(s). */
  readonly kind: 'doNotDisrupt' | 'pdb';
  readonly why: string;
}

/** A pod that needs a place elsewhere when its node goes: neither a DaemonSet's pod nor a mirror pod. */
export function isReschedulable(pod: Pod): boolean {
  return pod.daemonSetName === undefined && pod.disruption?.mirror !== true;
}

/** What a `karpenter.sh/do-not-disrupt` value means for a pod at `nowMs`. */
export interface DoNotDisruptVerdict {
  readonly protected: boolean;
  /** The value is neither `"true"` nor a positive duration: it protects nothing (as in Karpenter). */
  readonly problem?: string;
  /** When a duration's protection ends (epoch ms). */
  readonly untilMs?: number;
}

/**
 * Whether a `karpenter.sh/do-not-disrupt` value protects a pod at `nowMs`, as Karpenter reads it:
 * `"true"`, or a positive Go duration that has not passed since the pod started (a pod not started
 * yet is protected). Any other value protects nothing and is reported as a problem.
 */
export function doNotDisruptValue(
  value: string | undefined,
  startedAtMs: number | undefined,
  nowMs: number,
): DoNotDisruptVerdict {
  if (value === undefined) return { protected: false };
  if (value === 'true') return { protected: true };
  const ms = parseGoDurationMs(value);
  if (ms === undefined || ms <= 0) {
    return {
      protected: false,
      problem: `karpenter.sh/do-not-disrupt "${value}" is neither "true" nor a positive duration such as 30m; it is ignored`,
    };
  }
  const untilMs = (startedAtMs ?? nowMs) + ms;
  return untilMs > nowMs ? { protected: true, untilMs } : { protected: false };
}

/** Whether `karpenter.sh/do-not-disrupt` protects the pod at `nowMs` (see doNotDisruptValue). */
export function doNotDisrupt(pod: Pod, nowMs: number): DoNotDisruptVerdict {
  return doNotDisruptValue(pod.disruption?.doNotDisrupt, pod.disruption?.startedAtMs, nowMs);
}

/** The budgets whose selector matches the pod (same namespace). */
export function matchingPdbs(pod: Pod, pdbs: readonly PdbLimit[]): PdbLimit[] {
  return pdbs.filter((b) => b.namespace === pod.namespace && matchesSelector(b.selector, pod.labels ?? {}));
}

/** A pod neither finished nor terminating. */
export function isActivePod(pod: Pod): boolean {
  return pod.disruption?.finished !== true && pod.disruption?.deletedAtMs === undefined;
}

/**
 * Whether the drain of the pod's node calls the Eviction API for it, as Karpenter's IsEvictable
 * (do-not-disrupt aside): active, not a mirror pod, not tolerating `karpenter.sh/disrupted:NoSchedule`.
 */
export function isEvictedByDrain(pod: Pod): boolean {
  return (
    isActivePod(pod) &&
    pod.disruption?.mirror !== true &&
    !(pod.tolerations ?? []).some((t) => tolerates(t, DISRUPTED_TAINT))
  );
}

/**
 * What keeps voluntary disruption off a node because of its pods, as Karpenter judges every pod on
 * it (DaemonSet pods too, which the drain evicts and waits on): active do-not-disrupt pods, and of
 * the pods the drain evicts (isEvictedByDrain) those whose only budget allows no eviction now
 * (unless the budget always allows evicting a pod that is not Ready, and this one is not) and
 * those under more than one budget (the Eviction API refuses those).
 */
export function podBlockers(pods: readonly Pod[], pdbs: readonly PdbLimit[], nowMs: number): PodBlocker[] {
  const out: PodBlocker[] = [];
  for (const pod of pods) {
    // Terminating and finished pods are going or gone: nothing to evict, nothing to protect.
    if (!isActivePod(pod)) continue;
    const name = `${pod.namespace}/${pod.name}`;
    const dnd = doNotDisrupt(pod, nowMs);
    if (dnd.protected) {
      out.push({
        pod: name,
        kind: 'doNotDisrupt',
        why:
          dnd.untilMs === undefined
            ? `pod ${name} has karpenter.sh/do-not-disrupt`
            : `pod ${name} has karpenter.sh/do-not-disrupt until ${new Date(dnd.untilMs).toISOString()}`,
      });
      continue;
    }
    if (!isEvictedByDrain(pod)) continue;
    const budgets = matchingPdbs(pod, pdbs);
    const only = budgets[0];
    if (budgets.length > 1) {
      out.push({
        pod: name,
        kind: 'pdb',
        why: `pod ${name} matches ${budgets.length} PodDisruptionBudgets (${budgets.map((b) => b.name).join(', ')}); eviction supports one`,
      });
    } else if (
      only !== undefined &&
      only.disruptionsAllowed <= 0 &&
      !(only.alwaysAllowUnhealthy === true && pod.disruption?.notReady === true)
    ) {
      out.push({ pod: name, kind: 'pdb', why: `pdb ${pod.namespace}/${only.name} prevents pod evictions` });
    }
  }
  return out;
}

/** Whether a node's `karpenter.sh/do-not-disrupt` annotation protects it. */
export function nodeDoNotDisrupt(annotations: Labels): boolean {
  return annotations[Annotation.doNotDisrupt] === 'true';
}

/**
 * Karpenter's cost of evicting one pod: 1, plus its deletion cost over 2^27 and its priority over
 * 2^25, clamped to [-10, 10].
 */
export function podEvictionCost(pod: Pod): number {
  const info = pod.disruption;
  const cost = 1 + (info?.deletionCost ?? 0) / 2 ** 27 + (info?.priority ?? 0) / 2 ** 25;
  return Math.min(10, Math.max(-10, cost));
}

/**
 * A node's disruption cost: the eviction costs of its reschedulable pods, scaled by the fraction
 * of its lifetime left (1 without expiry), so nodes about to expire cost little to disrupt now.
 */
export function disruptionCost(pods: readonly Pod[], lifetimeLeft = 1): number {
  const sum = pods.filter(isReschedulable).reduce((s, p) => s + podEvictionCost(p), 0);
  return sum * Math.min(1, Math.max(0, lifetimeLeft));
}
