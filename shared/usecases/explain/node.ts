import {
  consolidatable,
  type DisruptionBudget,
  type DisruptionReason,
  findCondition,
  isConditionTrue,
  isTimeZone,
  latestFiring,
  NodeClaimConditionType,
  NodePoolConditionType,
  parseCron,
  parseGoDurationMs,
  trueSinceMs,
} from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import { nodeClaimFields } from '../decisions/decision.ts';
import { candidatesAssumed, markAssumedPrices } from '../disruption/assumed-price.ts';
import { isEmptyCandidate } from '../disruption/balanced.ts';
import { computeClaimChanges } from '../disruption/conditions.ts';
import type { DisruptionCommand } from '../disruption/method.ts';
import { nextCommand } from '../disruption/next-command.ts';
import { passCandidates } from '../disruption/pass-candidates.ts';
import { buildSchedulingInput, readClusterState } from '../state/cluster-state.ts';
import { commandsInFlight } from '../state/command-record.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { ExplainPorts } from './pod.ts';
import { readOnlyCluster } from './read-only.ts';
import { ASSUMED_MARK, type NodeReasonCode, nodeReason, type Reason } from './reasons.ts';

// `flotilla explain node`: why a node stays, or what disruption does with it next, from the
// disruption controller's own steps on the cluster as it is (read once, written never): the
// cluster state with PodDisruptionBudgets, the NodeClaim conditions as a pass computes them, the
// candidates, each method in the controller's order within the NodePool's budgets, and the reasons
// consolidation gives for the nodes it keeps.

/** What disruption would do with the node now. */
export interface ExplainedDisruption {
  readonly method: string;
  readonly reason: DisruptionReason;
  readonly action: 'delete' | 'replace';
  /** Every node of the command (`nodeClaim`), this one included. */
  readonly nodeClaims: readonly string[];
  readonly pricePerHourBefore: number;
  readonly pricePerHourAfter: number;
  /** The catalog only assumes a price `pricePerHourBefore` counts. */
  readonly pricePerHourBeforeAssumed?: true;
  /** The catalog only assumes a price `pricePerHourAfter` counts. */
  readonly pricePerHourAfterAssumed?: true;
}

/** The budget that holds the node, as its NodePool writes it. */
export interface ExplainedBudget {
  readonly nodePool: string;
  readonly reason: DisruptionReason;
  readonly index: number;
  readonly budget: DisruptionBudget;
  readonly allowed: number;
  /** The window the budget is active in now (UTC), for a scheduled budget. */
  readonly window?: { readonly openedAt: string; readonly closesAt: string };
}

export type NodeExplanation =
  | { readonly kind: 'notFound'; readonly node: string; readonly message: string }
  | {
      readonly kind: 'node';
      readonly node: string;
      readonly atMs: number;
      readonly nodeClaim?: string;
      readonly nodePool?: string;
      /** `stays` with the reasons, or `disrupts` with what comes next. */
      readonly verdict: 'stays' | 'disrupts';
      readonly reasons: readonly Reason<NodeReasonCode>[];
      readonly budgets: readonly ExplainedBudget[];
      readonly next?: ExplainedDisruption;
      /** A price the reasons state is one the catalog only assumes (marked `*` after it). */
      readonly pricesAssumed?: true;
    };

/**
 * Explains one node (by Node name, or by the name of its NodeClaim).
 * @throws ClusterApiError when the cluster cannot be read; CloudApiError / CatalogUnavailableError
 *   when instance types cannot be.
 */
