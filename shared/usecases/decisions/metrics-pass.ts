import {
  EMPTY_LABEL,
  type MetricDimensionKey,
  type MetricName,
  type MetricPoint,
} from '../../runtime/metrics.ts';
import type { DisruptionPassDecision, ObserveDecision } from './disruption.ts';
import { disruptionReasonLabel } from './metric-labels.ts';
import type { ConditionTally, CpuMemory, ObservedConditions } from './observation.ts';

// The metrics of a disruption pass: its summary (eligible, blocked and allowed nodes, budgets in
// use, consolidation moves) and its observation of the cluster (each NodePool's capacity, cost and
// nodes, pod startups, status conditions, terminations under way). Pure.

/** Makes one point of `name` now, under the cluster and `dimensions`. */
export type PointOf = (
  name: MetricName,
  values: number | readonly number[],
  dimensions?: Partial<Record<MetricDimensionKey, string>>,
) => MetricPoint;

/** The reasons of disruption budgets, as Karpenter's budget metrics write them. */
const BUDGET_REASONS = ['Empty', 'Drifted', 'Underutilized'] as const;

export function passPoints(decision: DisruptionPassDecision, point: PointOf): MetricPoint[] {
  const out: MetricPoint[] = [];
  for (const [reason, n] of Object.entries(decision.eligible)) {
    out.push(
      point('karpenter_voluntary_disruption_eligible_nodes', n, { reason: disruptionReasonLabel(reason) }),
    );
  }
  for (const [reason, n] of Object.entries(decision.blockedBy)) {
    out.push(point('voluntary_disruption_blocked_nodes', n, { reason }));
  }
  // Karpenter's figure is the budget before the nodes being disrupted count against it (those are
  // karpenter_nodepools_nodes_consuming_budgets); a decision without it has only what is left.
  for (const [nodepool, byReason] of Object.entries(decision.budgetNodes ?? decision.allowed)) {
    for (const reason of BUDGET_REASONS) {
      const n = byReason[reason];
      if (n !== undefined)
        out.push(point('karpenter_nodepools_allowed_disruptions', n, { nodepool, reason }));
    }
  }
  // Karpenter counts a NodePool's disrupting nodes against each reason's budget alike.
  for (const [nodepool, n] of Object.entries(decision.disrupting ?? {})) {
    for (const reason of BUDGET_REASONS) {
      out.push(point('karpenter_nodepools_nodes_consuming_budgets', n, { nodepool, reason }));
    }
  }
  for (const move of decision.consolidationMoves ?? []) {
    const dimensions = { decision: move.decision, nodepool: move.nodePool, policy: move.policy };
    out.push(point('karpenter_consolidation_moves_total', move.count, dimensions));
    if (move.scores.length > 0) out.push(point('karpenter_consolidation_score', move.scores, dimensions));
  }
  return out;
}

const RESOURCES = (figures: CpuMemory) => ({ cpu: figures.cpu, memory: figures.memoryBytes });

