import { D, type MetricBody, MetricDimension } from './metric-types.ts';

// The metrics Karpenter has no counterpart for, under Flotilla's own names (with Karpenter's
// dimension names all the same): what disruption saves and what it leaves alone, idle cost, dollar
// limits, the runaway guard, and a shadow stack's daily comparison.

const { C, P, R } = D;
const S = MetricDimension.side;
const Q = MetricDimension.quantile;

export const FLOTILLA_METRICS = {
  voluntary_disruption_savings: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C], [C, R]],
    karpenter: null,
    help: 'What a disruption command decided saves, USD per hour (its candidates’ prices less its replacements’), by reason as karpenter_voluntary_disruption_decisions_total; in a shadow stack, what the command it proposes would save',
  },
  voluntary_disruption_blocked_nodes: {
    unit: 'Count',
    kind: 'gauge',
    dimensionSets: [[C, R]],
    karpenter: null,
    help: 'Nodes a disruption pass left alone, by why (budget, doNotDisruptPod, pdb, notInitialized, …)',
  },
  nodepools_idle_cost: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P]],
    karpenter: null,
    help: 'The part of karpenter_nodepools_cost_total no pod requests: cost × (1 − requested ÷ allocatable), USD per hour',
  },
  nodepools_cost_limit: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, P]],
    karpenter: null,
    help: 'A NodePool’s dollar limit (its flotilla.io/max-cost-per-hour annotation), USD per hour, beside karpenter_nodepools_cost_total; published for NodePools that have one',
  },
  cluster_cost_limit: {
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: null,
    help: 'The cluster’s dollar limit (the stack’s maxCostPerHour), USD per hour, beside the sum of karpenter_nodepools_cost_total; published when it has one',
  },
  nodepools_launch_backoff_started_total: {
    unit: 'Count',
    kind: 'counter',
    dimensionSets: [[C], [C, P]],
    karpenter: null,
    help: 'Times the runaway guard paused a NodePool’s launches',
  },
  // A shadow stack's daily comparison (the shadow-report Lambda, once a day for the UTC day before,
  // dated at that day's start): the figures `flotilla shadow report` prints for that day.
  shadow_cost_per_hour: {
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, S]],
    karpenter: null,
    help: 'A shadow stack’s UTC day, USD per hour on average: what the cluster cost under its live autoscaler (side live) and what Flotilla’s choices would have cost (side flotilla)',
  },
  shadow_savings_per_hour: {
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C, R]],
    karpenter: null,
    help: 'A shadow stack’s UTC day: what Flotilla would have saved, USD per hour on average, by kind of difference (cheaper launch, launch not made, replacement not made, extra launch, disruption; each every day, 0 when none); their sum is the live side’s shadow_cost_per_hour less Flotilla’s. Negative where it would have cost more',
  },
  shadow_pod_wait_seconds: {
    shadowOnly: true,
    unit: 'Seconds',
    kind: 'gauge',
    dimensionSets: [[C, S, Q]],
    karpenter: null,
    help: 'A shadow stack’s UTC day, p50 and p90: pod creation to start on the live side; the oldest pending pod’s age at each launch Flotilla decided on its side',
  },
  shadow_observed_hours: {
    shadowOnly: true,
    unit: 'None',
    kind: 'gauge',
    dimensionSets: [[C]],
    karpenter: null,
    help: 'A shadow stack’s UTC day: the hours its lines cover (about 24 for a whole day, 0 when no observation), which the day’s other shadow figures average over',
  },
} as const satisfies Record<string, MetricBody>;
