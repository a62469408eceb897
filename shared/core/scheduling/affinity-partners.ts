// Pods that must join another pending pod on its node (required pod affinity on the hostname),
// and the room they will need there. A pod that others must join is placed, when it can be,
// where they fit beside it; see attempt.ts.
import { Label } from '../labels.ts';
import type { PoolReason } from '../scheduling-types.ts';
import { affinityUnmet, type TopologyGroup } from '../topology.ts';
import type { PodState, Shape } from './model.ts';
import { addInto, type Vec } from './vectors.ts';

export class AffinityPartners {
  /** For a shape, the other shapes whose required hostname affinity selects it, with that group. */
  private readonly joiners = new Map<Shape, readonly { shape: Shape; group: TopologyGroup }[]>();
  /** Pods not placed yet of each shape that must join others. */
  private readonly unplaced = new Map<Shape, number>();
  /** Shapes whose last try failed for a reason other than a pod to join (a taint, a limit…). */
  private readonly blocked = new Set<Shape>();

  /** Call once the topology groups are linked to the shapes (`countedBy` is set). */
  constructor(states: readonly PodState[]) {
    const shapes = new Set<Shape>();
    for (const st of states) shapes.add(st.shape);
    const needing = [...shapes].filter((s) => s.affinityRequired.some((t) => t.group.key === Label.hostname));
    if (needing.length === 0) return;
    const joining = new Set(needing);
    for (const st of states) {
      if (joining.has(st.shape)) this.unplaced.set(st.shape, (this.unplaced.get(st.shape) ?? 0) + 1);
    }
    for (const s of shapes) {
      const counted = new Set(s.countedBy);
      const js: { shape: Shape; group: TopologyGroup }[] = [];
      for (const j of needing) {
        if (j === s) continue;
        for (const t of j.affinityRequired)
          if (t.group.key === Label.hostname && counted.has(t.group)) js.push({ shape: j, group: t.group });
      }
      if (js.length > 0) this.joiners.set(s, js);
    }
  }

  /** One pod of the shape was placed. */
  placed(shape: Shape): void {
    const n = this.unplaced.get(shape);
    if (n !== undefined) this.unplaced.set(shape, n - 1);
  }

  /**
   * A pod of the shape failed a try. When no NodePool refused it only for want of a pod to join
   * on the hostname, pods that it must join no longer keep room for it (it would not come).
   */
  failed(shape: Shape, reasons: readonly PoolReason[]): void {
    if (!this.unplaced.has(shape)) return;
    const waiting = affinityUnmet(Label.hostname);
    if (reasons.some((r) => r.reason === waiting)) this.blocked.delete(shape);
    else this.blocked.add(shape);
  }

  /**
   * The requests of the pod plus those of every pending pod that must join it on its node, while
   * no pod they could join is placed yet (this pod is the first they will follow: later ones
   * are placed as any pod); undefined when no pending pod must.
   */
  need(shape: Shape): Vec | undefined {
    const js = this.joiners.get(shape);
    if (js === undefined) return undefined;
    let out: Float64Array | undefined;
    const counted = new Set<Shape>();
    for (const { shape: j, group } of js) {
      const n = this.unplaced.get(j) ?? 0;
      if (n <= 0 || group.total > 0 || counted.has(j) || this.blocked.has(j)) continue;
      counted.add(j);
      out ??= Float64Array.from(shape.vec);
      for (let k = 0, m = onePerNode(j) ? 1 : n; k < m; k++) addInto(out, j.vec);
    }
    return out;
  }
}

/** Pods of the shape repel each other per node: required hostname anti-affinity to itself, or host ports. */
function onePerNode(shape: Shape): boolean {
  if (shape.hostPorts.length > 0) return true;
  const own = new Set(shape.countedBy);
  return shape.antiRequired.some((t) => t.group.key === Label.hostname && own.has(t.group));
}
