import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { scaleDownScenario } from '../../bench/scale-down-scenario.ts';

// One big node left after a scale-down (40 replicas of 1 cpu / 2 GiB to 4, or 24 to 6 on spot):
// consolidation takes the cluster to about what a fresh start with the replicas left costs. A spot
// node is replaced by spot only with spot-to-spot consolidation on (off by default, as Karpenter).

const last = (r: SimulationRecord) => r.samples[r.samples.length - 1];

describe.each([
  ['on-demand', 40, 4],
  ['spot', 24, 6],
] as const)('a scale-down to one part-full node (%s, %i → %i replicas)', (capacityType, from, to) => {
  const spotToSpot = capacityType === 'spot';
  it('ends within 1.10× of the cost of a fresh start, every pod running', async () => {
    const [scaled, fresh] = await Promise.all([
      simulate(parseScenario(scaleDownScenario({ capacityType, replicas: from, scaleTo: to, spotToSpot }))),
      simulate(parseScenario(scaleDownScenario({ capacityType, replicas: to, spotToSpot }))),
    ]);
    // Before the scale-down the replicas filled a large node (and emptiness took the rest).
    const peak = scaled.samples.reduce((most, s) => Math.max(most, s.costPerHour), 0);
    const freshCost = last(fresh)?.costPerHour ?? 0;
    expect(freshCost).toBeGreaterThan(0);
    expect(peak).toBeGreaterThan(2 * freshCost);
    expect(last(scaled)).toMatchObject({ runningPods: to, pendingPods: 0 });
    expect(last(scaled)?.costPerHour).toBeLessThanOrEqual(1.1 * freshCost);
    // It got there by consolidation, not by emptiness alone.
    const consolidated = scaled.decisions.filter(
      (d) => d['decision'] === 'disrupt' && d['reason'] === 'Underutilized' && d['outcome'] === 'deleted',
    );
    expect(consolidated.length).toBeGreaterThan(0);
  });
});

describe('a spot interruption during a scale-down (24 → 6 replicas on spot)', () => {
  it('ends within 1.10× of the cost of a fresh start, every pod running', async () => {
    // EC2 warns the node the replicas filled a minute after the scale-down, while consolidation
    // and the scale-down's own terminations are under way.
    const interrupted = `${scaleDownScenario({ capacityType: 'spot', replicas: 24, scaleTo: 6 })}events:
  - { kind: SpotInterruption, at: 11m }
`;
    const [scaled, fresh] = await Promise.all([
      simulate(parseScenario(interrupted)),
      simulate(parseScenario(scaleDownScenario({ capacityType: 'spot', replicas: 6 }))),
    ]);
    expect(scaled.interruptions).toHaveLength(1);
    expect(last(scaled)).toMatchObject({ runningPods: 6, pendingPods: 0 });
    expect(last(scaled)?.costPerHour).toBeLessThanOrEqual(1.1 * (last(fresh)?.costPerHour ?? 0));
  });
});
