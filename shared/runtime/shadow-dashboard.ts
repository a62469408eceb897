import {
  BY_POOL,
  BY_REASON,
  CLUSTER,
  DASHBOARD,
  type DashboardRow,
  type DashboardSpec,
  type DashboardWidget,
  each,
  graph,
  total,
} from './dashboard.ts';

// A shadow stack's dashboard: the rows it opens with before the rows every stack has (dashboard.ts):
// the live cluster as its observations see it, then its shadow-report Lambda's daily figures.

/** The live cost a shadow stack observes, and what the command it proposes would save. */
const LIVE_COST_AND_SAVING = [
  total('karpenter_nodepools_cost_total', 'Maximum', BY_POOL, 'live cost'),
  each('voluntary_disruption_savings', 'Maximum', CLUSTER, 'Flotilla saves'),
];

/**
 * The first row of a shadow stack's dashboard: the live cluster's cost as the shadow observes it,
 * what the command Flotilla proposes would save, and pod startup on the live side against how long
 * pods had waited when Flotilla decided. `flotilla shadow report` prices a whole window.
 */
export const SHADOW_DASHBOARD_ROW: DashboardRow = {
  title: 'Shadow: the live cluster, and what Flotilla would do',
  widgets: [
    {
      title: 'Live cost, and what Flotilla would save ($/hour)',
      kind: 'number',
      unit: 'USD/hour',
      width: 6,
      series: LIVE_COST_AND_SAVING,
    },
    graph(
      'Live cost, and what Flotilla’s proposal would save ($/hour)',
      'USD/hour',
      10,
      LIVE_COST_AND_SAVING,
    ),
    graph('Pod startup (live) and pod wait at Flotilla’s decision (s)', 'seconds', 8, [
      each('karpenter_pods_startup_duration_seconds', 'p90', CLUSTER, 'live startup p90'),
      each('karpenter_pods_unbound_time_seconds', 'Maximum', CLUSTER, 'oldest pending at decision'),
    ]),
  ],
};

/** How many days the daily widgets show. */
const SHADOW_DAYS = 14;

const daily = (widget: DashboardWidget): DashboardWidget => ({ ...widget, days: SHADOW_DAYS });

/**
 * The second row of a shadow stack's dashboard: its shadow-report Lambda's figures, one per UTC
 * day: what the cluster cost under the live autoscaler and what Flotilla's choices would have
 * cost, what each kind of difference saves, pod wait on both sides, and the hours each day's
 * figures cover. `flotilla shadow report --since 24h` lists the differences themselves.
 */
export const SHADOW_DAILY_ROW: DashboardRow = {
  title: 'Shadow: each UTC day, the live autoscaler against Flotilla',
  widgets: [
    daily({
      title: 'Last day, $/hour: live and Flotilla',
      kind: 'number',
      unit: 'USD/hour',
      width: 6,
      series: [each('shadow_cost_per_hour', 'Maximum', [...CLUSTER, 'side'], 'cost')],
    }),
    daily(
      graph('Cost per day, $/hour: live and Flotilla', 'USD/hour', 9, [
        each('shadow_cost_per_hour', 'Maximum', [...CLUSTER, 'side'], 'cost'),
      ]),
    ),
    {
      ...daily(
        graph('What Flotilla saves per day, by difference ($/hour)', 'USD/hour', 9, [
          each('shadow_savings_per_hour', 'Maximum', BY_REASON, 'saves'),
          total('shadow_savings_per_hour', 'Maximum', BY_REASON, 'in all'),
        ]),
      ),
      signed: true,
    },
    daily(
      graph('Pod wait per day: live startup, Flotilla at its decision (s)', 'seconds', 12, [
        each('shadow_pod_wait_seconds', 'Maximum', [...CLUSTER, 'side', 'quantile'], 'wait'),
      ]),
    ),
    daily(
      graph('Hours of each day the shadow observed', 'hours', 12, [
        each('shadow_observed_hours', 'Maximum', CLUSTER, 'hours'),
      ]),
    ),
  ],
};

/** A stack's dashboard: a shadow stack's starts with SHADOW_DASHBOARD_ROW and SHADOW_DAILY_ROW. */
export function dashboardFor(shadow: boolean): DashboardSpec {
  return shadow
    ? { ...DASHBOARD, rows: [SHADOW_DASHBOARD_ROW, SHADOW_DAILY_ROW, ...DASHBOARD.rows] }
    : DASHBOARD;
}
