import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';

// Launches at the prices a hand calculation gives: claims planned for spot are planned again when
// spot runs out (examples/spot-fallback.yaml), and pods planned onto nodes on their way are not
// planned for again (examples/gpu-jobs.yaml: a GPU limit, preferred anti-affinity, 90 s boots).

const example = (name: string, duration?: string) => {
  const file = path.resolve(import.meta.dirname, '../../../examples', name);
  const text = readFileSync(file, 'utf8');
  return simulate(
    parseScenario(duration === undefined ? text : text.replace(/^duration: .*$/m, `duration: ${duration}`)),
  );
};
const provisioningLaunches = (r: SimulationRecord) =>
  r.decisions.filter((d) => d['decision'] === 'launch' && d['reason'] === 'provisioning');

describe('launch prices', () => {
  it('plans the pods again at on-demand prices when spot runs out (spot-fallback)', async () => {
    const r = await example('spot-fallback.yaml');
    // 10 pods of 1 cpu: 7 on a c6a.2xlarge ($0.306/h) and 3 on a c6a.xlarge ($0.153/h).
    expect(r.launches.map((l) => [l.instanceType, l.capacityType]).sort()).toEqual([
      ['c6a.2xlarge', 'on-demand'],
      ['c6a.xlarge', 'on-demand'],
    ]);
    expect(r.samples.at(-1)?.costPerHour).toBeCloseTo(0.459, 4);
    expect(r.samples.at(-1)).toMatchObject({ runningPods: 10, pendingPods: 0 });
    // Every pod waited for one node boot only (45 s), none for a later run.
    expect(Math.max(...r.podWaitsMs)).toBeLessThan(60_000);
  });

  it('launches one node per GPU pod and none again for pods on their way (gpu-jobs)', async () => {
    // Up to the end of the first wave of inference pods (created at 5m, booted at 6m30s, 4 min each).
    const r = await example('gpu-jobs.yaml', '9m');
    const launched = provisioningLaunches(r).filter((d) => d['nodePool'] === 'gpu');
    // 2 fine-tuning pods of 4 GPUs (a g6.12xlarge each), 6 inference pods of 1 GPU (a g6.xlarge each).
    expect(launched.map((d) => d['instanceType']).sort()).toEqual([
      ...Array(2).fill('g6.12xlarge'),
      ...Array(6).fill('g6.xlarge'),
    ]);
    const planned = launched.flatMap((d) => d['pods'] as string[]);
    expect(new Set(planned).size).toBe(planned.length);
  });
});
