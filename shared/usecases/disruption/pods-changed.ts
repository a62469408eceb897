import { Annotation, doNotDisruptValue } from '../../core/index.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { DisruptionCandidate } from './method.ts';

/**
 * Why the pods on a candidate differ from those the command was decided on (which may come from
 * the cluster summary, seconds behind), as the API server lists them now; undefined when they do
 * not. A pod that must move and was not counted, or one that cannot be read, stops the command: a
 * node is never taken for emptier than it is.
 */
export async function podsChanged(
  cluster: Pick<Cluster, 'podsOnNode'>,
  candidates: readonly DisruptionCandidate[],
  nowMs: number,
): Promise<string | undefined> {
  for (const c of candidates) {
    const read = await cluster.podsOnNode(c.node.name);
    if (read.problems.length > 0) {
      return `a pod on node ${c.node.name} cannot be read: ${read.problems[0]?.message ?? ''}`;
    }
    const counted = new Set(c.reschedulablePods.map((p) => p.uid));
    const unseen = read.items.find(
      (p) =>
        !p.daemonSet &&
        !p.mirror &&
        p.phase !== 'Succeeded' &&
        p.phase !== 'Failed' &&
        p.deletedAtMs === undefined &&
        !counted.has(p.uid),
    );
    if (unseen !== undefined) {
      return `pod ${unseen.namespace}/${unseen.name} arrived on node ${c.node.name} after the command was decided`;
    }
    // A pod counted when the command was decided may have been annotated since.
    const protectedPod = read.items.find(
      (p) =>
        !p.daemonSet &&
        !p.mirror &&
        p.deletedAtMs === undefined &&
        doNotDisruptValue(p.annotations[Annotation.doNotDisrupt], p.startedAtMs, nowMs).protected,
    );
    if (protectedPod !== undefined && c.blockers.length === 0) {
      return `pod ${protectedPod.namespace}/${protectedPod.name} on node ${c.node.name} has karpenter.sh/do-not-disrupt`;
    }
  }
  return undefined;
}
