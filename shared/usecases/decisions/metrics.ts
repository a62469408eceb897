import { assertNever } from '../../core/index.ts';
import {
  EMPTY_LABEL,
  type MetricDimensionKey,
  type MetricName,
  type MetricPoint,
} from '../../runtime/metrics.ts';
import {
  consolidationTypeOf,
  disruptionReasonLabel,
  FORCEFUL_TERMINATION_REASON,
  messageTypeOf,
  PROVISIONED_REASON,
  PROVISIONER_CONTROLLER,
  snakeCase,
  statusCategoryOf,
  UNKNOWN_DIMENSION,
} from './metric-labels.ts';
import { observePoints, type PointOf, passPoints } from './metrics-pass.ts';
import type { CompareDecision } from './shadow.ts';
import type { Decision, LaunchDecision } from './types.ts';

// The metrics of each decision (the catalog's, shared/runtime/metrics.ts): the one place a metric
// value is made, with Karpenter's names, label names and label values (metric-labels.ts).
// writeDecision publishes them to the metrics sink beside the logger (a Lambda's writes them as EMF
// beside the decision's line; the simulator's keeps them). Pure.

export { UNKNOWN_DIMENSION } from './metric-labels.ts';

/** Where and when a decision was made: the dimension every metric carries, and the time. */
export interface MetricContext {
  readonly cluster: string;
  readonly timeMs: number;
}

type Dimensions = Partial<Record<MetricDimensionKey, string>>;

/**
 * The metric points `decision` yields, each with every dimension its metric's dimension sets name.
 * A decision that measures nothing yields none.
 */
