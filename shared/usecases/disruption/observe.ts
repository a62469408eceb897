import {
  allowedDisruptions,
  computePodRequests,
  type DisruptionReason,
  isConditionTrue,
  Label,
  NodeClaimConditionType,
  type NodePool,
  type Offering,
  Resource,
  type ResourceList,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { EC2NodeClass } from '../../ports/ec2nodeclass.ts';
import { DECISION_SAMPLE_SIZE, nodeClaimFields } from '../decisions/decision.ts';
import type {
  DisruptionPassDecision,
  NodePoolObservation,
  ObserveDecision,
  ObservedChanges,
  ObservedNodeClaim,
} from '../decisions/disruption.ts';
import type { SchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from '../state/node-index.ts';
import { type CandidateSet, lookedAt } from './candidates.ts';
import { priceAssumedFrom, priceFrom } from './describe.ts';
import type { DisruptionMethod } from './method.ts';
import { nodeTotals, observeConditions, observeTerminations } from './observe-figures.ts';

// What a disruption pass tells besides its commands, from what it read anyway (the cluster summary
// and the offering catalog): which nodes were eligible or left alone and why, what the budgets
// allow, and each NodePool's capacity, cost and use. Pure.

/** The reasons budgets are kept for, as Karpenter's nodepools_allowed_disruptions reports them. */
const BUDGET_REASONS: readonly DisruptionReason[] = ['Empty', 'Drifted', 'Underutilized'];

export interface PassFiguresInput {
  readonly set: CandidateSet;
  readonly methods: readonly Pick<
    DisruptionMethod,
    'reason' | 'staticNodePools' | 'windowNodePools' | 'shouldDisrupt'
  >[];
  /** `<nodePool>/<reason>` pairs whose budget allowed nothing. */
  readonly budgetBlocked: ReadonlySet<string>;
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  /** The pass's NodeClaims (the uninitialized ones are left alone). */
  readonly claims: readonly ClusterNodeClaim[];
  readonly nowMs: number;
}

/** The eligible, blocked and allowed figures of a pass's decision. */
export function passFigures(
  input: PassFiguresInput,
): Pick<DisruptionPassDecision, 'eligible' | 'blockedBy' | 'allowed' | 'budgetNodes' | 'disrupting'> {
  const { set, nowMs } = input;
  const eligible: Partial<Record<DisruptionReason, Set<string>>> = {};
  for (const reason of BUDGET_REASONS) eligible[reason] = new Set();
  const blockedBy: Record<string, number> = {};
  const block = (why: string) => {
    blockedBy[why] = (blockedBy[why] ?? 0) + 1;
  };
  for (const excluded of set.excluded) {
    block(excluded.kind === 'doNotDisrupt' ? 'doNotDisruptNode' : excluded.kind);
  }
  const uninitialized = input.claims.filter(
    (c) => !c.deleting && !isConditionTrue(c.status.conditions, NodeClaimConditionType.initialized),
  ).length;
  if (uninitialized > 0) blockedBy['notInitialized'] = uninitialized;
  for (const method of input.methods) {
    const looked = lookedAt(method, set);
    for (const c of looked)
      if (method.shouldDisrupt(c, nowMs)) eligible[method.reason]?.add(c.nodeClaim.name);
  }
  for (const c of [...set.candidates, ...(set.staticCandidates ?? [])]) {
    const [blocker] = c.blockers;
    if (blocker !== undefined) {
      block(blocker.kind === 'doNotDisrupt' ? 'doNotDisruptPod' : 'pdb');
      continue;
    }
    const pool = c.nodePool.pool.name;
    const budgeted = BUDGET_REASONS.some(
      (reason) =>
        eligible[reason]?.has(c.nodeClaim.name) === true && input.budgetBlocked.has(`${pool}/${reason}`),
    );
    if (budgeted) block('budget');
  }
  const allowed: Record<string, Partial<Record<DisruptionReason, number>>> = {};
  const budgetNodes: Record<string, Partial<Record<DisruptionReason, number>>> = {};
  const disrupting: Record<string, number> = {};
  for (const [name, counts] of set.counts) {
    const pool = input.pools.get(name);
    if (pool === undefined) continue;
    if (counts.disrupting > 0) disrupting[name] = counts.disrupting;
    const byReason: Partial<Record<DisruptionReason, number>> = {};
    const budgeted: Partial<Record<DisruptionReason, number>> = {};
    for (const reason of BUDGET_REASONS) {
      const n = allowedDisruptions(pool.disruption.budgets, reason, counts, nowMs).allowed;
      // No budget that holds: every node of the pool may go.
      byReason[reason] = Number.isFinite(n) ? n : counts.nodes;
      const b = allowedDisruptions(
        pool.disruption.budgets,
        reason,
        { ...counts, disrupting: 0 },
        nowMs,
      ).allowed;
      budgeted[reason] = Number.isFinite(b) ? b : counts.nodes;
    }
    allowed[name] = byReason;
    budgetNodes[name] = budgeted;
  }
  return {
    eligible: Object.fromEntries(Object.entries(eligible).map(([reason, names]) => [reason, names.size])),
    blockedBy,
    allowed,
    budgetNodes,
    ...(Object.keys(disrupting).length === 0 ? {} : { disrupting }),
  };
}

export interface ObserveInput {
  /** The NodePools' Nodes. */
  readonly nodes: readonly ClusterNode[];
  readonly claims: readonly ClusterNodeClaim[];
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  /** The EC2NodeClasses read (their conditions are tallied). @default none */
  readonly nodeClasses?: readonly EC2NodeClass[];
  /**
   * The pass's scheduling input: the instance types (with offering prices) of eligible NodePools'
   * classes, the catalog every NodeClaim is priced from, whatever its NodePool's eligibility.
   */
  readonly input: SchedulingInput | undefined;
  /**
   * Pods started after `sinceMs` and at or before `untilMs` count towards pod startup (none when
   * either is undefined): the previous observation's `untilMs`, and a time every pod started by
   * which is in `nodes`. Consecutive windows join, so each start is counted once.
   */
  readonly sinceMs?: number;
  readonly untilMs?: number;
  /**
   * When the pass read the NodeClaims: the list of those deleted runs from `sinceMs` to here, past
   * `untilMs`, since a deleted NodeClaim may be gone before the next pass reads (one may then be
   * named by two consecutive observations). Those created run to `untilMs`, as pod startups do:
   * a NodeClaim created since may not be in a summary yet. @default untilMs
   */
  readonly readAtMs?: number;
}

/** The observation of a pass: each NodePool's nodes, usage, limits, cost and use; pod startups. */
export function observeCluster(observed: ObserveInput): ObserveDecision {
  const nodeFor = nodeIndex(observed.nodes);
  const totals = new Map<string, Totals>();
  const totalsOf = (pool: string): Totals => {
    const t = totals.get(pool) ?? emptyTotals();
    totals.set(pool, t);
    return t;
  };
  for (const name of observed.pools.keys()) totalsOf(name);
  const poolNodes = new Map<string, ClusterNode[]>();
  for (const node of observed.nodes) {
    if (node.nodePoolName === undefined) continue;
    const inPool = poolNodes.get(node.nodePoolName) ?? [];
    poolNodes.set(node.nodePoolName, inPool);
    inPool.push(node);
    const t = totalsOf(node.nodePoolName);
    const capacity = node.capacity ?? node.allocatable;
    t.nodes += 1;
    t.cpuMillis += capacity[Resource.cpu] ?? 0;
    t.memoryBytes += capacity[Resource.memory] ?? 0;
    const requested = podRequests(node);
    t.allocatableCpu += node.allocatable[Resource.cpu] ?? 0;
    t.allocatableMemory += node.allocatable[Resource.memory] ?? 0;
    t.requestedCpu += requested.cpu;
    t.requestedMemory += requested.memory;
  }
  const priceOf = offeringPrices(observed.input);
  for (const claim of observed.claims) {
    const offering = offeringOf(claim);
    // Not launched yet: no instance runs for it, so it costs nothing.
    // A standalone NodeClaim is in no NodePool's totals.
    if (offering === undefined || claim.nodePoolName === undefined) continue;
    const t = totalsOf(claim.nodePoolName);
    const own = priceFrom(observed.input, claim);
    const fallback = own === undefined ? priceOf(offering) : undefined;
    const price = own ?? fallback?.priceUsdPerHour;
    if (price === undefined) {
      t.unpriced += 1;
      if (t.unpricedOfferings.length < DECISION_SAMPLE_SIZE && !t.unpricedOfferings.includes(offering)) {
        t.unpricedOfferings.push(offering);
      }
      continue;
    }
    t.price += price;
    if (own === undefined ? fallback?.priceAssumed === true : priceAssumedFrom(observed.input, claim)) {
      t.assumed += 1;
    }
    const node = nodeFor(claim);
    // A NodeClaim without its Node yet serves no pod: all of its price is idle.
    t.idle += node === undefined ? price : price * (1 - usedShare(node));
  }
  const nodePools: Record<string, NodePoolObservation> = {};
  // Ages are counted to the pass's last read.
  const nowMs = observed.readAtMs ?? observed.untilMs;
  for (const [name, t] of [...totals].sort(([a], [b]) => a.localeCompare(b))) {
    const limits = observed.pools.get(name)?.pool.limits;
    nodePools[name] = {
      ...nodeTotals(poolNodes.get(name) ?? [], nowMs),
      nodes: t.nodes,
      cpu: t.cpuMillis / 1000,
      memoryBytes: t.memoryBytes,
      ...(limits === undefined || Object.keys(limits).length === 0 ? {} : { limits: inUnits(limits) }),
      ...costLimitOf(observed.pools.get(name)?.pool.costLimit),
      pricePerHour: round(t.price, 6),
      idlePricePerHour: round(t.idle, 6),
      ...(t.unpriced === 0
        ? {}
        : { unpricedNodeClaims: t.unpriced, unpricedOfferings: [...t.unpricedOfferings].sort() }),
      ...(t.assumed === 0 ? {} : { assumedPriceNodeClaims: t.assumed }),
      cpuUtilization: percent(t.requestedCpu, t.allocatableCpu),
      memoryUtilization: percent(t.requestedMemory, t.allocatableMemory),
    };
  }
  const { sinceMs: since, untilMs: until } = observed;
  const podStartupSeconds =
    since === undefined || until === undefined
      ? []
      : observed.nodes.flatMap((node) =>
          node.pods.flatMap((pod) => {
            const started = pod.disruption?.startedAtMs;
            return started === undefined ||
              pod.createdAtMs === undefined ||
              started <= since ||
              started > until
              ? []
              : [round(Math.max(0, started - pod.createdAtMs) / 1000, 1)];
          }),
        );
  const priced = (claim: ClusterNodeClaim) => {
    const offering = offeringOf(claim);
    return (
      priceFrom(observed.input, claim) ??
      (offering === undefined ? undefined : priceOf(offering)?.priceUsdPerHour)
    );
  };
  const created = changesIn(observed.claims, priced, { since, until }, (c) => c.createdAtMs);
  const deleted = changesIn(
    observed.claims,
    priced,
    { since, until: observed.readAtMs ?? until },
    (c) => c.deletedAtMs,
  );
  const terminating = observeTerminations(observed.claims, observed.nodes, nowMs);
  const clusterLimit = observed.input?.solve.options?.maxCostPerHour;
  return {
    kind: 'observe',
    reason: 'disruption pass',
    nodePools,
    ...(clusterLimit === undefined ? {} : { clusterCostLimitPerHour: clusterLimit }),
    podStartupSeconds,
    ...(created === undefined ? {} : { nodeClaimsCreated: created }),
    ...(deleted === undefined ? {} : { nodeClaimsDeleted: deleted }),
    conditions: observeConditions({
      claims: observed.claims,
      nodes: observed.nodes,
      pools: observed.pools.values(),
      nodeClasses: observed.nodeClasses ?? [],
      nowMs,
      sinceMs: since,
      untilMs: until,
    }),
    ...(terminating === undefined ? {} : { terminating }),
    ...(since === undefined ? {} : { since: new Date(since).toISOString() }),
    ...(until === undefined ? {} : { until: new Date(until).toISOString() }),
  };
}

/** A NodePool's readable dollar limit, as the observation names it. */
function costLimitOf(limit: NodePool['costLimit']): { costLimitPerHour?: number } {
  return limit !== undefined && 'usdPerHour' in limit ? { costLimitPerHour: limit.usdPerHour } : {};
}

/** NodeClaims an observation names at most, per list (counted and priced all the same). */
export const OBSERVED_CHANGES_SAMPLE = 200;

/** The NodeClaims whose `at` falls after `since` and at or before `until`, oldest first. */
function changesIn(
  claims: readonly ClusterNodeClaim[],
  priceOf: (claim: ClusterNodeClaim) => number | undefined,
  { since, until }: { readonly since: number | undefined; readonly until: number | undefined },
  at: (claim: ClusterNodeClaim) => number | undefined,
): ObservedChanges | undefined {
  if (since === undefined || until === undefined) return undefined;
  const inWindow = claims
    .flatMap((claim) => {
      const ms = at(claim);
      return ms === undefined || ms <= since || ms > until ? [] : [{ claim, ms }];
    })
    .sort((a, b) => a.ms - b.ms || a.claim.name.localeCompare(b.claim.name));
  if (inWindow.length === 0) return undefined;
  let total = 0;
  const named: ObservedNodeClaim[] = [];
  for (const { claim, ms } of inWindow) {
    const price = priceOf(claim);
    total += price ?? 0;
    if (named.length >= OBSERVED_CHANGES_SAMPLE) continue;
    const type = claim.labels[Label.instanceType];
    const zone = claim.labels[Label.zone];
    const capacityType = claim.labels[Label.capacityType];
    named.push({
      ...nodeClaimFields(claim),
      at: new Date(ms).toISOString(),
      ...(type === undefined ? {} : { instanceType: type }),
      ...(zone === undefined ? {} : { zone }),
      ...(capacityType === undefined ? {} : { capacityType }),
      ...(price === undefined ? {} : { pricePerHour: price }),
    });
  }
  return { count: inWindow.length, pricePerHour: round(total, 6), nodeClaims: named };
}

interface Totals {
  nodes: number;
  cpuMillis: number;
  memoryBytes: number;
  allocatableCpu: number;
  allocatableMemory: number;
  requestedCpu: number;
  requestedMemory: number;
  price: number;
  idle: number;
  unpriced: number;
  unpricedOfferings: string[];
  /** Priced NodeClaims whose offering's price the catalog only assumes. */
  assumed: number;
}

function emptyTotals(): Totals {
  return {
    nodes: 0,
    cpuMillis: 0,
    memoryBytes: 0,
    allocatableCpu: 0,
    allocatableMemory: 0,
    requestedCpu: 0,
    requestedMemory: 0,
    price: 0,
    idle: 0,
    unpriced: 0,
    unpricedOfferings: [],
    assumed: 0,
  };
}

function podRequests(node: ClusterNode): { cpu: number; memory: number } {
  let cpu = 0;
  let memory = 0;
  for (const pod of node.pods) {
    const r = computePodRequests(pod);
    cpu += r[Resource.cpu] ?? 0;
    memory += r[Resource.memory] ?? 0;
  }
  return { cpu, memory };
}

/** A launched NodeClaim's offering as `instance type/zone/capacity type`, from its labels. */
function offeringOf(claim: ClusterNodeClaim): string | undefined {
  const type = claim.labels[Label.instanceType];
  const zone = claim.labels[Label.zone];
  const capacityType = claim.labels[Label.capacityType];
  return type === undefined || zone === undefined || capacityType === undefined
    ? undefined
    : `${type}/${zone}/${capacityType}`;
}

/**
 * Offering prices by `instance type/zone/capacity type` over every EC2NodeClass the pass read
 * instance types for. An offering's price is region-wide, the same whichever class lists it, so a
 * NodePool whose own class is not Ready (and had none read) is priced from the others'.
 */
function offeringPrices(input: SchedulingInput | undefined): (offering: string) => Offering | undefined {
  let prices: Map<string, Offering> | undefined;
  return (offering) => {
    // Built on the first NodeClaim its own class does not price: most passes never need it.
    if (prices === undefined) {
      prices = new Map();
      for (const types of input?.instanceTypes.values() ?? []) {
        for (const type of types) {
          for (const o of type.offerings) {
            const key = `${type.name}/${o.zone}/${o.capacityType}`;
            if (!prices.has(key)) prices.set(key, o);
          }
        }
      }
    }
    return prices.get(offering);
  };
}

/** The larger of the cpu and memory shares pods request of a node's allocatable, at most 1. */
function usedShare(node: ClusterNode): number {
  const requested = podRequests(node);
  const share = (used: number, of: number | undefined) => (of === undefined || of <= 0 ? 0 : used / of);
  return Math.min(
    1,
    Math.max(
      share(requested.cpu, node.allocatable[Resource.cpu]),
      share(requested.memory, node.allocatable[Resource.memory]),
    ),
  );
}

/** Limits as the usage metric counts them: cpu in cores, the rest as they are. */
function inUnits(limits: ResourceList): Record<string, number> {
  return Object.fromEntries(
    Object.entries(limits).map(([name, value]) => [name, name === Resource.cpu ? value / 1000 : value]),
  );
}

function percent(part: number, whole: number): number {
  return whole <= 0 ? 0 : round((part / whole) * 100, 2);
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
