import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { SPOT_RETRY_AFTER_MS } from '../../../shared/usecases/disruption/replacement-capacity.ts';
import { defaultPoolYaml } from './scenarios.ts';

// Consolidation in a long spot shortage (examples/spot-shortage.yaml): the nodes run on-demand,
// a spot replacement fails for want of capacity, and consolidation then goes to cheaper on-demand
// nodes instead of trying spot at every ICE back-off's end.

const file = path.resolve(import.meta.dirname, '../../../examples/spot-shortage.yaml');
const text = readFileSync(file, 'utf8');

const commands = (r: SimulationRecord) =>
  r.decisions.filter((d) => d['decision'] === 'disrupt' && d['message'] === 'disruption command');
const finalCost = (r: SimulationRecord) => r.samples.at(-1)?.costPerHour ?? Number.NaN;

/** The same service alone, on on-demand nodes only: what its pods cost at the on-demand optimum. */
const onDemandOptimum = () =>
  simulate(
    parseScenario(
      text
        .replace(/replicas: 6\n {4}scale:\n {6}- at: 15m\n {8}replicas: 0/, 'replicas: 0')
        .replace('values: [spot, on-demand]', 'values: [on-demand]')
        .replace('duration: 75m', 'duration: 5m'),
    ),
  );

describe('the spot-shortage example', () => {
  const record = simulate(parseScenario(text, file));

  it('bounds the failed spot replacements, and ends near the on-demand optimum', async () => {
    const [r, optimum] = await Promise.all([record, onDemandOptimum()]);
    const failed = commands(r).filter((d) => d['outcome'] === 'failed');
    // At least one spot replacement was tried (and failed: spot is short all along) ...
    expect(failed.length).toBeGreaterThan(0);
    // ... then at most one more per NodePool each SPOT_RETRY_AFTER_MS, not one per ICE back-off.
    expect(failed.length).toBeLessThanOrEqual(1 + Math.ceil(r.scenario.durationMs / SPOT_RETRY_AFTER_MS));
    // The reference sizes the same pods on on-demand nodes from scratch.
    const best = finalCost(optimum);
    expect(optimum.samples.at(-1)?.runningPods).toBe(6);
    expect(best).toBeGreaterThan(0);
    expect(finalCost(r)).toBeLessThanOrEqual(best * 1.05);
    // Every pod kept running, on on-demand nodes (no spot capacity was to be had).
    expect(r.samples.at(-1)).toMatchObject({ runningPods: 6, pendingPods: 0 });
    expect(r.launches.every((l) => l.capacityType === 'on-demand')).toBe(true);
  });
});

describe('a spot shortage across a pool written as Karpenter docs write it', () => {
  // Ten pods of 1 cpu on a NodePool of categories c, m and r that allows spot and on-demand, while
  // no spot capacity is to be had: the refused claims' pods are planned again together, on-demand,
  // in the run that found spot short, not one pod per poll at spot-sized shapes.
  const pool = (capacityTypes: string) => `name: shortage
duration: 15m
bootDelay: 45s
${defaultPoolYaml([
  '{ key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r] }',
  `{ key: karpenter.sh/capacity-type, operator: In, values: [${capacityTypes}] }`,
])}workloads:
  - kind: Deployment
    name: web
    replicas: 10
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1", memory: 1Gi } }
`;

  it('ends within 1.05x of the on-demand optimum within 15 minutes, every pod running', async () => {
    const [short, optimum] = await Promise.all([
      simulate(
        parseScenario(
          `${pool('spot, on-demand')}events:\n  - kind: InsufficientCapacity\n    capacityType: spot\n`,
        ),
      ),
      simulate(parseScenario(pool('on-demand'))),
    ]);
    expect(short.samples.at(-1)).toMatchObject({ runningPods: 10, pendingPods: 0 });
    expect(short.launches.every((l) => l.capacityType === 'on-demand')).toBe(true);
    expect(finalCost(short)).toBeLessThanOrEqual(1.05 * finalCost(optimum));
    // Planned once spot was refused, in the first run: every pod waited for one node boot (45 s),
    // the rounds of refused spot launches and one CreateFleet, not for a later poll.
    expect(Math.max(...short.podWaitsMs)).toBeLessThan(60_000 + 45_000);
  });
});