export async function explainNode(ports: ExplainPorts, name: string): Promise<NodeExplanation> {
  const cluster = readOnlyCluster(ports.cluster);
  const nowMs = ports.nowMs;
  const state = await readClusterState(cluster, ports.logger, { podDisruptionBudgets: true });
  const nodeFor = nodeIndex(state.nodes);
  const claim =
    state.nodeClaims.find((c) => c.name === name) ??
    state.nodeClaims.find((c) => nodeFor(c)?.name === name || c.status.nodeName === name);
  const node = state.nodes.find((n) => n.name === name) ?? (claim === undefined ? undefined : nodeFor(claim));
  const nodeName = node?.name ?? claim?.status.nodeName ?? name;
  if (node === undefined && claim === undefined) {
    return {
      kind: 'notFound',
      node: name,
      message: `no Node or NodeClaim is named ${name} (kubectl get nodes,nodeclaims lists them)`,
    };
  }
  const base = { kind: 'node', node: nodeName, atMs: nowMs } as const;
  const stays = (
    reasons: Reason<NodeReasonCode>[],
    extra: Partial<{ nodeClaim: string; nodePool: string }> = {},
  ) => ({ ...base, ...extra, verdict: 'stays', reasons, budgets: [] }) as const;
  if (claim === undefined) {
    return stays([nodeReason('notManaged', `node ${nodeName} has no NodeClaim (kubectl get nodeclaims)`)]);
  }
  const ids = nodeClaimFields(claim);
  if (claim.deleting) {
    return stays(
      [nodeReason('deleting', `nodeClaim ${claim.name} is being deleted; termination drains it`)],
      ids,
    );
  }

  // The pass's view: the conditions it computes (drift from the cluster alone: no instance is read).
  const pools = new Map(state.nodePools.map((p) => [p.pool.name, p]));
  const classes = new Map(state.nodeClasses.map((c) => [c.name, c]));
  const claims: ClusterNodeClaim[] = state.nodeClaims.map((c) =>
    c.deleting
      ? c
      : computeClaimChanges({
          claim: c,
          node: nodeFor(c),
          pool: c.nodePoolName === undefined ? undefined : pools.get(c.nodePoolName),
          nodeClass: classes.get(c.nodeClassRef.name),
          instance: undefined,
          nowMs,
        }).view,
  );
  const view = claims.find((c) => c.name === claim.name) ?? claim;
  if (claim.nodePoolName === undefined) {
    return stays(
      [
        nodeReason(
          'standalone',
          `nodeClaim ${claim.name} is in no NodePool: only its expireAfter, an interruption or its deletion removes it`,
        ),
      ],
      ids,
    );
  }
  const pool = pools.get(claim.nodePoolName);
  if (pool === undefined) {
    return stays([nodeReason('notManaged', `its NodePool ${claim.nodePoolName} does not exist`)], ids);
  }
  const input = await buildSchedulingInput(state, ports.cloud, {
    nowMs,
    observedMemory: 'lowerOnly',
    solveOptions: {
      ...(ports.maxCostPerHour === undefined ? {} : { maxCostPerHour: ports.maxCostPerHour }),
      ...(ports.kubeSchedulerScoring === undefined
        ? {}
        : { kubeSchedulerScoring: ports.kubeSchedulerScoring }),
    },
  });
  const { commands } = commandsInFlight(claims);
  const inCommand = [...commands.values()].find((r) => r.candidates.includes(claim.name));
  if (inCommand !== undefined) {
    return stays(
      [
        nodeReason(
          'inCommand',
          `command ${inCommand.id} (${inCommand.method}, ${inCommand.reason}) since ${inCommand.startedAt}, replacements ${inCommand.replacements.join(', ') || 'none'}`,
        ),
      ],
      ids,
    );
  }
  const initialized = isConditionTrue(view.status.conditions, NodeClaimConditionType.initialized);
  if (!initialized || node === undefined) {
    return stays(
      [
        nodeReason(
          'notInitialized',
          node === undefined
            ? `nodeClaim ${claim.name} has no Node yet`
            : `nodeClaim ${claim.name} is not Initialized (its node is not Ready, or startup taints are still on it)`,
        ),
      ],
      ids,
    );
  }

  const set = passCandidates({ state, claims, pools, input, nowMs });
  const reasons: Reason<NodeReasonCode>[] = [];
  // A node of a NodePool a schedule's window holds below what it runs: the window's method takes
  // it (nominated or not), and consolidation's settings do not matter to it.
  const windowed = (set.windowCandidates ?? []).find((c) => c.nodeClaim.name === claim.name);
  for (const e of set.excluded.filter((x) => x.nodeClaim.name === claim.name)) {
    if (windowed !== undefined && e.kind === 'nominated') continue;
    reasons.push(nodeReason(excludedCode(e.why), e.why));
  }
  const candidate =
    windowed ??
    [...set.candidates, ...(set.staticCandidates ?? [])].find((c) => c.nodeClaim.name === claim.name);
  if (candidate === undefined) {
    if (reasons.length === 0) reasons.push(nodeReason('noMethod', 'it is not a disruption candidate now'));
    return stays(reasons, ids);
  }
  for (const b of candidate.blockers) {
    reasons.push(nodeReason(b.why.includes('do-not-disrupt') ? 'doNotDisruptPod' : 'pdb', b.why));
  }
  // Consolidation's settings and prices do not hold a node a window takes.
  if (windowed === undefined) {
    // The NodePool's consolidation settings.
    const { consolidationPolicy, consolidateAfter } = pool.disruption;
    const verdict = consolidatable({
      consolidateAfter,
      initializedAtMs: trueSinceMs(view.status.conditions, NodeClaimConditionType.initialized),
      lastPodEventMs: view.status.lastPodEventMs,
      nowMs,
    });
    if (verdict.kind === 'notYet') {
      reasons.push(
        nodeReason(
          'consolidateAfter',
          `consolidateAfter ${consolidateAfter}: ${formatSeconds(verdict.atMs - nowMs)} left, at ${iso(verdict.atMs)} (since its last pod change or initialization)`,
        ),
      );
    } else if (verdict.kind === 'no' && consolidateAfter === 'Never') {
      reasons.push(
        nodeReason('consolidationDisabled', `nodePool ${pool.pool.name} has consolidateAfter: Never`),
      );
    }
    if (consolidationPolicy === 'WhenEmpty' && !isEmptyCandidate(candidate)) {
      reasons.push(
        nodeReason(
          'whenEmptyWithPods',
          `nodePool ${pool.pool.name} consolidates only empty nodes; ${candidate.reschedulablePods.length} pods run here`,
        ),
      );
    }
    if (candidate.pricePerHour === undefined && candidate.reschedulablePods.length > 0) {
      reasons.push(
        nodeReason(
          'noPrice',
          `no price for ${view.labels['node.kubernetes.io/instance-type'] ?? 'its instance type'} ${view.labels['karpenter.sh/capacity-type'] ?? ''} in ${view.labels['topology.kubernetes.io/zone'] ?? 'its zone'}`,
        ),
      );
    }
  }

  // The methods in the controller's order, as a pass asks them (next-command.ts). The node is
  // disrupted next only when it is in the command the pass takes; a command of another method (or
  // a later one of the same) that holds it comes after that one, if it still holds then.
  // A NodePool whose alarms held its rollout when the last pass read them (its RolloutPaused
  // condition): drift leaves its nodes alone, as that pass did.
  const rolloutHeld = new Map(
    [...pools.values()].flatMap((p) => {
      const paused = findCondition(p.conditions, NodePoolConditionType.rolloutPaused);
      return paused?.status === 'True' ? [[p.pool.name, paused.message] as const] : [];
    }),
  );
  const heldWhy = rolloutHeld.get(pool.pool.name);
  if (heldWhy !== undefined && isConditionTrue(claim.status.conditions, NodeClaimConditionType.drifted)) {
    reasons.push(nodeReason('rolloutPaused', `nodePool ${pool.pool.name}: ${heldWhy}`));
  }
  const asked = nextCommand({
    state,
    claims,
    pools,
    input,
    nowMs,
    set,
    everyMethod: true,
    repackConsolidation: ports.repackConsolidation === true,
    rolloutHeld,
  });
  const budgets: ExplainedBudget[] = [];
  const holds = (c: DisruptionCommand) => c.candidates.some((x) => x.nodeClaim.name === claim.name);
  const taken = asked.command;
  const next = taken !== undefined && holds(taken) ? taken : undefined;
  let later: DisruptionCommand | undefined;
  for (const { method, accepted, budgets: byPool, commands } of asked.looks) {
    if (!accepted.some((c) => c.nodeClaim.name === claim.name)) continue;
    const index = byPool.limitedBy.get(pool.pool.name);
    const left = byPool.allowed.get(pool.pool.name) ?? 0;
    if (left < 1 && index !== undefined && !budgets.some((b) => b.reason === method.reason)) {
      budgets.push(explainBudget(pool.pool.name, method.reason, index, pool.disruption.budgets, left, nowMs));
    }
    if (next === undefined) later ??= commands.find(holds);
  }
  for (const b of budgets) {
    const scheduled =
      b.window === undefined ? 'always active' : `active ${b.window.openedAt} to ${b.window.closesAt} (UTC)`;
    reasons.push(
      nodeReason(
        'budget',
        `nodePool ${b.nodePool} budgets[${b.index}] (nodes "${b.budget.nodes}"${b.budget.reasons === undefined ? '' : `, reasons ${b.budget.reasons.join(', ')}`}${b.budget.schedule === undefined ? '' : `, schedule "${b.budget.schedule}" for ${b.budget.duration}`}) allows ${b.allowed} ${b.reason} disruptions now, ${scheduled}`,
      ),
    );
  }
  const stayWhy = asked.stays.get(claim.name);
  let pricesAssumed = false;
  if (stayWhy !== undefined && next === undefined && later === undefined) {
    // The controller's reason says an assumed price in words; explain marks it as its prices.
    const marked = markAssumedPrices(stayWhy, ASSUMED_MARK);
    pricesAssumed = marked.marked;
    reasons.push(nodeReason('notCheaper', marked.text));
  }
  if (later !== undefined && taken !== undefined && reasons.length === 0) {
    reasons.push(
      nodeReason(
        'afterCommand',
        `${describeCommand(taken)} first; then ${describeCommand(later)}, if that still holds`,
      ),
    );
  }
  if (next !== undefined && reasons.length === 0) {
    const before = next.candidates.reduce((s, c) => s + (c.pricePerHour ?? 0), 0);
    const after = next.replacements.reduce((s, p) => s + (p.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
    const beforeAssumed = candidatesAssumed(next.candidates).size > 0;
    const afterAssumed = (next.replacementsAssumed ?? []).length > 0;
    const disruption: ExplainedDisruption = {
      method: next.method.name,
      reason: next.reason,
      action: next.replacements.length === 0 ? 'delete' : 'replace',
      nodeClaims: next.candidates.map((c) => c.nodeClaim.name),
      pricePerHourBefore: round4(before),
      pricePerHourAfter: round4(after),
      ...(beforeAssumed ? { pricePerHourBeforeAssumed: true } : {}),
      ...(afterAssumed ? { pricePerHourAfterAssumed: true } : {}),
    };
    const mark = (assumed: boolean) => (assumed ? ASSUMED_MARK : '');
    return {
      ...base,
      ...ids,
      verdict: 'disrupts',
      reasons: [
        nodeReason(
          'wouldDisrupt',
          `${disruption.method} (${disruption.reason}) would ${disruption.action} nodeClaims ${disruption.nodeClaims.join(', ')}: $${disruption.pricePerHourBefore.toFixed(4)}/h${mark(beforeAssumed)} → $${disruption.pricePerHourAfter.toFixed(4)}/h${mark(afterAssumed)}`,
        ),
      ],
      budgets,
      next: disruption,
      ...(beforeAssumed || afterAssumed ? { pricesAssumed: true } : {}),
    };
  }
  if (reasons.length === 0) {
    reasons.push(
      nodeReason(
        'noMethod',
        isEmptyCandidate(candidate)
          ? 'it is empty but not yet Consolidatable'
          : 'it is not empty, not drifted, and consolidation has not looked at it',
      ),
    );
  }
  return {
    ...base,
    ...ids,
    verdict: 'stays',
    reasons,
    budgets,
    ...(pricesAssumed ? { pricesAssumed: true } : {}),
  };
}

/** A command as explain names it: `method (reason) would delete nodeClaims a, b`. */
function describeCommand(command: DisruptionCommand): string {
  const action = command.replacements.length === 0 ? 'delete' : 'replace';
  return `${command.method.name} (${command.reason}) would ${action} nodeClaims ${command.candidates.map((c) => c.nodeClaim.name).join(', ')}`;
}

function excludedCode(why: string): NodeReasonCode {
  if (why.startsWith('node has karpenter.sh/do-not-disrupt')) return 'doNotDisruptNode';
  if (why.startsWith('node is nominated')) return 'nominated';
  return 'unreadablePods';
}

/** The budget that set `allowed`, with the UTC window it is active in now when it has a schedule. */
export function explainBudget(
  nodePool: string,
  reason: DisruptionReason,
  index: number,
  budgets: readonly DisruptionBudget[],
  allowed: number,
  nowMs: number,
): ExplainedBudget {
  const budget = budgets[index] ?? { nodes: '' };
  const base = { nodePool, reason, index, budget, allowed };
  if (budget.schedule === undefined || budget.duration === undefined) return base;
  const schedule = parseCron(budget.schedule);
  const durationMs = parseGoDurationMs(budget.duration);
  if ('problem' in schedule || durationMs === undefined) return base;
  if (budget.timeZone !== undefined && !isTimeZone(budget.timeZone)) return base;
  const f = latestFiring(schedule, nowMs, durationMs, budget.timeZone);
  if (f === undefined || f <= nowMs - durationMs) return base;
  return { ...base, window: { openedAt: iso(f), closesAt: iso(f + durationMs) } };
}

const iso = (ms: number) => new Date(ms).toISOString();
const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

function formatSeconds(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return [h > 0 ? `${h}h` : '', m > 0 ? `${m}m` : '', `${s % 60}s`].filter(Boolean).join('');
}