export function toMetricPoints(decision: Decision, context: MetricContext): MetricPoint[] {
  const point: PointOf = (name, values, dimensions = {}) => ({
    name,
    values: typeof values === 'number' ? [values] : values,
    timeMs: context.timeMs,
    dimensions: { cluster: context.cluster, ...dimensions },
  });
  const controller = { controller: PROVISIONER_CONTROLLER };
  switch (decision.kind) {
    case 'skip':
      // A run without pods: nothing waits (the pending-pod alarm reads 0, not missing data).
      return decision.reason === 'no provisionable pods'
        ? [
            point('karpenter_pods_unbound_time_seconds', 0),
            point('karpenter_scheduler_queue_depth', 0, controller),
            point('karpenter_scheduler_unschedulable_pods_count', 0, controller),
            ...ignoredPods(point, decision.ignoredPods),
          ]
        : [];
    case 'plan':
      return [
        point('karpenter_pods_unbound_time_seconds', decision.oldestPendingSeconds),
        point('karpenter_scheduler_queue_depth', decision.queued, controller),
        point('karpenter_scheduler_unschedulable_pods_count', decision.unschedulable, controller),
        point('karpenter_scheduler_scheduling_duration_seconds', decision.planMs / 1000, controller),
        ...ignoredPods(point, decision.ignoredPods),
      ];
    case 'launch':
      return launchPoints(decision, point);
    case 'launchBackoff':
      return decision.action === 'start'
        ? [point('nodepools_launch_backoff_started_total', 1, { nodepool: decision.nodePool })]
        : [];
    case 'cleanUp':
      // The log line is the record: the cluster (and its metrics' dimension) is going away.
      return [];
    case 'rolloutHold':
      // Said by the NodePool's RolloutPaused condition (its transitions are counted as such).
      return [];
    case 'register':
      return [
        point('karpenter_nodes_created_total', 1, {
          nodepool: decision.nodePool ?? EMPTY_LABEL,
          zone: decision.zone ?? UNKNOWN_DIMENSION,
        }),
      ];
    case 'delete':
      // Karpenter's liveness timeouts; a NodeClaim deleted with its Node is no disruption.
      return decision.reason === 'launch_timeout' || decision.reason === 'registration_timeout'
        ? [disrupted(point, decision.reason, decision.nodePool ?? EMPTY_LABEL, decision.capacityType)]
        : [];
    case 'collect':
      return decision.action === 'deleteNodeClaim' && decision.nodePool !== undefined
        ? [disrupted(point, 'garbage_collected', decision.nodePool, decision.capacityType)]
        : [];
    case 'handleInterruption': {
      const out: MetricPoint[] = [];
      const category = statusCategoryOf(decision.interruption);
      const messageType = messageTypeOf(decision.interruption);
      // The instance status poll reads EC2's status checks: its findings are no queue message.
      if (category === undefined && decision.laterInstance !== true) {
        out.push(...received(point, messageType, decision.queuedSeconds));
      }
      const acted = decision.action === 'cordonAndDrain' || decision.action === 'forcefulTermination';
      if (acted && category !== undefined) {
        out.push(point('karpenter_interruption_instance_status_unhealthy_total', 1, { category }));
      }
      if (acted && decision.nodePool !== undefined) {
        out.push(disrupted(point, messageType, decision.nodePool, decision.capacityType));
      }
      const offering =
        decision.unavailableOffering === undefined
          ? undefined
          : offeringDimensions(decision.unavailableOffering);
      if (offering !== undefined) {
        out.push(point('karpenter_cloudprovider_instance_type_offering_available', 0, offering));
      }
      return out;
    }
    case 'ignoreInterruption':
      return received(point, messageTypeOf(decision.interruption), decision.queuedSeconds);
    case 'drain': {
      if (decision.action !== 'evict') return [];
      const reason = decision.reason === 'deleted' ? FORCEFUL_TERMINATION_REASON : decision.reason;
      const codes = { '200': decision.evicted, '429': decision.blocked, '404': decision.gone };
      return [
        ...(decision.evicted === 0
          ? []
          : [point('karpenter_pods_drained_total', decision.evicted, { reason })]),
        ...Object.entries(codes)
          .filter(([, n]) => n > 0)
          .map(([code, n]) => point('karpenter_pods_eviction_requests_total', n, { code })),
      ];
    }
    case 'finalizeNode': {
      const out: MetricPoint[] = [];
      if (decision.terminationSeconds !== undefined) {
        out.push(point('operator_node_termination_duration_seconds', decision.terminationSeconds));
      }
      // A Node without a NodeClaim is not one of a NodePool's: Karpenter does not count it either.
      if (decision.nodePool === undefined) return out;
      const nodepool = { nodepool: decision.nodePool };
      out.push(
        point('karpenter_nodes_terminated_total', 1, {
          ...nodepool,
          zone: decision.zone ?? UNKNOWN_DIMENSION,
        }),
      );
      if (decision.drained === true) out.push(point('karpenter_nodes_drained_total', 1, nodepool));
      if (decision.terminationSeconds !== undefined) {
        out.push(
          point('karpenter_nodes_termination_duration_seconds', decision.terminationSeconds, nodepool),
        );
      }
      if (decision.lifetimeSeconds !== undefined) {
        out.push(point('karpenter_nodes_lifetime_duration_seconds', decision.lifetimeSeconds, nodepool));
      }
      return out;
    }
    case 'finalizeNodeClaim': {
      // A standalone NodeClaim's series carry Karpenter's empty NodePool label as EMPTY_LABEL.
      const nodepool = { nodepool: decision.nodePool ?? EMPTY_LABEL };
      const out = [
        point('karpenter_nodeclaims_terminated_total', 1, {
          ...nodepool,
          capacity_type: decision.capacityType ?? UNKNOWN_DIMENSION,
          zone: decision.zone ?? UNKNOWN_DIMENSION,
        }),
      ];
      if (decision.terminationSeconds !== undefined) {
        out.push(
          point('karpenter_nodeclaims_termination_duration_seconds', decision.terminationSeconds, nodepool),
          point('operator_nodeclaim_termination_duration_seconds', decision.terminationSeconds),
        );
      }
      if (decision.instanceTerminationSeconds !== undefined) {
        out.push(
          point(
            'karpenter_nodeclaims_instance_termination_duration_seconds',
            decision.instanceTerminationSeconds,
            nodepool,
          ),
        );
      }
      return out;
    }
    case 'repair': {
      if (decision.action !== 'replace') return [];
      const capacityType = decision.capacityType ?? UNKNOWN_DIMENSION;
      return [
        disrupted(point, 'unhealthy', decision.nodePool ?? EMPTY_LABEL, decision.capacityType),
        point('karpenter_nodeclaims_unhealthy_disrupted_total', 1, {
          condition: snakeCase(decision.conditionType ?? UNKNOWN_DIMENSION),
          nodepool: decision.nodePool ?? EMPTY_LABEL,
          capacity_type: capacityType,
          image_id: decision.imageId ?? UNKNOWN_DIMENSION,
        }),
      ];
    }
    case 'disrupt':
      return disruptPoints(decision, point);
    case 'disruptionPass':
      return decision.reason === 'lease held' ? [] : passPoints(decision, point);
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
    case 'staticCapacity':
    case 'consistency':
    case 'drifted':
    case 'adopted':
    case 'unconsolidatable':
      return [];
    default:
      return assertNever(decision);
  }
}

