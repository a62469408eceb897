import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { addDashboard } from '../../infra/dashboard.ts';
import { FlotillaConfigError } from '../../infra/flotilla-cluster.ts';
import { DASHBOARD, type DashboardSpec } from '../../shared/runtime/dashboard.ts';
import { METRIC_NAMESPACE, METRIC_SPECS } from '../../shared/runtime/metrics.ts';
import { flotillaSeries, oneWidgetSpec } from '../unit/runtime/dashboard-fixtures.ts';
import {
  alarmMetrics,
  catalogProblems,
  dashboardBodies,
  dashboardMetrics,
  searchesIn,
  type TemplateJson,
} from './dashboard-contract.ts';
import { makeStack, NO_BUNDLING } from './stacks.ts';

describe('the cluster dashboard and its alarms', () => {
  let built: ReturnType<typeof makeStack>;
  let json: TemplateJson;
  beforeAll(() => {
    built = makeStack();
    json = built.template.toJSON() as TemplateJson;
  });

  it('builds one dashboard named after the cluster, with a heading per row of the spec', () => {
    built.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    built.template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'Flotilla-demo' });
    const [body] = dashboardBodies(json);
    const headings = (body?.widgets ?? [])
      .filter((w) => w['type'] === 'text')
      .map((w) => (w['properties'] as { markdown: string }).markdown);
    expect(headings).toEqual(DASHBOARD.rows.map((row) => `## ${row.title}`));
    const titles = (body?.widgets ?? []).map((w) => (w['properties'] as { title?: string }).title);
    for (const widget of DASHBOARD.rows.flatMap((row) => row.widgets)) expect(titles).toContain(widget.title);
  });

  it('names only catalog metrics, each with exactly one of its dimension sets, in Flotilla, for this cluster', () => {
    const { metrics, unparsed } = dashboardMetrics(json);
    expect(unparsed).toEqual([]);
    const flotilla = [...metrics, ...alarmMetrics(json)].filter((m) => m.namespace === METRIC_NAMESPACE);
    // The SEARCH breakdowns and the alarms are read, not only the plain metrics.
    expect(new Set(flotilla.map((m) => m.via))).toEqual(new Set(['metric', 'search', 'alarm']));
    expect(catalogProblems(flotilla, 'demo')).toEqual([]);
  });

  it('shows every metric of the catalog, a shadow stack’s own on its dashboard only', () => {
    const shownIn = (template: TemplateJson) =>
      new Set(
        dashboardMetrics(template)
          .metrics.filter((m) => m.namespace === METRIC_NAMESPACE)
          .map((m) => m.metricName),
      );
    const live = shownIn(json);
    const shadowOnly = METRIC_SPECS.filter((spec) => spec.shadowOnly === true).map((spec) => spec.name);
    expect(shadowOnly).toHaveLength(4);
    expect(METRIC_SPECS.map((spec) => spec.name).filter((name) => !live.has(name))).toEqual(shadowOnly);
    const shadow = shownIn(makeStack({ mode: 'shadow' }).template.toJSON() as TemplateJson);
    expect(METRIC_SPECS.map((spec) => spec.name).filter((name) => !shadow.has(name))).toEqual([]);
  });

  it('draws a shadow stack’s daily figures one value a day over two weeks', () => {
    const shadow = makeStack({ mode: 'shadow' }).template.toJSON() as TemplateJson;
    const [body] = dashboardBodies(shadow);
    const daily = (body?.widgets ?? [])
      .map((w) => w['properties'] as { title?: string; start?: string; period?: number; metrics?: unknown })
      .filter((p) => JSON.stringify(p.metrics ?? []).includes('shadow_'));
    expect(daily).toHaveLength(5);
    for (const widget of daily) {
      expect(widget, widget.title).toMatchObject({ start: '-P14D', period: 86_400 });
      // Every metric of it read a day at a time: a plain metric's own period, a SEARCH's argument.
      for (const entry of (widget.metrics ?? []) as unknown[][]) {
        const options = entry.at(-1) as { period?: number; expression?: string };
        if (options.expression === undefined) {
          expect(options.period, widget.title).toBe(86_400);
        } else {
          for (const search of options.expression.match(/SEARCH\([^)]*\)/g) ?? []) {
            expect(search, widget.title).toMatch(/, 86400\)$/);
          }
        }
      }
    }
    // Savings may be negative (an extra launch): that graph's axis has no floor.
    const savings = (body?.widgets ?? []).find((w) =>
      JSON.stringify(w['properties']).includes('What Flotilla saves per day'),
    );
    expect(JSON.stringify(savings?.['properties'])).not.toContain('"min":0');
  });

  it('shows the depth of every queue a dead-letter alarm watches, and every Lambda alarmed on', () => {
    const { metrics } = dashboardMetrics(json);
    const alarms = alarmMetrics(json);
    const values = (where: string, key: string) =>
      new Set(metrics.filter((m) => m.where === where).map((m) => m.values[key]));
    const alarmed = (metricName: string, key: string) =>
      new Set(alarms.filter((a) => a.metricName === metricName).map((a) => a.values[key]));
    // 4 work dead-letter queues, EventBridge's, and the 6 on-failure queues.
    expect(values('Dead-letter queue depth', 'QueueName').size).toBe(11);
    expect(values('Dead-letter queue depth', 'QueueName')).toEqual(
      alarmed('ApproximateNumberOfMessagesVisible', 'QueueName'),
    );
    expect(values('Work queue depth', 'QueueName').size).toBe(4);
    for (const title of ['Lambda duration p90 (ms)', 'Lambda errors', 'Lambda throttles']) {
      expect(values(title, 'FunctionName')).toEqual(alarmed('Errors', 'FunctionName'));
      expect(values(title, 'FunctionName').size).toBe(7);
    }
    // Throttles page for the Lambdas without reserved concurrency: all but the provisioner.
    const throttled = alarmed('Throttles', 'FunctionName');
    expect(throttled.size).toBe(6);
    for (const name of throttled) expect(alarmed('Errors', 'FunctionName')).toContain(name);
  });

  it('pages on pods pending 10 minutes, launches failing for 15, and the runaway guard pausing a NodePool', () => {
    const flotilla = Object.values(json.Resources)
      .filter((r) => r.Properties['Namespace'] === METRIC_NAMESPACE)
      .map((r) => r.Properties);
    expect(flotilla).toHaveLength(3);
    expect(flotilla).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          MetricName: 'karpenter_pods_unbound_time_seconds',
          Statistic: 'Maximum',
          Threshold: 600,
          ComparisonOperator: 'GreaterThanThreshold',
        }),
        expect.objectContaining({
          MetricName: 'karpenter_cloudprovider_instance_launch_failures_total',
          Statistic: 'Sum',
          Threshold: 1,
          EvaluationPeriods: 3,
          DatapointsToAlarm: 3,
        }),
        expect.objectContaining({
          MetricName: 'nodepools_launch_backoff_started_total',
          Statistic: 'Sum',
          Threshold: 1,
        }),
      ]),
    );
  });

  it('pages on pending pods after the time asked for, and refuses less than the pending-pod poll', () => {
    makeStack({ pendingPodAlarmAfter: Duration.minutes(15) }).template.hasResourceProperties(
      'AWS::CloudWatch::Alarm',
      { MetricName: 'karpenter_pods_unbound_time_seconds', Threshold: 900 },
    );
    expect(() => makeStack({ pendingPodAlarmAfter: Duration.seconds(30) })).toThrow(FlotillaConfigError);
    expect(() =>
      makeStack({ pendingPodAlarmAfter: Duration.minutes(3), pendingPodPollInterval: Duration.minutes(5) }),
    ).toThrow(/pendingPodAlarmAfter is 3 minutes; .* at least the pending-pod poll interval \(300 s\)/);
  });
});

