import { assertNever } from '../../core/index.ts';
import type { MetricDimensionKey, MetricName, MetricPoint } from '../../runtime/metrics.ts';
import type { ObserveDecision } from './disruption.ts';
import type { CompareDecision } from './shadow.ts';
import type { Decision } from './types.ts';

// The metrics of each decision (the catalog's, shared/runtime/metrics.ts): the one place a metric
// value is made. writeDecision publishes them to the metrics sink beside the logger (a Lambda's
// writes them as EMF beside the decision's line; the simulator's keeps them). Pure.

/** Where and when a decision was made: the dimension every metric carries, and the time. */
export interface MetricContext {
  readonly cluster: string;
  readonly timeMs: number;
}

/** A dimension value a decision does not know (a NodeClaim that never launched has no zone). */
export const UNKNOWN_DIMENSION = 'unknown';

/** The reasons of disruption budgets, as nodepools_allowed_disruptions reports them. */
const BUDGET_REASONS = ['Empty', 'Drifted', 'Underutilized'] as const;

type Dimensions = Partial<Record<MetricDimensionKey, string>>;

/**
 * The metric points `decision` yields, each with every dimension its metric's dimension sets name.
 * A decision that measures nothing yields none.
 */
export function toMetricPoints(decision: Decision, context: MetricContext): MetricPoint[] {
  const point = (name: MetricName, values: number | readonly number[], dimensions: Dimensions = {}) => ({
    name,
    values: typeof values === 'number' ? [values] : values,
    timeMs: context.timeMs,
    dimensions: { cluster: context.cluster, ...dimensions },
  });
  switch (decision.kind) {
    case 'skip':
      // A run without pods: nothing waits (the pending-pod alarm reads 0, not missing data).
      return decision.reason === 'no provisionable pods'
        ? [
            point('pods_unbound_time_seconds', 0),
            point('scheduler_queue_depth', 0),
            point('scheduler_unschedulable_pods_count', 0),
          ]
        : [];
    case 'plan':
      return [
        point('pods_unbound_time_seconds', decision.oldestPendingSeconds),
        point('scheduler_queue_depth', decision.queued),
        point('scheduler_unschedulable_pods_count', decision.unschedulable),
        point('scheduler_scheduling_duration_seconds', decision.planMs / 1000),
      ];
    case 'launch': {
      const out: MetricPoint[] = [];
      // A fenced launch's NodeClaim is discarded (or left for the lease holder); a resumed one was
      // counted by the run that created it.
      if (decision.reason !== 'resumed' && decision.outcome !== 'fenced') {
        out.push(
          point('nodeclaims_created_total', 1, { nodePool: decision.nodePool, reason: decision.reason }),
        );
      }
      if (decision.outcome !== 'launched') {
        out.push(
          point('cloudprovider_instance_launch_failures_total', 1, {
            nodePool: decision.nodePool,
            reason: decision.outcome,
            capacityType: decision.capacityType,
          }),
        );
      }
      if (decision.outcome === 'insufficientCapacity' || decision.outcome === 'failed') {
        out.push(point('cloudprovider_errors_total', 1, { reason: decision.outcome }));
      }
      return out;
    }
    case 'launchBackoff':
      return decision.action === 'start'
        ? [point('nodepools_launch_backoff_started_total', 1, { nodePool: decision.nodePool })]
        : [];
    case 'register':
      return [
        point('nodes_created_total', 1, {
          nodePool: decision.nodePool,
          zone: decision.zone ?? UNKNOWN_DIMENSION,
        }),
      ];
    case 'handleInterruption': {
      const received = point('interruption_received_messages_total', 1, { reason: decision.interruption });
      return (decision.action === 'cordonAndDrain' || decision.action === 'forcefulTermination') &&
        decision.nodePool !== undefined
        ? [
            received,
            point('nodeclaims_disrupted_total', 1, {
              nodePool: decision.nodePool,
              reason: decision.interruption,
            }),
          ]
        : [received];
    }
    case 'ignoreInterruption':
      return [point('interruption_received_messages_total', 1, { reason: decision.interruption })];
    case 'drain': {
      const drained = decision.action === 'evict' ? decision.evicted : decision.pods.length;
      return drained === 0
        ? []
        : [point('pods_drained_total', drained, { nodePool: decision.nodePool, reason: decision.reason })];
    }
    case 'finalizeNode':
      // A Node without a NodeClaim is not one of a NodePool's: Karpenter does not count it either.
      return decision.nodePool === undefined
        ? []
        : [point('nodes_terminated_total', 1, { nodePool: decision.nodePool })];
    case 'finalizeNodeClaim':
      return [
        point('nodeclaims_terminated_total', 1, {
          nodePool: decision.nodePool,
          capacityType: decision.capacityType ?? UNKNOWN_DIMENSION,
          zone: decision.zone ?? UNKNOWN_DIMENSION,
        }),
      ];
    case 'repair':
      return decision.action === 'replace'
        ? [point('nodeclaims_disrupted_total', 1, { nodePool: decision.nodePool, reason: 'repair' })]
        : [];
    case 'disrupt': {
      const out: MetricPoint[] = [];
      const first = decision.candidates[0];
      // Karpenter's decision: a replace command when it starts, a delete command when it deletes.
      const decided =
        decision.outcome === 'started' || (decision.outcome === 'deleted' && decision.action === 'delete');
      if (decided && first !== undefined) {
        out.push(
          point('voluntary_disruption_decisions_total', 1, {
            nodePool: first.nodePool,
            reason: decision.reason,
          }),
          point('voluntary_disruption_savings', decision.pricePerHourBefore - decision.pricePerHourAfter, {
            reason: decision.reason,
          }),
        );
      }
      if (decision.outcome === 'started') {
        for (const r of decision.replacements) {
          out.push(point('nodeclaims_created_total', 1, { nodePool: r.nodePool, reason: 'disruption' }));
        }
      }
      if (decision.outcome === 'deleted') {
        for (const c of decision.candidates) {
          out.push(point('nodeclaims_disrupted_total', 1, { nodePool: c.nodePool, reason: decision.reason }));
        }
      }
      return out;
    }
    case 'disruptionPass': {
      if (decision.reason === 'lease held') return [];
      const out: MetricPoint[] = [];
      for (const [reason, n] of Object.entries(decision.eligible)) {
        out.push(point('voluntary_disruption_eligible_nodes', n, { reason }));
      }
      for (const [reason, n] of Object.entries(decision.blockedBy)) {
        out.push(point('voluntary_disruption_blocked_nodes', n, { reason }));
      }
      for (const [nodePool, byReason] of Object.entries(decision.allowed)) {
        for (const reason of BUDGET_REASONS) {
          const n = byReason[reason];
          if (n !== undefined) out.push(point('nodepools_allowed_disruptions', n, { nodePool, reason }));
        }
      }
      return out;
    }
    case 'observe':
      return observePoints(decision, point);
    case 'compare':
      return comparePoints(decision, context.cluster);
    case 'batch':
    case 'unschedulable':
    case 'followUp':
    case 'schedulePasses':
    case 'initialize':
    case 'wait':
    case 'delete':
    case 'resolveNodeClass':
    case 'waitForNodeClaims':
    case 'finalizeNodeClass':
    case 'reservationEnd':
    case 'updateNodePool':
    case 'rejectNodePool':
    case 'updateNodeOverlay':
    case 'deadline':
    case 'deleteNode':
    case 'taint':
    case 'terminate':
    case 'continue':
    case 'collect':
    case 'staticCapacity':
    case 'drifted':
    case 'adopted':
    case 'unconsolidatable':
      return [];
    default:
      return assertNever(decision);
  }
}

