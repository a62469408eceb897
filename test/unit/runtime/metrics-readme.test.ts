import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { METRIC_SPECS } from '../../../shared/runtime/metrics.ts';

// The README's metric table and the catalog are one list: neither may drift from the other. With
// the README's list of Karpenter series Flotilla does not publish, they are every series of
// Karpenter v1.14's metrics reference.

const readme = readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');

/** The tables under `### Metrics`, each as rows of cells (the rows that start with a name). */
function tables(): string[][][] {
  const start = readme.indexOf('\n### Metrics\n');
  if (start < 0) throw new Error('README.md has no "### Metrics" section');
  const next = readme.indexOf('\n#', start + 1);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return section
    .split(/\n\n/)
    .filter((block) => block.startsWith('| '))
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) =>
          line
            .slice(1, -1)
            .split(/(?<!\\)\|/)
            .map((cell) => cell.trim()),
        ),
    );
}

/**
 * Every series Karpenter v1.14.1 exports beside the Go runtime's: its metrics reference (which
 * covers the core and the AWS provider), and the AWS provider's one series it leaves out.
 */
const KARPENTER_V1_14 = [
  'karpenter_consolidation_score',
  'karpenter_consolidation_moves_total',
  'karpenter_build_info',
  'karpenter_nodeclaims_unhealthy_disrupted_total',
  'karpenter_nodeclaims_termination_duration_seconds',
  'karpenter_nodeclaims_terminated_total',
  'karpenter_nodeclaims_instance_termination_duration_seconds',
  'karpenter_nodeclaims_disrupted_total',
  'karpenter_nodeclaims_created_total',
  'operator_nodeclaim_termination_duration_seconds',
  'operator_nodeclaim_termination_current_time_seconds',
  'operator_nodeclaim_status_condition_transitions_total',
  'operator_nodeclaim_status_condition_transition_seconds',
  'operator_nodeclaim_status_condition_current_status_seconds',
  'operator_nodeclaim_status_condition_count',
  'karpenter_nodes_total_pod_requests',
  'karpenter_nodes_total_pod_limits',
  'karpenter_nodes_total_daemon_requests',
  'karpenter_nodes_total_daemon_limits',
  'karpenter_nodes_termination_duration_seconds',
  'karpenter_nodes_terminated_total',
  'karpenter_nodes_system_overhead',
  'karpenter_nodes_lifetime_duration_seconds',
  'karpenter_nodes_drained_total',
  'karpenter_nodes_current_lifetime_seconds',
  'karpenter_nodes_created_total',
  'karpenter_nodes_allocatable',
  'operator_node_termination_duration_seconds',
  'operator_node_termination_current_time_seconds',
  'operator_node_status_condition_transitions_total',
  'operator_node_status_condition_transition_seconds',
  'operator_node_status_condition_current_status_seconds',
  'operator_node_status_condition_count',
  'karpenter_pods_unstarted_time_seconds',
  'karpenter_pods_unbound_time_seconds',
  'karpenter_pods_state',
  'karpenter_pods_startup_duration_seconds',
  'karpenter_pods_scheduling_decision_duration_seconds',
  'karpenter_pods_provisioning_unstarted_time_seconds',
  'karpenter_pods_provisioning_unbound_time_seconds',
  'karpenter_pods_provisioning_startup_duration_seconds',
  'karpenter_pods_provisioning_scheduling_undecided_time_seconds',
  'karpenter_pods_provisioning_bound_duration_seconds',
  'karpenter_pods_eviction_requests_total',
  'karpenter_pods_drained_total',
  'karpenter_pods_bound_duration_seconds',
  'operator_nodepool_termination_duration_seconds',
  'operator_nodepool_termination_current_time_seconds',
  'operator_nodepool_status_condition_transitions_total',
  'operator_nodepool_status_condition_transition_seconds',
  'operator_nodepool_status_condition_current_status_seconds',
  'operator_nodepool_status_condition_count',
  'operator_ec2nodeclass_termination_duration_seconds',
  'operator_ec2nodeclass_termination_current_time_seconds',
  'operator_ec2nodeclass_status_condition_transitions_total',
  'operator_ec2nodeclass_status_condition_transition_seconds',
  'operator_ec2nodeclass_status_condition_current_status_seconds',
  'operator_ec2nodeclass_status_condition_count',
  'karpenter_voluntary_disruption_queue_failures_total',
  'karpenter_voluntary_disruption_failed_validations_total',
  'karpenter_voluntary_disruption_eligible_nodes',
  'karpenter_voluntary_disruption_decisions_total',
  'karpenter_voluntary_disruption_decisions_by_nodepool_total',
  'karpenter_voluntary_disruption_decision_evaluation_duration_seconds',
  'karpenter_voluntary_disruption_consolidation_timeouts_total',
  'karpenter_scheduler_unschedulable_pods_count',
  'karpenter_scheduler_unfinished_work_seconds',
  'karpenter_scheduler_scheduling_duration_seconds',
  'karpenter_scheduler_queue_depth',
  'karpenter_scheduler_pending_pods_by_effective_zone_count',
  'karpenter_scheduler_ignored_pods_count',
  'karpenter_nodepools_usage',
  'karpenter_nodepools_nodes_consuming_budgets',
  'karpenter_nodepools_limit',
  'karpenter_nodepools_cost_tracker_errors_total',
  'karpenter_nodepools_cost_total',
  'karpenter_nodepools_allowed_disruptions',
  'karpenter_interruption_received_messages_total',
  'karpenter_interruption_message_queue_duration_seconds',
  'karpenter_interruption_instance_status_unhealthy_total',
  'karpenter_interruption_deleted_messages_total',
  'karpenter_cluster_utilization_percent',
  'karpenter_cluster_state_unsynced_time_seconds',
  'karpenter_cluster_state_synced',
  'karpenter_cluster_state_node_count',
  'karpenter_cloudprovider_instance_type_offering_price_estimate',
  'karpenter_cloudprovider_instance_type_offering_available',
  'karpenter_cloudprovider_instance_type_memory_bytes',
  'karpenter_cloudprovider_instance_type_cpu_cores',
  'karpenter_cloudprovider_instance_termination_failures_total',
  'karpenter_cloudprovider_instance_launch_failures_total',
  'karpenter_cloudprovider_errors_total',
  'karpenter_cloudprovider_duration_seconds',
  'karpenter_cloudprovider_batcher_batch_time_seconds',
  'karpenter_cloudprovider_batcher_batch_size',
  'karpenter_ec2nodeclasses_userdata_bytes',
  'controller_runtime_terminal_reconcile_errors_total',
  'controller_runtime_reconcile_total',
  'controller_runtime_reconcile_timeouts_total',
  'controller_runtime_reconcile_time_seconds',
  'controller_runtime_reconcile_panics_total',
  'controller_runtime_reconcile_errors_total',
  'controller_runtime_max_concurrent_reconciles',
  'controller_runtime_conversion_webhook_panics_total',
  'controller_runtime_active_workers',
  'workqueue_work_duration_seconds',
  'workqueue_unfinished_work_seconds',
  'workqueue_retries_total',
  'workqueue_queue_duration_seconds',
  'workqueue_longest_running_processor_seconds',
  'workqueue_depth',
  'workqueue_adds_total',
  'operator_termination_duration_seconds',
  'operator_termination_current_time_seconds',
  'operator_status_condition_transitions_total',
  'operator_status_condition_transition_seconds',
  'operator_status_condition_current_status_seconds',
  'operator_status_condition_count',
  'client_go_request_total',
  'client_go_request_duration_seconds',
  'aws_sdk_go_request_total',
  'aws_sdk_go_request_retry_count',
  'aws_sdk_go_request_duration_seconds',
  'aws_sdk_go_request_attempt_total',
  'aws_sdk_go_request_attempt_duration_seconds',
  'leader_election_slowpath_total',
  'leader_election_master_status',
];