const ignoredPods = (point: PointOf, ignored: number | undefined): MetricPoint[] =>
  ignored === undefined || ignored === 0 ? [] : [point('karpenter_scheduler_ignored_pods_count', ignored)];

/** A NodeClaim deleted to disrupt it, as Karpenter counts it. */
const disrupted = (point: PointOf, reason: string, nodepool: string, capacityType: string | undefined) =>
  point('karpenter_nodeclaims_disrupted_total', 1, {
    reason,
    nodepool,
    capacity_type: capacityType ?? UNKNOWN_DIMENSION,
  });

/** An interruption message received, and how long it was on the queue when known. */
const received = (point: PointOf, messageType: string, queuedSeconds: number | undefined) => [
  point('karpenter_interruption_received_messages_total', 1, { message_type: messageType }),
  ...(queuedSeconds === undefined
    ? []
    : [point('karpenter_interruption_message_queue_duration_seconds', queuedSeconds)]),
];

/** `<capacityType>:<instanceType>:<zone>` as the launch decision lists backed-off offerings. */
function offeringDimensions(key: string): Dimensions | undefined {
  const [capacityType, instanceType, zone] = key.split(':');
  return capacityType === undefined || instanceType === undefined || zone === undefined
    ? undefined
    : { instance_type: instanceType, capacity_type: capacityType, zone };
}

