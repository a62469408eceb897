import { aws, type DashboardSpec, each, graph, total } from './dashboard-kit.ts';
import type { MetricDimensionKey } from './metrics.ts';

// The operator's dashboard of one cluster, as data: rows of widgets, each naming the catalog
// metrics it shows (metrics.ts), the statistic and the catalog dimension set. The stack renders
// it as a CloudWatch dashboard (infra/dashboard.ts) and the simulator as a picture
// (shared/simulator/dashboard-svg.ts), so both show the same thing.

export * from './dashboard-kit.ts';

const STACKED = true;
export const CLUSTER = ['cluster'] as const;
export const BY_POOL = ['cluster', 'nodepool'] as const;
export const BY_REASON = ['cluster', 'reason'] as const;
const BY_RESOURCE = ['cluster', 'nodepool', 'resource_type'] as const;
const BY_CONTROLLER = ['cluster', 'controller'] as const;
const PROVISIONER = { controller: 'provisioner' };
const BY_CONDITION = ['cluster', 'type', 'status', 'reason'] as const;
const BY_NODE_CONDITION = ['cluster', 'type', 'status'] as const;
const BY_OFFERING = ['cluster', 'instance_type', 'capacity_type', 'zone'] as const;
const by = (key: MetricDimensionKey) => ['cluster', key] as const;

/** A NodePool's cpu or memory: its Nodes' allocatable, pod requests and DaemonSet requests. */
const requested = (resource: 'cpu' | 'memory') => [
  each('karpenter_nodes_allocatable', 'Maximum', BY_RESOURCE, 'allocatable', { resource_type: resource }),
  each('karpenter_nodes_total_pod_requests', 'Maximum', BY_RESOURCE, 'requested', {
    resource_type: resource,
  }),
  each('karpenter_nodes_total_daemon_requests', 'Maximum', BY_RESOURCE, 'DaemonSets', {
    resource_type: resource,
  }),
];

