import { describe, expect, it } from 'vitest';
import { type LogLevel, makeLogger } from '../../../shared/runtime/logger.ts';
import { METRIC_NAMESPACE, METRIC_SPECS, METRICS, type MetricName } from '../../../shared/runtime/metrics.ts';
import { dropMetrics, makeEmfMetrics } from '../../../shared/runtime/metrics-sink.ts';
import {
  DECISION_MESSAGES,
  type Decision,
  writeDecision,
} from '../../../shared/usecases/decisions/decision.ts';
import { toMetricPoints } from '../../../shared/usecases/decisions/metrics.ts';
import { type EmfValue, emfProblems, isEmfLine, readEmf, sumBySeries } from '../runtime/emf-rules.ts';
import { CLUSTER, CORPUS, CORPUS_ENTRIES } from './decision-corpus.ts';

const T = Date.parse('2026-03-01T12:00:00Z');

/**
 * Writes `decision` as a Lambda does, its logger and metrics sink on one stream (at `warn` unless
 * told: metrics do not depend on the level). Unless `measured` is false: then as a script does, with
 * no cluster and a sink that measures nothing (dropMetrics).
 */
function written(
  decision: Decision,
  {
    lambda = 'disruption',
    measured = true,
    level = 'warn',
  }: { readonly lambda?: string; readonly measured?: boolean; readonly level?: LogLevel } = {},
) {
  const texts: string[] = [];
  const write = (t: string) => texts.push(t);
  const fields = measured ? { lambda, cluster: CLUSTER } : { lambda };
  const now = () => new Date(T);
  const logger = makeLogger(fields, { level, sink: write, now });
  const metrics = measured ? makeEmfMetrics({ cluster: CLUSTER, fields, now, write }) : dropMetrics(now);
  writeDecision({ logger: logger.child({ holder: 'h-1' }), metrics }, decision);
  const lines = texts.map((t) => JSON.parse(t) as Record<string, unknown>);
  const emf = texts.filter((_, i) => isEmfLine(lines[i] ?? {}));
  return { texts, lines, emf, values: emf.flatMap((t) => readEmf(JSON.parse(t) as Record<string, unknown>)) };
}

/**
 * When a decision's points are dated: when written, except a shadow day's comparison, dated in the
 * last minute of the UTC day it is about (the dashboard shows one figure per day).
 */
const datedAt = (decision: Decision) =>
  decision.kind === 'compare' ? Date.parse(`${decision.day}T23:59:00Z`) : T;

const union = (sets: readonly (readonly string[])[]) => [...new Set(sets.flat())].sort();

describe('the metrics of each decision, as EMF lines', () => {
  it.each(CORPUS_ENTRIES.map((e, i) => [`${e.decision.kind} #${i}`, e] as const))(
    '%s: every EMF line follows CloudWatch’s rules and carries the decision’s figures',
    (_, entry) => {
      const { emf, values, lines } = written(entry.decision);
      for (const text of emf) expect(emfProblems(text)).toEqual([]);
      const sums = sumBySeries(values);
      expect([...sums.keys()].sort()).toEqual(Object.keys(entry.expected).sort());
      for (const [key, sum] of sums) expect(sum, key).toBeCloseTo(entry.expected[key] ?? Number.NaN, 9);
      for (const line of lines.filter(isEmfLine)) {
        expect(line).toMatchObject({
          level: 'info',
          message: 'metrics',
          cluster: CLUSTER,
          lambda: 'disruption',
        });
        // The sink's fields, not those a use case's child logger adds to its own lines.
        expect(line).not.toHaveProperty('holder');
        expect(line['_aws']).toMatchObject({ Timestamp: datedAt(entry.decision) });
      }
    },
  );

  it('covers every decision kind', () => {
    expect(Object.keys(CORPUS).sort()).toEqual(Object.keys(DECISION_MESSAGES).sort());
  });

  it('writes each metric under its catalog unit and exactly its catalog dimension sets, in Flotilla', () => {
    const seen = new Map<string, EmfValue>();
    for (const entry of CORPUS_ENTRIES) {
      const { emf, values } = written(entry.decision);
      for (const text of emf) {
        for (const d of (JSON.parse(text) as { _aws: { CloudWatchMetrics: { Namespace: string }[] } })._aws
          .CloudWatchMetrics) {
          expect(d.Namespace).toBe(METRIC_NAMESPACE);
        }
      }
      for (const v of values) {
        const spec = METRICS[v.name as MetricName];
        expect(spec, v.name).toBeDefined();
        expect(v.unit).toBe(spec.unit);
        expect(v.dimensionSets).toEqual(spec.dimensionSets);
        seen.set(v.name, v);
      }
    }
    // Every catalog metric is emitted by some decision kind: the dashboard and alarms can rely on it.
    expect([...seen.keys()].sort()).toEqual(METRIC_SPECS.map((s) => s.name).sort());
  });

  it('gives every point every dimension its metric’s dimension sets name, and no other', () => {
    for (const entry of CORPUS_ENTRIES) {
      for (const p of toMetricPoints(entry.decision, { cluster: CLUSTER, timeMs: T })) {
        expect(Object.keys(p.dimensions).sort(), p.name).toEqual(union(METRICS[p.name].dimensionSets));
        for (const value of Object.values(p.dimensions)) expect(value).toMatch(/^.+$/);
        expect(p.timeMs).toBe(datedAt(entry.decision));
      }
    }
  });

  it('writes the decision’s line first, as before, and no metric line to a sink that names no cluster', () => {
    const plan = CORPUS.plan[0]?.decision;
    if (plan === undefined) throw new Error('the corpus has a plan');
    const withCluster = written(plan, { lambda: 'provisioner', level: 'info' });
    expect(withCluster.lines[0]).toMatchObject({
      message: 'provisioning planned',
      decision: 'plan',
      holder: 'h-1',
    });
    expect(withCluster.emf).toHaveLength(1);
    const without = written(plan, { lambda: 'script', measured: false, level: 'info' });
    expect(without.lines).toHaveLength(1);
    expect(without.emf).toEqual([]);
  });
});
