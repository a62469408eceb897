import type { ExistingNode, Pod } from '../core/index.ts';
import { chooseNode } from './kube-scheduler.ts';
import type { ScoringStrategy } from './scenario-types.ts';

// kube-scheduler's DefaultPreemption, for a pod that fits no node: on each node, the pods of lower
// priority are taken away until the pod fits (all of them first, then as many given back as still
// leave it room, highest priority first: the reprieve); among the nodes where it then fits, the one
// whose highest victim has the lowest priority, then the lowest sum of victims' priorities, then the
// fewest victims, then the first by name. PodDisruptionBudgets, which kube-scheduler tries not to
// break but may, are not weighed here. Pure.

/** Where a pod preempts, and whom. */
export interface Preemption {
  readonly nodeName: string;
  readonly victims: readonly Pod[];
}

/**
 * The preemption that makes room for `pod` (of `priority`) among `nodes`, if any; `priorityOf`
 * gives a bound pod's priority (as admission resolved it).
 */
export function choosePreemption(
  strategy: ScoringStrategy,
  pod: Pod,
  priority: number,
  nodes: readonly ExistingNode[],
  priorityOf: (pod: Pod) => number,
  nowMs: number,
): Preemption | undefined {
  let best: { nodeName: string; victims: Pod[]; top: number; sum: number } | undefined;
  for (const node of nodes) {
    const lower = node.pods.filter((p) => priorityOf(p) < priority);
    if (lower.length === 0) continue;
    const kept = node.pods.filter((p) => priorityOf(p) >= priority);
    const fits = (pods: readonly Pod[]) =>
      chooseNode(strategy, pod, [{ ...node, pods }], nowMs) !== undefined;
    if (!fits(kept)) continue;
    const victims: Pod[] = [];
    for (const candidate of [...lower].sort((a, b) => priorityOf(b) - priorityOf(a))) {
      if (fits([...kept, candidate])) kept.push(candidate);
      else victims.push(candidate);
    }
    const top = Math.max(...victims.map(priorityOf));
    const sum = victims.reduce((s, v) => s + priorityOf(v), 0);
    const better =
      best === undefined ||
      top < best.top ||
      (top === best.top &&
        (sum < best.sum ||
          (sum === best.sum &&
            (victims.length < best.victims.length ||
              (victims.length === best.victims.length && node.name < best.nodeName)))));
    if (better) best = { nodeName: node.name, victims, top, sum };
  }
  return best === undefined ? undefined : { nodeName: best.nodeName, victims: best.victims };
}