const unquote = (cell: string | undefined) => cell?.replace(/^`|`$/g, '') ?? '';

describe('the README’s metric table', () => {
  it('lists every catalog metric, in order, with its kind, unit, dimension sets and Karpenter labels', () => {
    const [rows = []] = tables();
    expect(rows.map((r) => r.slice(0, 5))).toEqual(
      METRIC_SPECS.map((s) => [
        `\`${s.name}\``,
        s.kind,
        s.unit,
        s.dimensionSets.map((set) => set.join(', ')).join('; '),
        s.karpenter === null ? "Flotilla's own" : s.karpenter,
      ]),
    );
    for (const row of rows) expect(row[5], row[0]).toMatch(/\S/);
  });

  it('with the series it says do not apply, gives every series of Karpenter v1.14, each once and with a reason', () => {
    const [, notApplicable = []] = tables();
    const karpenters = METRIC_SPECS.filter((s) => s.karpenter !== null).map((s) => s.name);
    const listed = notApplicable.map((row) => unquote(row[0]));
    expect([...karpenters, ...listed].sort()).toEqual([...KARPENTER_V1_14].sort());
    for (const row of notApplicable) expect(row[1], row[0]).toMatch(/\S{3}/);
    // Karpenter's names are Karpenter's series; Flotilla's own names are none of them.
    for (const spec of METRIC_SPECS) {
      expect(KARPENTER_V1_14.includes(spec.name), spec.name).toBe(spec.karpenter !== null);
    }
  });
});