function launchPoints(decision: LaunchDecision, point: PointOf): MetricPoint[] {
  const out: MetricPoint[] = [];
  const nodepool = decision.nodePool ?? EMPTY_LABEL;
  const capacityType = decision.capacityType;
  // A fenced launch's NodeClaim is discarded (or left for the lease holder); a resumed one was
  // counted by the run that created it; a standalone one is a user's, which Flotilla did not create.
  if (decision.reason !== 'resumed' && decision.reason !== 'standalone' && decision.outcome !== 'fenced') {
    out.push(
      point('karpenter_nodeclaims_created_total', 1, {
        nodepool,
        reason: PROVISIONED_REASON,
        min_values_relaxed: decision.minValuesRelaxed === true ? 'true' : 'false',
      }),
    );
  }
  const create = (error: string) =>
    point('karpenter_cloudprovider_errors_total', 1, { method: 'Create', error });
  switch (decision.outcome) {
    case 'launched': {
      const type = decision.instanceType;
      if (type === undefined) return out;
      if (decision.zone !== undefined) {
        const offering = { instance_type: type, capacity_type: capacityType, zone: decision.zone };
        out.push(point('karpenter_cloudprovider_instance_type_offering_available', 1, offering));
        if (decision.pricePerHour !== undefined) {
          out.push(
            point(
              'karpenter_cloudprovider_instance_type_offering_price_estimate',
              decision.pricePerHour,
              offering,
            ),
          );
        }
      }
      if (decision.instanceTypeCpu !== undefined) {
        out.push(
          point('karpenter_cloudprovider_instance_type_cpu_cores', decision.instanceTypeCpu, {
            instance_type: type,
          }),
        );
      }
      if (decision.instanceTypeMemoryBytes !== undefined) {
        out.push(
          point('karpenter_cloudprovider_instance_type_memory_bytes', decision.instanceTypeMemoryBytes, {
            instance_type: type,
          }),
        );
      }
      return out;
    }
    case 'insufficientCapacity':
      out.push(
        point('karpenter_cloudprovider_instance_launch_failures_total', 1, {
          nodepool,
          reason: 'InsufficientCapacityError',
          capacity_type: capacityType,
        }),
        create('InsufficientCapacityError'),
        disrupted(point, 'insufficient_capacity', nodepool, capacityType),
      );
      for (const key of decision.offerings ?? []) {
        const offering = offeringDimensions(key);
        if (offering !== undefined) {
          out.push(point('karpenter_cloudprovider_instance_type_offering_available', 0, offering));
        }
      }
      return out;
    case 'failed':
      if (decision.errorCode !== undefined) {
        out.push(
          point('karpenter_cloudprovider_instance_launch_failures_total', 1, {
            nodepool,
            reason: decision.errorCode,
            capacity_type: capacityType,
          }),
        );
      }
      if (decision.failureReason === 'NodeClassNotReady') {
        out.push(
          create('NodeClassNotReadyError'),
          disrupted(point, 'nodeclass_not_ready', nodepool, capacityType),
        );
      } else {
        out.push(create('none'));
      }
      return out;
    case 'fenced':
      // No launch was sent: the lease was lost first.
      return out;
    default:
      return assertNever(decision.outcome);
  }
}

function disruptPoints(decision: Extract<Decision, { kind: 'disrupt' }>, point: PointOf): MetricPoint[] {
  const out: MetricPoint[] = [];
  const reason = disruptionReasonLabel(decision.reason);
  const consolidationType = consolidationTypeOf(decision.method);
  // Karpenter's decision: a replace command when it starts, a delete command when it deletes.
  const decided =
    decision.outcome === 'started' || (decision.outcome === 'deleted' && decision.action === 'delete');
  if (decided && decision.candidates.length > 0) {
    out.push(
      point('karpenter_voluntary_disruption_decisions_total', 1, {
        decision: decision.action,
        reason,
        consolidation_type: consolidationType,
      }),
      point('voluntary_disruption_savings', decision.pricePerHourBefore - decision.pricePerHourAfter, {
        reason,
      }),
    );
    for (const nodepool of new Set(decision.candidates.map((c) => c.nodePool ?? EMPTY_LABEL))) {
      out.push(point('karpenter_voluntary_disruption_decisions_by_nodepool_total', 1, { nodepool, reason }));
    }
  }
  if (decision.outcome === 'started') {
    for (const r of decision.replacements) {
      out.push(
        point('karpenter_nodeclaims_created_total', 1, {
          nodepool: r.nodePool,
          reason,
          min_values_relaxed: 'false',
        }),
      );
    }
  }
  if (decision.outcome === 'deleted') {
    for (const c of decision.candidates) {
      out.push(disrupted(point, reason, c.nodePool ?? EMPTY_LABEL, c.capacityType));
    }
  }
  if (decision.outcome === 'failed' && decision.replacements.length > 0) {
    out.push(
      point('karpenter_voluntary_disruption_queue_failures_total', decision.replacements.length, {
        decision: decision.action,
        reason,
        // As Karpenter writes it: the decision again.
        consolidation_type: decision.action,
      }),
    );
  }
  if ((decision.failedValidations ?? 0) > 0) {
    out.push(
      point('karpenter_voluntary_disruption_failed_validations_total', decision.failedValidations ?? 0, {
        consolidation_type: consolidationType,
      }),
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