/** Flotilla's dashboard: every catalog metric appears on it at least once. */
export const DASHBOARD: DashboardSpec = {
  periodSeconds: 300,
  rows: [
    {
      title: 'Capacity and cost per NodePool',
      widgets: [
        {
          title: 'Cost now ($/hour)',
          kind: 'number',
          unit: 'USD/hour',
          width: 4,
          series: [
            total('karpenter_nodepools_cost_total', 'Maximum', BY_POOL, 'cost'),
            total('nodepools_idle_cost', 'Maximum', BY_POOL, 'idle'),
          ],
        },
        graph(
          'Cost per NodePool ($/hour)',
          'USD/hour',
          10,
          [each('karpenter_nodepools_cost_total', 'Maximum', BY_POOL, 'cost')],
          STACKED,
        ),
        graph('Cost and dollar limit per NodePool ($/hour)', 'USD/hour', 12, [
          each('karpenter_nodepools_cost_total', 'Maximum', BY_POOL, 'cost'),
          each('nodepools_cost_limit', 'Maximum', BY_POOL, 'limit'),
        ]),
        graph('Cluster cost and dollar limit ($/hour)', 'USD/hour', 12, [
          total('karpenter_nodepools_cost_total', 'Maximum', BY_POOL, 'cost'),
          each('cluster_cost_limit', 'Maximum', CLUSTER, 'limit'),
        ]),
        graph(
          'Idle cost per NodePool ($/hour, unrequested share)',
          'USD/hour',
          10,
          [each('nodepools_idle_cost', 'Maximum', BY_POOL, 'idle')],
          STACKED,
        ),
        graph('CPU usage and limit per NodePool (cores)', 'cores', 6, [
          each('karpenter_nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resource_type: 'cpu' }),
          each('karpenter_nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resource_type: 'cpu' }),
        ]),
        graph('Memory usage and limit per NodePool (bytes)', 'bytes', 6, [
          each('karpenter_nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resource_type: 'memory' }),
          each('karpenter_nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resource_type: 'memory' }),
        ]),
        graph('Cluster utilization (requests ÷ allocatable, %)', '%', 6, [
          each('karpenter_cluster_utilization_percent', 'Average', by('resource_type'), 'utilization'),
        ]),
        graph('Nodes, and per NodePool', 'nodes', 6, [
          each('karpenter_cluster_state_node_count', 'Maximum', CLUSTER, 'nodes'),
          each('karpenter_nodepools_usage', 'Maximum', BY_RESOURCE, 'nodes', { resource_type: 'nodes' }),
        ]),
      ],
    },
    {
      title: 'Nodes per NodePool',
      widgets: [
        graph('CPU allocatable and requested (cores)', 'cores', 8, requested('cpu')),
        graph('Memory allocatable and requested (bytes)', 'bytes', 8, requested('memory')),
        graph('System overhead (capacity − allocatable)', 'cores / bytes', 8, [
          each('karpenter_nodes_system_overhead', 'Maximum', BY_RESOURCE, 'overhead'),
        ]),
        graph('Oldest node (s)', 'seconds', 8, [
          each('karpenter_nodes_current_lifetime_seconds', 'Maximum', BY_POOL, 'oldest'),
        ]),
        graph('Node lifetime at termination (s)', 'seconds', 8, [
          each('karpenter_nodes_lifetime_duration_seconds', 'p50', CLUSTER, 'p50'),
          each('karpenter_nodes_lifetime_duration_seconds', 'p90', CLUSTER, 'p90'),
        ]),
        graph('Nodes drained', 'nodes', 8, [
          each('karpenter_nodes_drained_total', 'Sum', BY_POOL, 'drained'),
        ]),
      ],
    },
    {
      title: 'Pending pods and pod startup',
      widgets: [
        graph('Oldest pending pod (s)', 'seconds', 6, [
          each('karpenter_pods_unbound_time_seconds', 'Maximum', CLUSTER, 'oldest pending'),
        ]),
        graph('Pending, unschedulable and ignored pods', 'pods', 6, [
          each(
            'karpenter_scheduler_queue_depth',
            'Maximum',
            BY_CONTROLLER,
            'pending (queue depth)',
            PROVISIONER,
          ),
          each(
            'karpenter_scheduler_unschedulable_pods_count',
            'Maximum',
            BY_CONTROLLER,
            'unschedulable',
            PROVISIONER,
          ),
          each('karpenter_scheduler_ignored_pods_count', 'Maximum', CLUSTER, 'ignored'),
        ]),
        graph('Pod startup, created → Running (s)', 'seconds', 6, [
          each('karpenter_pods_startup_duration_seconds', 'p50', CLUSTER, 'p50'),
          each('karpenter_pods_startup_duration_seconds', 'p90', CLUSTER, 'p90'),
        ]),
        graph('Scheduling simulation duration (s)', 'seconds', 6, [
          each('karpenter_scheduler_scheduling_duration_seconds', 'p50', BY_CONTROLLER, 'p50', PROVISIONER),
          each(
            'karpenter_scheduler_scheduling_duration_seconds',
            'Maximum',
            BY_CONTROLLER,
            'max',
            PROVISIONER,
          ),
        ]),
      ],
    },
    {
      title: 'Launches and terminations',
      widgets: [
        graph('NodeClaims created and terminated', 'NodeClaims', 8, [
          each('karpenter_nodeclaims_created_total', 'Sum', CLUSTER, 'created'),
          each('karpenter_nodeclaims_created_total', 'Sum', by('min_values_relaxed'), 'minValues relaxed', {
            min_values_relaxed: 'true',
          }),
          each('karpenter_nodeclaims_terminated_total', 'Sum', CLUSTER, 'terminated'),
        ]),
        graph(
          'NodeClaims created by reason',
          'NodeClaims',
          8,
          [each('karpenter_nodeclaims_created_total', 'Sum', BY_REASON, 'created')],
          STACKED,
        ),
        graph('Nodes created and terminated', 'nodes', 8, [
          each('karpenter_nodes_created_total', 'Sum', CLUSTER, 'created'),
          each('karpenter_nodes_terminated_total', 'Sum', CLUSTER, 'terminated'),
        ]),
        graph(
          'Launch failures by reason',
          'launches',
          8,
          [each('karpenter_cloudprovider_instance_launch_failures_total', 'Sum', BY_REASON, 'failed')],
          STACKED,
        ),
        graph('Cloud provider errors by error', 'errors', 8, [
          each('karpenter_cloudprovider_errors_total', 'Sum', by('error'), 'errors'),
        ]),
        graph('Runaway guard pauses per NodePool', 'pauses', 8, [
          each('nodepools_launch_backoff_started_total', 'Sum', BY_POOL, 'paused'),
        ]),
        graph(
          'Pods drained by reason',
          'pods',
          8,
          [each('karpenter_pods_drained_total', 'Sum', BY_REASON, 'drained')],
          STACKED,
        ),
        graph('Eviction requests by answer', 'requests', 8, [
          each('karpenter_pods_eviction_requests_total', 'Sum', by('code'), 'code'),
        ]),
        graph('Termination durations, p90 (s)', 'seconds', 8, [
          each('karpenter_nodeclaims_termination_duration_seconds', 'p90', CLUSTER, 'NodeClaim'),
          each('karpenter_nodeclaims_instance_termination_duration_seconds', 'p90', CLUSTER, 'instance'),
          each('karpenter_nodes_termination_duration_seconds', 'p90', CLUSTER, 'Node'),
          each('operator_nodeclaim_termination_duration_seconds', 'p90', CLUSTER, 'NodeClaim (operator)'),
          each('operator_node_termination_duration_seconds', 'p90', CLUSTER, 'Node (operator)'),
        ]),
      ],
    },
    {
      title: 'Disruption',
      widgets: [
        graph(
          'Disruption decisions by reason',
          'decisions',
          8,
          [each('karpenter_voluntary_disruption_decisions_total', 'Sum', BY_REASON, 'decisions')],
          STACKED,
        ),
        graph('Disruption decisions by consolidation type', 'decisions', 8, [
          each(
            'karpenter_voluntary_disruption_decisions_total',
            'Sum',
            by('consolidation_type'),
            'decisions',
          ),
        ]),
        graph('Disruption decisions per NodePool', 'decisions', 8, [
          each('karpenter_voluntary_disruption_decisions_by_nodepool_total', 'Sum', BY_POOL, 'decisions'),
        ]),
        graph(
          'NodeClaims disrupted by reason',
          'NodeClaims',
          8,
          [each('karpenter_nodeclaims_disrupted_total', 'Sum', BY_REASON, 'disrupted')],
          STACKED,
        ),
        graph('Eligible nodes by reason', 'nodes', 8, [
          each('karpenter_voluntary_disruption_eligible_nodes', 'Maximum', BY_REASON, 'eligible'),
        ]),
        graph(
          'Nodes held back, by why',
          'nodes',
          8,
          [each('voluntary_disruption_blocked_nodes', 'Maximum', BY_REASON, 'held')],
          STACKED,
        ),
        graph('Allowed disruptions per NodePool', 'nodes', 8, [
          each('karpenter_nodepools_allowed_disruptions', 'Minimum', [...BY_POOL, 'reason'], 'allowed'),
        ]),
        graph('Nodes consuming budgets per NodePool', 'nodes', 8, [
          each(
            'karpenter_nodepools_nodes_consuming_budgets',
            'Maximum',
            [...BY_POOL, 'reason'],
            'disrupting',
          ),
        ]),
        graph('Failed validations and failed commands', 'candidates', 8, [
          each(
            'karpenter_voluntary_disruption_failed_validations_total',
            'Sum',
            CLUSTER,
            'failed validation',
          ),
          each('karpenter_voluntary_disruption_queue_failures_total', 'Sum', CLUSTER, 'replacement failed'),
        ]),
        graph('Consolidation moves by verdict', 'moves', 8, [
          each('karpenter_consolidation_moves_total', 'Sum', by('decision'), 'moves'),
        ]),
        graph('Balanced consolidation score', 'score', 8, [
          each('karpenter_consolidation_score', 'p50', by('decision'), 'p50'),
        ]),
        graph('NodeClaims repaired by condition', 'NodeClaims', 8, [
          each('karpenter_nodeclaims_unhealthy_disrupted_total', 'Sum', by('condition'), 'repaired'),
        ]),
        graph('What the decided commands save ($/hour)', 'USD/hour', 24, [
          each('voluntary_disruption_savings', 'Maximum', BY_REASON, 'saves'),
        ]),
      ],
    },
    {
      title: 'Interruptions',
      widgets: [
        graph(
          'Interruption messages by type',
          'messages',
          8,
          [each('karpenter_interruption_received_messages_total', 'Sum', by('message_type'), 'messages')],
          STACKED,
        ),
        graph('Interruption message age when handled (s)', 'seconds', 8, [
          each('karpenter_interruption_message_queue_duration_seconds', 'p50', CLUSTER, 'p50'),
          each('karpenter_interruption_message_queue_duration_seconds', 'Maximum', CLUSTER, 'max'),
        ]),
        graph('Unhealthy instances by category (status poll)', 'instances', 8, [
          each('karpenter_interruption_instance_status_unhealthy_total', 'Sum', by('category'), 'unhealthy'),
        ]),
      ],
    },
    {
      title: 'Offerings launched and pricing',
      widgets: [
        graph('Offering price at launch ($/hour)', 'USD/hour', 6, [
          each(
            'karpenter_cloudprovider_instance_type_offering_price_estimate',
            'Maximum',
            BY_OFFERING,
            'price',
          ),
        ]),
        graph('Offering availability (1 launched, 0 backed off)', 'available', 6, [
          each(
            'karpenter_cloudprovider_instance_type_offering_available',
            'Minimum',
            BY_OFFERING,
            'available',
          ),
        ]),
        graph('Instance types launched: vCPUs and memory', 'vCPUs / bytes', 6, [
          each('karpenter_cloudprovider_instance_type_cpu_cores', 'Maximum', by('instance_type'), 'vCPUs'),
          each(
            'karpenter_cloudprovider_instance_type_memory_bytes',
            'Maximum',
            by('instance_type'),
            'memory',
          ),
        ]),
        graph('NodeClaims without a price per NodePool', 'NodeClaims', 6, [
          each('karpenter_nodepools_cost_tracker_errors_total', 'Sum', BY_POOL, 'unpriced'),
        ]),
      ],
    },
    {
      title: 'Status conditions out of their steady state',
      widgets: [
        graph('NodeClaims', 'NodeClaims', 6, [
          each('operator_nodeclaim_status_condition_count', 'Maximum', BY_CONDITION, 'count'),
        ]),
        graph('Nodes', 'nodes', 6, [
          each('operator_node_status_condition_count', 'Maximum', BY_NODE_CONDITION, 'count'),
        ]),
        graph('NodePools', 'NodePools', 6, [
          each('operator_nodepool_status_condition_count', 'Maximum', BY_CONDITION, 'count'),
        ]),
        graph('EC2NodeClasses', 'EC2NodeClasses', 6, [
          each('operator_ec2nodeclass_status_condition_count', 'Maximum', BY_CONDITION, 'count'),
        ]),
        graph('Longest in a condition (s)', 'seconds', 8, [
          each(
            'operator_nodeclaim_status_condition_current_status_seconds',
            'Maximum',
            BY_CONDITION,
            'NodeClaim',
          ),
          each('operator_node_status_condition_current_status_seconds', 'Maximum', BY_NODE_CONDITION, 'Node'),
          each(
            'operator_nodepool_status_condition_current_status_seconds',
            'Maximum',
            BY_CONDITION,
            'NodePool',
          ),
          each(
            'operator_ec2nodeclass_status_condition_current_status_seconds',
            'Maximum',
            BY_CONDITION,
            'EC2NodeClass',
          ),
        ]),
        graph('Condition transitions', 'transitions', 8, [
          each('operator_nodeclaim_status_condition_transitions_total', 'Sum', BY_CONDITION, 'NodeClaim'),
          each('operator_node_status_condition_transitions_total', 'Sum', BY_NODE_CONDITION, 'Node'),
          each('operator_nodepool_status_condition_transitions_total', 'Sum', BY_CONDITION, 'NodePool'),
          each(
            'operator_ec2nodeclass_status_condition_transitions_total',
            'Sum',
            BY_CONDITION,
            'EC2NodeClass',
          ),
        ]),
        graph('Longest termination under way (s)', 'seconds', 8, [
          each('operator_nodeclaim_termination_current_time_seconds', 'Maximum', CLUSTER, 'NodeClaim'),
          each('operator_node_termination_current_time_seconds', 'Maximum', CLUSTER, 'Node'),
        ]),
      ],
    },
    {
      title: 'Queues and Lambdas',
      widgets: [
        graph('Work queue depth', 'messages', 5, [aws('workQueueDepth')]),
        graph('Dead-letter queue depth', 'messages', 5, [aws('deadLetterDepth')]),
        graph('Lambda duration p90 (ms)', 'ms', 5, [aws('lambdaDuration')]),
        graph('Lambda errors', 'errors', 5, [aws('lambdaErrors')]),
        graph('Lambda throttles', 'throttles', 4, [aws('lambdaThrottles')]),
      ],
    },
  ],
};
