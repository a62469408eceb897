import { D, type MetricBody, MetricDimension } from './metric-types.ts';

// The status condition and termination series Karpenter v1.14 emits through its operator package,
// one set per kind (`operator_<kind>_…`). Karpenter labels them by each object's name; Flotilla
// counts the objects per condition type, status and reason, at each disruption pass, from what
// the pass reads. A condition's steady state (True for the conditions an object needs, False for
// those telling of trouble or a change; steadyConditionStatus) is not published: every cluster
// would pay a series per condition type for it at all times, and it is the object count less the
// others. Transitions are counted from the conditions' lastTransitionTime, once each.

const { C, R } = D;
const TYPE = MetricDimension.type;
const STATUS = MetricDimension.status;

const count = (kind: string, labels: string): MetricBody => ({
  unit: 'Count',
  kind: 'gauge',
  dimensionSets: kind === 'Node' ? [[C, TYPE, STATUS]] : [[C, TYPE, STATUS, R]],
  karpenter: labels,
  help: `${kind}s whose condition has a status and reason, at each disruption pass (the steady state left out)${kind === 'Node' ? '; no reason (the kubelet’s reasons are not read)' : ''}`,
});

const current = (kind: string, labels: string): MetricBody => ({
  unit: 'Seconds',
  kind: 'gauge',
  dimensionSets: kind === 'Node' ? [[C, TYPE, STATUS]] : [[C, TYPE, STATUS, R]],
  karpenter: labels,
  help: `How long the ${kind} longest in a condition’s status has had it (the steady state left out)`,
});

const transitions = (kind: string): MetricBody => ({
  unit: 'Count',
  kind: 'counter',
  dimensionSets: kind === 'Node' ? [[C, TYPE, STATUS]] : [[C, TYPE, STATUS, R]],
  karpenter: 'type, status, reason',
  help: `Conditions of ${kind}s that took a status since the last disruption pass (from their lastTransitionTime)`,
});

const OBJECT = 'name, namespace, type, status, reason';

export const OPERATOR_METRICS = {
  operator_nodeclaim_status_condition_count: count('NodeClaim', `${OBJECT}, nodepool, ec2nodeclass`),
  operator_nodeclaim_status_condition_current_status_seconds: current(
    'NodeClaim',
    `${OBJECT}, nodepool, ec2nodeclass`,
  ),
  operator_nodeclaim_status_condition_transitions_total: transitions('NodeClaim'),
  operator_nodeclaim_termination_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'name, namespace',
    help: 'From a NodeClaim’s deletion to its finalizer’s removal (karpenter_nodeclaims_termination_duration_seconds without the NodePool)',
  },
  operator_nodeclaim_termination_current_time_seconds: {
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'name, namespace',
    help: 'How long the NodeClaim longest in termination has been terminating, at each disruption pass (published while one is)',
  },
  operator_node_status_condition_count: count('Node', `${OBJECT}, nodepool, ec2nodeclass, initialized`),
  operator_node_status_condition_current_status_seconds: current(
    'Node',
    `${OBJECT}, nodepool, ec2nodeclass, initialized`,
  ),
  operator_node_status_condition_transitions_total: transitions('Node'),
  operator_node_termination_duration_seconds: {
    unit: 'Seconds',
    kind: 'distribution',
    dimensionSets: [[C]],
    karpenter: 'name, namespace',
    help: 'From a NodeClaim’s Node’s deletion to its finalizer’s removal',
  },
  operator_node_termination_current_time_seconds: {
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: 'name, namespace',
    help: 'How long the NodePool Node longest in termination has been terminating, at each disruption pass (published while one is)',
  },
  operator_nodepool_status_condition_count: count('NodePool', OBJECT),
  operator_nodepool_status_condition_current_status_seconds: current('NodePool', OBJECT),
  operator_nodepool_status_condition_transitions_total: transitions('NodePool'),
  operator_ec2nodeclass_status_condition_count: count('EC2NodeClass', OBJECT),
  operator_ec2nodeclass_status_condition_current_status_seconds: current('EC2NodeClass', OBJECT),
  operator_ec2nodeclass_status_condition_transitions_total: transitions('EC2NodeClass'),
} as const satisfies Record<string, MetricBody>;