export function observePoints(decision: ObserveDecision, point: PointOf): MetricPoint[] {
  const out: MetricPoint[] = [];
  if (decision.podStartupSeconds.length > 0) {
    out.push(point('karpenter_pods_startup_duration_seconds', decision.podStartupSeconds));
  }
  let nodes = 0;
  const allocatable = { cpu: 0, memory: 0 };
  const requested = { cpu: 0, memory: 0 };
  for (const [nodepool, o] of Object.entries(decision.nodePools)) {
    nodes += o.nodes;
    const usage = { cpu: o.cpu, memory: o.memoryBytes, nodes: o.nodes };
    for (const [resource_type, value] of Object.entries(usage)) {
      out.push(point('karpenter_nodepools_usage', value, { nodepool, resource_type }));
    }
    for (const [resource, value] of Object.entries(o.limits ?? {})) {
      const resource_type = resource.toLowerCase().replaceAll('-', '_');
      out.push(point('karpenter_nodepools_limit', value, { nodepool, resource_type }));
    }
    out.push(
      point('karpenter_nodepools_cost_total', o.pricePerHour, { nodepool }),
      point('nodepools_idle_cost', o.idlePricePerHour, { nodepool }),
    );
    if (o.costLimitPerHour !== undefined) {
      out.push(point('nodepools_cost_limit', o.costLimitPerHour, { nodepool }));
    }
    if ((o.unpricedNodeClaims ?? 0) > 0) {
      out.push(
        point('karpenter_nodepools_cost_tracker_errors_total', o.unpricedNodeClaims ?? 0, { nodepool }),
      );
    }
    const totals = {
      karpenter_nodes_allocatable: o.allocatable,
      karpenter_nodes_total_pod_requests: o.podRequests,
      karpenter_nodes_total_daemon_requests: o.daemonRequests,
      karpenter_nodes_system_overhead: o.systemOverhead,
    } as const;
    for (const [name, figures] of Object.entries(totals) as [keyof typeof totals, CpuMemory][]) {
      for (const [resource_type, value] of Object.entries(RESOURCES(figures))) {
        out.push(point(name, value, { nodepool, resource_type }));
      }
    }
    if (o.oldestNodeSeconds !== undefined) {
      out.push(point('karpenter_nodes_current_lifetime_seconds', o.oldestNodeSeconds, { nodepool }));
    }
    allocatable.cpu += o.allocatable.cpu;
    allocatable.memory += o.allocatable.memoryBytes;
    requested.cpu += o.podRequests.cpu;
    requested.memory += o.podRequests.memoryBytes;
  }
  out.push(point('karpenter_cluster_state_node_count', nodes));
  if (decision.clusterCostLimitPerHour !== undefined) {
    out.push(point('cluster_cost_limit', decision.clusterCostLimitPerHour));
  }
  for (const resource_type of ['cpu', 'memory'] as const) {
    const whole = allocatable[resource_type];
    const percent = whole <= 0 ? 0 : Math.round((requested[resource_type] / whole) * 10_000) / 100;
    out.push(point('karpenter_cluster_utilization_percent', percent, { resource_type }));
  }
  out.push(...conditionPoints(decision.conditions, point));
  const { nodeClaimSeconds, nodeSeconds } = decision.terminating ?? {};
  if (nodeClaimSeconds !== undefined) {
    out.push(point('operator_nodeclaim_termination_current_time_seconds', nodeClaimSeconds));
  }
  if (nodeSeconds !== undefined) {
    out.push(point('operator_node_termination_current_time_seconds', nodeSeconds));
  }
  return out;
}

/** The operator's series of each kind, by its prefix. */
const CONDITION_METRICS = {
  nodeClaim: 'operator_nodeclaim_status_condition',
  node: 'operator_node_status_condition',
  nodePool: 'operator_nodepool_status_condition',
  ec2NodeClass: 'operator_ec2nodeclass_status_condition',
} as const;

type ConditionPrefix = (typeof CONDITION_METRICS)[keyof typeof CONDITION_METRICS];

function conditionPoints(conditions: ObservedConditions | undefined, point: PointOf): MetricPoint[] {
  if (conditions === undefined) return [];
  const out: MetricPoint[] = [];
  for (const [kind, prefix] of Object.entries(CONDITION_METRICS) as [
    keyof ObservedConditions,
    ConditionPrefix,
  ][]) {
    for (const tally of conditions[kind]) out.push(...tallyPoints(prefix, tally, point));
  }
  return out;
}

function tallyPoints(prefix: ConditionPrefix, tally: ConditionTally, point: PointOf): MetricPoint[] {
  const dimensions = {
    type: tally.type,
    status: tally.status,
    ...(tally.reason === undefined ? {} : { reason: tally.reason === '' ? EMPTY_LABEL : tally.reason }),
  };
  const out: MetricPoint[] = [];
  if (tally.steady !== true && tally.objects > 0) {
    out.push(point(`${prefix}_count`, tally.objects, dimensions));
    if (tally.longestSeconds !== undefined) {
      out.push(point(`${prefix}_current_status_seconds`, tally.longestSeconds, dimensions));
    }
  }
  if (tally.transitions > 0) out.push(point(`${prefix}_transitions_total`, tally.transitions, dimensions));
  return out;
}
