import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../shared/adapters/memory/index.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { assumedSpotReplacement } from './scenarios.ts';

// Consolidation's Events on a run whose replacement is priced at a spot price the bundled catalog
// only assumes: the messages that state the saving say so; Karpenter's reasons are unchanged.

describe('consolidation Events at an assumed price', () => {
  it('say "(assumed spot price)" after the saving, and only where they state one', async () => {
    let events: readonly StoredEvent[] = [];
    const record = await simulate(parseScenario(assumedSpotReplacement('2m')), {
      atEnd: async (world) => {
        events = world.cluster.events();
      },
    });
    expect(record.disruptions.map((d) => [d.nodeClaim, d.reason])).toEqual([['big', 'Underutilized']]);
    const on = (reason: string, kind: string) =>
      events
        .filter((e) => e.event.reason === reason && e.event.subject.kind === kind)
        .map((e) => e.event.message);
    expect(on('ConsolidationCandidate', 'NodeClaim')).toEqual([
      expect.stringMatching(
        /^Consolidation chose this node: replace with 1 cheaper NodeClaim, saving \$0\.31\/hour \(assumed spot price\)$/,
      ),
    ]);
    // The Events that state no price stay as they were.
    expect(on('DisruptionTerminating', 'NodeClaim')).toEqual([
      'Disrupting for Underutilized: deleted, to be drained and terminated',
    ]);
    expect(on('DisruptionLaunching', 'NodeClaim')).toEqual([
      'Launched to replace nodes disrupted for Underutilized',
    ]);
  }, 60_000);
});
