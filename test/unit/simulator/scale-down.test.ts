import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { scaleDownScenario } from '../../bench/scale-down-scenario.ts';

// One big node left after a scale-down (40 replicas of 1 cpu / 2 GiB to 4, or 24 to 6 on spot):
// with Flotilla's repack switched on, consolidation takes the cluster to about what a fresh start
// with the replicas left costs; with Karpenter's methods alone (the default), single-node
// consolidation stops at the cheapest one node that holds the pods. A spot node is replaced by spot
// only with spot-to-spot consolidation on (off by default, as Karpenter).

const last = (r: SimulationRecord) => r.samples[r.samples.length - 1];

describe.each([
  ['on-demand', 40, 4],
  ['spot', 24, 6],
] as const)('a scale-down to one part-full node (%s, %i → %i replicas)', (capacityType, from, to) => {
  const spotToSpot = capacityType === 'spot';
  it('with repack on, ends within 1.10× of the cost of a fresh start, every pod running', async () => {
    const [scaled, fresh] = await Promise.all([
      simulate(
        parseScenario(
          scaleDownScenario({ capacityType, replicas: from, scaleTo: to, spotToSpot, repack: true }),
        ),
      ),
      simulate(parseScenario(scaleDownScenario({ capacityType, replicas: to, spotToSpot, repack: true }))),
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
    expect(consolidated.every((d) => d['method'] === 'repack')).toBe(true);
  });

  it('by default, consolidates with Karpenter’s methods only: no repack', async () => {
    const scaled = await simulate(
      parseScenario(scaleDownScenario({ capacityType, replicas: from, scaleTo: to, spotToSpot })),
    );
    expect(last(scaled)).toMatchObject({ runningPods: to, pendingPods: 0 });
    const methods = new Set(
      scaled.decisions.filter((d) => d['decision'] === 'disrupt').map((d) => String(d['method'])),
    );
    expect(methods.has('repack')).toBe(false);
    // On-demand, single-node consolidation replaces the big node by one smaller node; on spot,
    // Karpenter's rule of 15 cheaper spot types (the c6a family has fewer) keeps it.
    expect(methods.has('single-node')).toBe(capacityType === 'on-demand');
    // The moves weighed on the way, each pass's on its line, as Karpenter counts them.
    const moves = scaled.decisions.flatMap((d) =>
      d['decision'] === 'disruptionPass' && Array.isArray(d['consolidationMoves'])
        ? d['consolidationMoves']
        : [],
    );
    if (capacityType === 'on-demand') {
      expect(moves).toContainEqual(
        expect.objectContaining({ decision: 'approved', policy: 'WhenEmptyOrUnderutilized' }),
      );
      expect((scaled.metrics ?? []).some((p) => p.name === 'karpenter_consolidation_moves_total')).toBe(true);
    }
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
