import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { makeEmfMetrics } from '../../../shared/runtime/metrics-sink.ts';
import {
  type Decision,
  type DecisionOutput,
  writeDecision,
  writeDecisions,
} from '../../../shared/usecases/decisions/decision.ts';
import { emfProblems, isEmfLine, readEmf, sumBySeries } from '../runtime/emf-rules.ts';

// A disruption pass writes its summary and its observation together: at 100 NodePools their
// metrics fit in 3 EMF lines a NodePool (one per resource type of its usage, which also carry its
// cost, its Nodes' totals and its budgets' allowed disruptions, one reason each) and one line per
// other reason (a node left alone, an eligible node: a line holds one reason), every line within
// CloudWatch's rules and every series with the figures it has when each decision is written alone.

const T = Date.parse('2026-03-01T12:00:00Z');
const pools = Array.from({ length: 100 }, (_, i) => `pool-${i}`);

const summary: Decision = {
  kind: 'disruptionPass',
  reason: 'nothing to do',
  candidates: 500,
  empty: 3,
  drifted: 1,
  expired: 0,
  blocked: 4,
  budgetBlocked: [],
  commands: 0,
  failedValidations: 0,
  inFlight: 0,
  eligible: { Empty: 3, Drifted: 1, Underutilized: 10 },
  blockedBy: { budget: 2, pdb: 1, notInitialized: 1 },
  allowed: Object.fromEntries(pools.map((p, i) => [p, { Empty: i % 3, Drifted: 1, Underutilized: 2 }])),
};

const observation: Decision = {
  kind: 'observe',
  reason: 'disruption pass',
  nodePools: Object.fromEntries(
    pools.map((p, i) => [
      p,
      {
        nodes: 5,
        cpu: 20 + i,
        memoryBytes: 80 * 2 ** 30,
        limits: { cpu: 100, memory: 400 * 2 ** 30 },
        pricePerHour: 1 + i / 100,
        idlePricePerHour: 0.3,
        cpuUtilization: 60,
        memoryUtilization: 40,
        allocatable: { cpu: 19 + i, memoryBytes: 76 * 2 ** 30 },
        podRequests: { cpu: 11, memoryBytes: 30 * 2 ** 30 },
        daemonRequests: { cpu: 1, memoryBytes: 2 ** 30 },
        systemOverhead: { cpu: 1, memoryBytes: 4 * 2 ** 30 },
        oldestNodeSeconds: 3600 + i,
      },
    ]),
  ),
  podStartupSeconds: [12.5, 30.1],
};

function emfOf(write: (out: DecisionOutput) => void) {
  const texts: string[] = [];
  const now = () => new Date(T);
  write({
    logger: makeLogger({ cluster: 'prod' }, { level: 'warn', sink: (t) => texts.push(t), now }),
    metrics: makeEmfMetrics({
      cluster: 'prod',
      fields: { cluster: 'prod' },
      now,
      write: (t) => texts.push(t),
    }),
  });
  return texts.filter((t) => isEmfLine(JSON.parse(t) as Record<string, unknown>));
}

describe('the EMF lines of a pass over 100 NodePools', () => {
  it('are 3 a NodePool and one per other reason, within the rules, with the figures of each decision written alone', () => {
    const together = emfOf((out) => writeDecisions(out, [summary, observation]));
    const apart = emfOf((out) => {
      writeDecision(out, summary);
      writeDecision(out, observation);
    });
    // blockedBy's budget, pdb and notInitialized share no line with a budget reason, nor do the
    // eligible nodes' reasons (lower case, where the budgets' are Karpenter's NodePool spelling).
    expect(together).toHaveLength(3 * pools.length + 6);
    expect(apart.length).toBeGreaterThan(together.length);
    for (const text of together) expect(emfProblems(text)).toEqual([]);
    const sums = (texts: string[]) =>
      sumBySeries(texts.flatMap((t) => readEmf(JSON.parse(t) as Record<string, unknown>)));
    expect(sums(together)).toEqual(sums(apart));
  });
});
