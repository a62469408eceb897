import { describe, expect, it } from 'vitest';
import { toEmfDocuments } from '../../../shared/runtime/emf.ts';
import type { Decision } from '../../../shared/usecases/decisions/decision.ts';
import { toMetricPoints } from '../../../shared/usecases/decisions/metrics.ts';
import type { ConditionTally } from '../../../shared/usecases/decisions/observation.ts';
import { readEmf, seriesKey } from '../runtime/emf-rules.ts';

// What a quiet cluster's metrics cost: CloudWatch bills each series (a metric name with one set of
// dimension values) published in an hour, about $0.30 a month for one published all month. A
// quiet 2,000-node cluster with one NodePool and one EC2NodeClass, nothing pending and nothing
// being disrupted, publishes the series of a provisioning run that finds no pod, a disruption
// pass and its observation, every minute: their count is its monthly bill. Nothing here may grow
// with the nodes, the pods or the NodeClaims.

const T = Date.parse('2026-03-01T12:00:00Z');

const steady = (type: string, objects: number, status = 'True'): ConditionTally => ({
  type,
  status,
  ...(status === 'True' ? { reason: type } : {}),
  objects,
  longestSeconds: 86_400,
  transitions: 0,
  steady: true,
});

/** One minute of a quiet cluster of `nodes` nodes in one NodePool, as its decisions say it. */
function quietMinute(nodes: number): Decision[] {
  return [
    { kind: 'skip', reason: 'no provisionable pods', leaseToken: 3 },
    {
      kind: 'disruptionPass',
      reason: 'blocked',
      candidates: nodes,
      empty: 0,
      drifted: 0,
      expired: 0,
      blocked: 40,
      budgetBlocked: [],
      commands: 0,
      failedValidations: 0,
      inFlight: 0,
      eligible: { Empty: 0, Drifted: 0, Underutilized: 120 },
      blockedBy: { pdb: 30, doNotDisruptPod: 10 },
      allowed: { default: { Empty: 200, Drifted: 200, Underutilized: 200 } },
    },
    {
      kind: 'observe',
      reason: 'disruption pass',
      podStartupSeconds: [3.1, 4.2, 12],
      nodePools: {
        default: {
          nodes,
          cpu: nodes * 8,
          memoryBytes: nodes * 32e9,
          limits: { cpu: 100_000 },
          pricePerHour: nodes * 0.4,
          idlePricePerHour: nodes * 0.1,
          cpuUtilization: 70,
          memoryUtilization: 60,
          allocatable: { cpu: nodes * 7.9, memoryBytes: nodes * 30e9 },
          podRequests: { cpu: nodes * 5.5, memoryBytes: nodes * 18e9 },
          daemonRequests: { cpu: nodes * 0.3, memoryBytes: nodes * 1e9 },
          systemOverhead: { cpu: nodes * 0.1, memoryBytes: nodes * 2e9 },
          oldestNodeSeconds: 2_000_000,
        },
      },
      conditions: {
        nodeClaim: [
          ...['Launched', 'Registered', 'Initialized', 'Ready', 'ConsistentStateFound'].map((t) =>
            steady(t, nodes),
          ),
          // Underutilized nodes past consolidateAfter; some take or lose it every minute.
          {
            type: 'Consolidatable',
            status: 'True',
            reason: 'Consolidatable',
            objects: 120,
            longestSeconds: 3600,
            transitions: 4,
          },
        ],
        node: [
          steady('Ready', nodes),
          ...['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((t) => steady(t, nodes, 'False')),
        ],
        nodePool: ['Ready', 'ValidationSucceeded', 'NodeClassReady', 'NodeRegistrationHealthy'].map((t) =>
          steady(t, 1),
        ),
        ec2NodeClass: [
          'Ready',
          'SubnetsReady',
          'SecurityGroupsReady',
          'AMIsReady',
          'InstanceProfileReady',
        ].map((t) => steady(t, 1)),
      },
    },
  ];
}

/** The distinct series `decisions` publish, as CloudWatch counts them (each dimension set apart). */
function seriesOf(decisions: readonly Decision[]): Set<string> {
  const points = decisions.flatMap((d) => toMetricPoints(d, { cluster: 'prod', timeMs: T }));
  const keys = new Set<string>();
  for (const doc of toEmfDocuments(points)) {
    for (const value of readEmf(doc)) {
      for (const set of value.dimensionSets) {
        keys.add(seriesKey(value.name, Object.fromEntries(set.map((k) => [k, value.dimensions[k]]))));
      }
    }
  }
  return keys;
}

describe('the metrics bill of a quiet cluster', () => {
  it('is 33 series, about $9.90 a month, for 2,000 nodes in one NodePool', () => {
    expect(seriesOf(quietMinute(2000)).size).toBe(33);
  });

  it('does not grow with the nodes', () => {
    expect(seriesOf(quietMinute(20_000))).toEqual(seriesOf(quietMinute(2000)));
    expect(seriesOf(quietMinute(20)).size).toBe(seriesOf(quietMinute(2000)).size);
  });

  it('leaves conditions in their steady state out', () => {
    const names = [...seriesOf(quietMinute(2000))].filter((key) => key.includes('status_condition'));
    expect(names.every((key) => key.includes('Consolidatable'))).toBe(true);
  });
});
