import {
  DYNAMIC_RESOURCES_UNSUPPORTED,
  describeWindow,
  heldPool,
  openWindows,
  type UnschedulablePod,
} from '../../core/index.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';
import { nodePoolReadiness } from './nodepool-readiness.ts';

// Which NodePools may launch now, and what a pod that nothing can host is told. Pure: the
// provisioner and `flotilla plan` choose NodePools and word their reasons the same way.

/** A NodePool left out of provisioning, and why, in words a user can act on. */
export interface SkippedNodePool {
  readonly nodePool: string;
  readonly reason: string;
  /** Left out because the runaway guard pauses its launches (it is Ready otherwise). */
  readonly launchPaused?: true;
  /** Left out because its schedules hold it (a window of no new nodes, or schedules that do not read). */
  readonly scheduleHeld?: true;
}

/** A NodePool that may launch, with its Ready EC2NodeClass. */
export interface EligibleNodePool {
  readonly pool: ClusterNodePool;
  readonly nodeClass: EC2NodeClass;
}

export interface NodePoolSelection {
  readonly eligible: readonly EligibleNodePool[];
  readonly skipped: readonly SkippedNodePool[];
  /**
   * The Ready EC2NodeClasses of pools only their schedules leave out: their instance types still
   * price those pools' running nodes (for disruption and the cost it observes). @default none
   */
  readonly heldClasses?: readonly EC2NodeClass[];
}

/**
 * The NodePools that may launch: not being deleted, valid, and with an EC2NodeClass that exists,
 * is not being deleted and is Ready (the same rules as the NodePool's own Ready condition, computed
 * from the classes given rather than from the pool's stored status, so a pool is usable in the pass
 * that first resolves its class), and whose launches the runaway guard does not pause (`paused`:
 * NodePool name → why). Its schedules (`flotilla.io/schedules`) at `nowMs`: a window that holds no
 * new nodes leaves it out, one that holds limits lowers them; an annotation that does not read
 * leaves it out. Without `nowMs` (warming caches only) open windows are not looked for.
 */
export function selectNodePools(
  pools: readonly ClusterNodePool[],
  nodeClasses: readonly EC2NodeClass[],
  paused: ReadonlyMap<string, string> = new Map(),
  nowMs?: number,
): NodePoolSelection {
  const eligible: EligibleNodePool[] = [];
  const skipped: SkippedNodePool[] = [];
  const heldClasses: EC2NodeClass[] = [];
  for (const pool of pools) {
    const name = pool.pool.name;
    if (pool.deleting) {
      skipped.push({ nodePool: name, reason: 'it is being deleted' });
      continue;
    }
    const readiness = nodePoolReadiness(pool, nodeClasses);
    const nodeClass = nodeClasses.find((c) => c.name === pool.nodeClassRef.name);
    if (!readiness.ready || nodeClass === undefined) {
      skipped.push({
        nodePool: name,
        reason: `it is not Ready (${readiness.readyCondition.reason}): ${readiness.readyCondition.message}`,
      });
      continue;
    }
    const pause = paused.get(name);
    if (pause !== undefined) {
      skipped.push({ nodePool: name, reason: pause, launchPaused: true });
      continue;
    }
    const held = scheduled(pool, nowMs);
    if (typeof held === 'string') {
      skipped.push({ nodePool: name, reason: held, scheduleHeld: true });
      heldClasses.push(nodeClass);
      continue;
    }
    eligible.push({ pool: held, nodeClass });
  }
  return { eligible, skipped, ...(heldClasses.length === 0 ? {} : { heldClasses }) };
}

/** The pool as its open schedule windows hold it, or why it may not launch at all. */
function scheduled(pool: ClusterNodePool, nowMs: number | undefined): ClusterNodePool | string {
  const schedules = pool.schedules;
  if (schedules === undefined) return pool;
  if (schedules.kind === 'invalid') return schedules.problem;
  if (nowMs === undefined) return pool;
  const open = openWindows(schedules.schedules, nowMs);
  const closed = open.find((w) => w.schedule.hold.kind === 'noNewNodes');
  if (closed !== undefined) return describeWindow(closed);
  if (open.length === 0) return pool;
  const held = heldPool(pool.pool, open);
  return held === pool.pool ? pool : { ...pool, pool: held };
}

/** What nothing-fits means when there is no NodePool at all. */
export const NO_NODEPOOL_DEFINED = 'no NodePool is defined';

/**
 * The message a pod that nothing can host is told (its FailedScheduling Event and the decision
 * log): the solver's reason per NodePool it tried, then each NodePool left out and why. With no
 * usable NodePool it says so and why each one is not usable; `no NodePool is defined` only when
 * the cluster has none. A pod with Dynamic Resource Allocation requirements is told only that, as
 * Karpenter tells it, whatever the NodePools.
 */
export function unschedulableMessage(
  pod: Pick<UnschedulablePod, 'reasons'>,
  selection: { readonly eligible: number; readonly skipped: readonly SkippedNodePool[] },
): string {
  if (pod.reasons.some((r) => r.reason === DYNAMIC_RESOURCES_UNSUPPORTED))
    return DYNAMIC_RESOURCES_UNSUPPORTED;
  const skipped = selection.skipped.map((s) => `nodePool ${s.nodePool}: ${s.reason}`);
  if (selection.eligible === 0) {
    if (skipped.length === 0) return NO_NODEPOOL_DEFINED;
    const none = selection.skipped.some((s) => s.launchPaused === true || s.scheduleHeld === true)
      ? 'no NodePool can launch now'
      : 'no NodePool is Ready';
    return `${none}; ${skipped.join('; ')}`;
  }
  const tried = pod.reasons
    .filter((r) => r.nodePool !== '')
    .map((r) => `nodePool ${r.nodePool}: ${r.reason}`);
  return [...tried, ...selection.skipped.map((s) => `nodePool ${s.nodePool} skipped: ${s.reason}`)].join(
    '; ',
  );
}