describe('the dashboard contract check', () => {
  const synthesize = (spec: DashboardSpec) => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Check');
    addDashboard(stack, {
      clusterName: 'demo',
      spec,
      workQueues: { work: new sqs.Queue(stack, 'Work') },
      deadLetterQueues: {},
      functions: {},
    });
    return Template.fromStack(stack).toJSON() as TemplateJson;
  };

  it.each([
    [
      'a plain metric with a dimension set it is not emitted under',
      oneWidgetSpec([
        flotillaSeries('karpenter_nodes_drained_total', 'Sum', ['cluster', 'zone'], {
          filter: { zone: 'a' },
        }),
      ]),
      /karpenter_nodes_drained_total: dimensions \[cluster, zone\] are not one of its dimension sets/,
    ],
    [
      'a breakdown over a dimension set the metric is not emitted under',
      oneWidgetSpec([
        flotillaSeries('karpenter_pods_unbound_time_seconds', 'Maximum', ['cluster', 'nodepool']),
      ]),
      /w \(search\) karpenter_pods_unbound_time_seconds: dimensions \[cluster, nodepool\]/,
    ],
  ])('finds %s', (_what, spec, message) => {
    const { metrics } = dashboardMetrics(synthesize(spec));
    expect(catalogProblems(metrics, 'demo').join('\n')).toMatch(message);
    expect(catalogProblems(metrics, 'other').join('\n')).toMatch(/cluster is demo, not other/);
  });

  it('finds a search in a namespace other than Flotilla', () => {
    const metrics = searchesIn(
      `SEARCH('{Flotila,cluster} MetricName="karpenter_pods_unbound_time_seconds" cluster="demo"', 'Maximum', 300)`,
    ).map((m) => ({ ...m, where: 'w', via: 'search' as const }));
    expect(catalogProblems(metrics, 'demo')).toEqual([
      'w (search) karpenter_pods_unbound_time_seconds: namespace Flotila, not Flotilla',
    ]);
  });

  it('reads the AWS metrics of a widget with their resource', () => {
    const spec = oneWidgetSpec([{ source: 'aws', kind: 'workQueueDepth' }]);
    const { metrics } = dashboardMetrics(synthesize(spec));
    expect(metrics).toEqual([
      expect.objectContaining({
        namespace: 'AWS/SQS',
        metricName: 'ApproximateNumberOfMessagesVisible',
        values: { QueueName: expect.stringMatching(/^Work[0-9A-F]{8}\.QueueName$/) },
      }),
    ]);
  });
});