function observePoints(
  decision: ObserveDecision,
  point: (name: MetricName, values: number | readonly number[], dimensions?: Dimensions) => MetricPoint,
): MetricPoint[] {
  const out: MetricPoint[] = [];
  if (decision.podStartupSeconds.length > 0) {
    out.push(point('pods_startup_duration_seconds', decision.podStartupSeconds));
  }
  for (const [nodePool, o] of Object.entries(decision.nodePools)) {
    const usage = { cpu: o.cpu, memory: o.memoryBytes, nodes: o.nodes };
    for (const [resourceType, value] of Object.entries(usage)) {
      out.push(point('nodepools_usage', value, { nodePool, resourceType }));
    }
    for (const [resourceType, value] of Object.entries(o.limits ?? {})) {
      out.push(point('nodepools_limit', value, { nodePool, resourceType }));
    }
    out.push(
      point('nodepools_cost_total', o.pricePerHour, { nodePool }),
      point('nodepools_idle_cost', o.idlePricePerHour, { nodePool }),
      point('nodepools_utilization_percent', o.cpuUtilization, { nodePool, resourceType: 'cpu' }),
      point('nodepools_utilization_percent', o.memoryUtilization, { nodePool, resourceType: 'memory' }),
      point('cluster_state_node_count', o.nodes, { nodePool }),
    );
  }
  return out;
}

/**
 * A shadow day's figures, dated in the last minute of the UTC day they are about: one value per
 * day, minutes old when the Lambda writes them after midnight (CloudWatch may take two days to show
 * a value dated a day back).
 */
function comparePoints(decision: CompareDecision, cluster: string): MetricPoint[] {
  const timeMs = Date.parse(`${decision.day}T23:59:00.000Z`);
  const point = (name: MetricName, value: number, dimensions: Dimensions = {}): MetricPoint => ({
    name,
    values: [value],
    timeMs,
    dimensions: { cluster, ...dimensions },
  });
  const out = [point('shadow_observed_hours', decision.hours)];
  const sides = { live: decision.live, flotilla: decision.flotilla };
  for (const [side, figures] of Object.entries(sides)) {
    if (figures === undefined) continue;
    out.push(point('shadow_cost_per_hour', figures.pricePerHour, { side }));
    const quantiles = { p50: figures.podWaitP50Seconds, p90: figures.podWaitP90Seconds };
    for (const [quantile, seconds] of Object.entries(quantiles)) {
      if (seconds !== undefined) out.push(point('shadow_pod_wait_seconds', seconds, { side, quantile }));
    }
  }
  for (const [reason, perHour] of Object.entries(decision.savingsPerHour ?? {})) {
    out.push(point('shadow_savings_per_hour', perHour, { reason }));
  }
  return out;
}
