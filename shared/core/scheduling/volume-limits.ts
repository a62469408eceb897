// CSI attach limits of existing nodes: the volumes each driver attaches there, from the pods bound
// to the node and those this solve places on it, against the node's CSINode limits.
import type { ExistingNode } from '../cluster.ts';
import { type Pod, podClaimIds } from '../pod.ts';
import type { Bin } from './model.ts';

/** Per node with limits: driver → the claims whose volumes it attaches there. */
export class VolumeUsage {
  private readonly used = new Map<Bin, Map<string, Set<string>>>();
  private readonly limits = new Map<Bin, Readonly<Record<string, number>>>();

  /** `claimDrivers`: `namespace/claim` → CSI driver (SolveInput.claimDrivers). */
  constructor(private readonly claimDrivers: ReadonlyMap<string, string> | undefined) {}

  /** Starts counting for the node's bin, when the node has limits, with the pods bound to it. */
  track(bin: Bin, node: ExistingNode): void {
    if (node.volumeLimits === undefined || Object.keys(node.volumeLimits).length === 0) return;
    this.limits.set(bin, node.volumeLimits);
    this.used.set(bin, new Map());
    for (const p of node.pods) this.record(bin, p);
  }

  /**
   * The first driver whose limit the pod's new volumes would pass on the bin, as a reason, or
   * undefined when they fit (a claim already attached there counts once).
   */
  exceeded(bin: Bin, pod: Pod): string | undefined {
    const limits = this.limits.get(bin);
    const used = this.used.get(bin);
    if (limits === undefined || used === undefined) return undefined;
    for (const [driver, claims] of this.byDriver(pod)) {
      const limit = limits[driver];
      if (limit === undefined) continue;
      const have = used.get(driver);
      let total = have?.size ?? 0;
      for (const c of claims) if (have === undefined || !have.has(c)) total += 1;
      if (total > limit) return `node ${bin.name} attaches at most ${limit} ${driver} volumes`;
    }
    return undefined;
  }

  /** Counts the pod's volumes on the bin (nothing when the bin's node has no limits). */
  record(bin: Bin, pod: Pod): void {
    const used = this.used.get(bin);
    if (used === undefined) return;
    for (const [driver, claims] of this.byDriver(pod)) {
      let set = used.get(driver);
      if (set === undefined) {
        set = new Set();
        used.set(driver, set);
      }
      for (const c of claims) set.add(c);
    }
  }

  private byDriver(pod: Pod): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    if (this.claimDrivers === undefined || pod.claimVolumes === undefined) return out;
    for (const id of podClaimIds(pod)) {
      const driver = this.claimDrivers.get(id);
      if (driver === undefined) continue;
      let set = out.get(driver);
      if (set === undefined) {
        set = new Set();
        out.set(driver, set);
      }
      set.add(id);
    }
    return out;
  }
}
