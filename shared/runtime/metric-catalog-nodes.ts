import { D, type MetricBody, MetricDimension } from './metric-types.ts';

// Karpenter v1.14's NodeClaim, Node, pod, scheduler and cluster series (kubernetes-sigs/karpenter's
// pkg/metrics and controllers), under Karpenter's names. Series Karpenter labels by a node's or a
// pod's name are summed (or their oldest taken) per NodePool: a name dimension would bill a series
// per node.

const { C, P, R, T, Z, K } = D;
const CONDITION = MetricDimension.condition;
const IMAGE = MetricDimension.imageId;
const CODE = MetricDimension.code;
const CONTROLLER = MetricDimension.controller;
const RELAXED = MetricDimension.minValuesRelaxed;

export const NODE_METRICS = {
  karpenter_nodeclaims_created_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R], [C, RELAXED]],
    karpenter: 'reason, nodepool, min_values_relaxed',
    help: 'NodeClaims created: reason `provisioned` (for pending pods, or a static NodePool’s replica), or a disruption replacement’s reason (`underutilized`, `drifted`, `expired`); `min_values_relaxed` `true` when minValues were relaxed to launch it',
  },
  karpenter_nodeclaims_terminated_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, T], [C, Z]],
    karpenter: 'nodepool, capacity_type, zone',
    help: 'NodeClaims whose termination finished (their finalizer removed)',
  },
  karpenter_nodeclaims_disrupted_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, R], [C, T]],
    karpenter: 'reason, nodepool, capacity_type',
    help: 'NodeClaims deleted to disrupt them, by reason: `empty`, `underutilized`, `drifted`, `expired`, an interruption’s message type (`spot_interrupted`, `instance_status`, …), `unhealthy` (node repair), `launch_timeout`, `registration_timeout`, `insufficient_capacity`, `nodeclass_not_ready`, `garbage_collected`',
  },
  karpenter_nodeclaims_unhealthy_disrupted_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, CONDITION], [C, P], [C, T], [C, IMAGE]],
    karpenter: 'condition, nodepool, capacity_type, image_id',
    help: 'NodeClaims node repair replaced, by the unhealthy condition in snake case (`ready`, or `instance_status`/`system_status` for an impaired instance) and the image they ran',
  },
  karpenter_nodeclaims_termination_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool',
    help: 'From a NodeClaim’s deletion to the removal of its finalizer',
  },
  karpenter_nodeclaims_instance_termination_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool',
    help: 'From the NodeClaim’s InstanceTerminating condition to its instance found gone',
  },
  karpenter_nodes_created_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, Z]],
    karpenter: 'nodepool, zone',
    help: 'Nodes registered for a NodeClaim',
  },
  karpenter_nodes_terminated_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P], [C, Z]],
    karpenter: 'nodepool, zone',
    help: 'Nodes of a NodeClaim whose termination finalizer was removed',
  },
  karpenter_nodes_drained_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool',
    help: 'Nodes whose drain finished (their NodeClaim’s Drained condition True), counted when the Node’s finalizer is removed',
  },
  karpenter_nodes_termination_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool',
    help: 'From a Node’s deletion to the removal of its finalizer (Karpenter: a summary)',
  },
  karpenter_nodes_lifetime_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C], [C, P]],
    karpenter: 'nodepool',
    help: 'From a Node’s creation to the removal of its finalizer',
  },
  karpenter_nodes_current_lifetime_seconds: {
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C, P]],
    karpenter: 'node_name, nodepool, phase, managed and each well-known node label',
    help: 'The age of a NodePool’s oldest Node at each disruption pass (Karpenter: each node’s age)',
  },
  karpenter_nodes_allocatable: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'node_name, nodepool, phase, managed, each well-known node label, resource_type',
    help: 'Allocatable cpu (cores) and memory (bytes) summed over a NodePool’s Nodes (Karpenter: each node’s)',
  },
  karpenter_nodes_total_pod_requests: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'node_name, nodepool, phase, managed, each well-known node label, resource_type',
    help: 'Requests of the pods bound to a NodePool’s Nodes, DaemonSet pods included, cpu (cores) and memory (bytes) (Karpenter: each node’s)',
  },
  karpenter_nodes_total_daemon_requests: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'node_name, nodepool, phase, managed, each well-known node label, resource_type',
    help: 'Requests of the DaemonSet pods bound to a NodePool’s Nodes, cpu (cores) and memory (bytes) (Karpenter: each node’s)',
  },
  karpenter_nodes_system_overhead: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P, K]],
    karpenter: 'node_name, nodepool, phase, managed, each well-known node label, resource_type',
    help: 'Capacity less allocatable summed over a NodePool’s Nodes, cpu (cores) and memory (bytes) (Karpenter: each node’s)',
  },
  karpenter_cluster_state_node_count: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'none',
    help: 'Nodes of NodePools at each disruption pass (per NodePool: karpenter_nodepools_usage, resource_type `nodes`)',
  },
  karpenter_cluster_utilization_percent: {
    unit: 'Percent',
    kind: 'gauge',
    dimensionSets: [[C, K]],
    karpenter: 'resource_type',
    help: 'Pod requests ÷ allocatable over the NodePools’ Nodes, cpu and memory (Karpenter counts every node it knows)',
  },
  karpenter_pods_startup_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'none',
    help: 'From a pod’s creation to its start, each pod that starts on a NodePool’s node counted once, about a minute after it starts (Karpenter: a summary)',
  },
  karpenter_pods_unbound_time_seconds: {
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'name, namespace',
    help: 'How long the oldest provisionable pending pod has waited, at each provisioning run, 0 when none (Karpenter: each pod’s wait)',
  },
  karpenter_pods_drained_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, R]],
    karpenter: 'reason',
    help: 'Pods evicted while draining a node, by the NodeClaim’s DisruptionReason (`Forceful Termination` when it has none)',
  },
  karpenter_pods_eviction_requests_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, CODE]],
    karpenter: 'code',
    help: 'Eviction API requests of drains, by answer: `200` evicted, `429` a PodDisruptionBudget refused, `404` the pod was gone',
  },
  karpenter_scheduler_scheduling_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C, CONTROLLER]],
    karpenter: 'controller',
    help: 'How long one provisioning plan (the scheduling simulation) took; controller `provisioner`',
  },
  karpenter_scheduler_queue_depth: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, CONTROLLER]],
    karpenter: 'controller, scheduling_id',
    help: 'Pods a provisioning run plans for, 0 when none; controller `provisioner` (Karpenter’s per-run scheduling_id left out)',
  },
  karpenter_scheduler_unschedulable_pods_count: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, CONTROLLER]],
    karpenter: 'controller',
    help: 'Pods a provisioning run found no NodePool able to host, 0 when none; controller `provisioner`',
  },
  karpenter_scheduler_ignored_pods_count: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'none',
    help: 'Pending pods a provisioning run could not read and so left out (published when there are any)',
  },
} as const satisfies Record<string, MetricBody>;
