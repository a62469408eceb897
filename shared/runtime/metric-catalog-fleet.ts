import { D, type MetricBody, MetricDimension } from './metric-types.ts';

// Karpenter v1.14's disruption, NodePool, interruption and cloud provider series (kubernetes-sigs/
// karpenter's disruption and NodePool metrics, the AWS provider's interruption and cloud provider
// metrics), under Karpenter's names.

const { C, P, R, T, Z, K, I } = D;
const DECISION = MetricDimension.decision;
const CONSOLIDATION = MetricDimension.consolidationType;
const POLICY = MetricDimension.policy;
const MESSAGE = MetricDimension.messageType;
const CATEGORY = MetricDimension.category;
const ERROR = MetricDimension.error;
const METHOD = MetricDimension.method;

export const FLEET_METRICS = {
  karpenter_voluntary_disruption_decisions_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, DECISION], [C, R], [C, CONSOLIDATION]],
    karpenter: 'decision, reason, consolidation_type',
    help: 'Disruption commands decided (a replace command when it starts, a delete command when it deletes): decision `delete` or `replace`, reason `empty`, `underutilized`, `drifted` or `expired`, consolidation_type `empty`, `single`, `multi` (`repack` for Flotilla’s repack, `none` for drift and expiration)',
  },
  karpenter_voluntary_disruption_decisions_by_nodepool_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [
      [C, P],
      [C, P, R],
    ],
    karpenter: 'nodepool, decision, reason, consolidation_type',
    help: 'The decisions of karpenter_voluntary_disruption_decisions_total, once for each NodePool of the command’s candidates',
  },
  karpenter_voluntary_disruption_eligible_nodes: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, R]],
    karpenter: 'reason',
    help: 'Nodes a disruption pass found eligible, by reason `empty`, `drifted`, `underutilized`',
  },
  karpenter_voluntary_disruption_failed_validations_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, CONSOLIDATION]],
    karpenter: 'consolidation_type',
    help: 'Candidates of commands that failed their validation after the wait (a whole command abandoned, or candidates dropped from it)',
  },
  karpenter_voluntary_disruption_queue_failures_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, DECISION], [C, R], [C, CONSOLIDATION]],
    karpenter: 'decision, reason, consolidation_type',
    help: 'Replacements of replace commands that failed (a replacement went away or never initialized in time), by the command’s decision and reason; consolidation_type holds the decision, as Karpenter writes it',
  },
  karpenter_consolidation_moves_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, DECISION], [C, P], [C, POLICY]],
    karpenter: 'decision, nodepool, policy',
    help: 'Consolidation moves weighed: every single-node move, and each multi-node command decided (once per NodePool of its candidates); decision `approved` or `rejected` (a Balanced NodePool’s score below its threshold)',
  },
  karpenter_consolidation_score: {
    unit: 'None',
    kind: 'distribution',
    dimensionSets: [[C], [C, DECISION], [C, P], [C, POLICY]],
    karpenter: 'decision, nodepool, policy',
    help: 'The Balanced score of the moves of karpenter_consolidation_moves_total in Balanced NodePools (a score that is infinite, a move disrupting nothing, is left out)',
  },
  karpenter_nodepools_allowed_disruptions: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, P, R]],
    karpenter: 'nodepool, reason',
    help: 'Nodes a NodePool’s budgets allow to disrupt, by reason `Empty`, `Drifted`, `Underutilized` (as Karpenter writes these), before the nodes being disrupted count against them (those are karpenter_nodepools_nodes_consuming_budgets); the node count where no budget holds (Karpenter: 2^31−1)',
  },
  karpenter_nodepools_nodes_consuming_budgets: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, P, R]],
    karpenter: 'nodepool, reason',
    help: 'A NodePool’s nodes being disrupted, counted against each reason’s budget (published for NodePools with any)',
  },
  karpenter_nodepools_usage: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'nodepool, resource_type',
    help: 'What a NodePool’s nodes provide (cpu in cores, memory in bytes, nodes), as its status.resources',
  },
  karpenter_nodepools_limit: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'nodepool, resource_type',
    help: 'A NodePool’s limits, in the units of karpenter_nodepools_usage',
  },
  karpenter_nodepools_cost_total: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P]],
    karpenter: 'nodepool',
    help: 'What a NodePool’s nodes cost, in USD per hour at their offering prices (nodes of an unknown offering left out: karpenter_nodepools_cost_tracker_errors_total counts them)',
  },
  karpenter_nodepools_cost_tracker_errors_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool, nodeclaim',
    help: 'Launched NodeClaims a disruption pass could not price (their offering unknown to the catalog), at each pass (Karpenter also names the NodeClaim)',
  },
  karpenter_interruption_received_messages_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, MESSAGE]],
    karpenter: 'message_type',
    help: 'Interruption messages handled, by type: `spot_interrupted`, `rebalance_recommendation`, `scheduled_change`, `instance_stopped`, `instance_terminated`, `capacity_reservation_interrupted`, `no_op`',
  },
  karpenter_interruption_message_queue_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'none',
    help: 'From an interruption event’s time to its handling',
  },
  karpenter_interruption_instance_status_unhealthy_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, CATEGORY]],
    karpenter: 'category',
    help: 'Instances of NodeClaims the instance status poll acted on, by category `InstanceStatus`, `SystemStatus`, `EventStatus`',
  },
  karpenter_cloudprovider_errors_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, METHOD], [C, ERROR]],
    karpenter: 'controller, method, provider, error',
    help: 'Launches (method `Create`) that failed, by error `InsufficientCapacityError`, `NodeClassNotReadyError` or `none`',
  },
  karpenter_cloudprovider_instance_launch_failures_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R], [C, T]],
    karpenter: 'zone, zone_id, capacity_type, reason',
    help: 'Launches EC2 refused, by reason (EC2’s error code; `InsufficientCapacityError` for a refusal for capacity, counted once per launch where Karpenter counts each offering) and capacity type; Flotilla adds nodepool',
  },
  karpenter_cloudprovider_instance_type_offering_price_estimate: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, I, T, Z]],
    karpenter: 'instance_type, capacity_type, zone',
    help: 'The price of an offering Flotilla launched, USD per hour, at its launch (Karpenter: every offering every minute)',
  },
  karpenter_cloudprovider_instance_type_offering_available: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, I, T, Z]],
    karpenter: 'instance_type, capacity_type, zone',
    help: '1 for an offering Flotilla launched, at its launch; 0 for one backed off after a capacity refusal or a spot interruption',
  },
  karpenter_cloudprovider_instance_type_cpu_cores: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, I]],
    karpenter: 'instance_type',
    help: 'The vCPUs of an instance type Flotilla launched, at its launch',
  },
  karpenter_cloudprovider_instance_type_memory_bytes: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, I]],
    karpenter: 'instance_type',
    help: 'The memory of an instance type Flotilla launched, at its launch',
  },
} as const satisfies Record<string, MetricBody>;
