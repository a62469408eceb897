import { describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../../shared/simulator/html-report.ts';
import type { SimLaunch, SimulationRecord } from '../../../shared/simulator/record.ts';
import { consolidationSavings } from '../../../shared/simulator/stats.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';

// What the report says consolidation saved: per command from the decision log. Its check against
// the same day run again with consolidation off is in `npm run bench:sim`.

const HOUR = 3_600_000;
const START = Date.parse('2026-01-01T00:00:00Z');

const launch = (nodeClaim: string, pricePerHour: number): SimLaunch => ({
  atMs: START,
  nodeClaim,
  nodePool: 'default',
  instanceType: 'm6i.xlarge',
  capacityType: 'on-demand',
  zone: 'us-east-1a',
  pricePerHour,
});

const disrupt = (fields: Record<string, unknown>) => ({
  decision: 'disrupt',
  message: 'disruption command',
  ...fields,
});

const record = (decisions: Record<string, unknown>[], launches: SimLaunch[]): SimulationRecord => ({
  scenario: { name: 's', region: 'us-east-1', startMs: START, durationMs: 10 * HOUR },
  samples: [],
  launches,
  terminations: [],
  interruptions: [],
  disruptions: [],
  podWaitsMs: [],
  unschedulable: [],
  decisions,
});

describe('consolidationSavings', () => {
  it("counts each carried-out command's $/hour from its deletion to the end, at launch prices", () => {
    const r = record(
      [
        // Deleted at 4h: two nodes of $0.20 replaced by one that launched at $0.15 (logged 0.14).
        disrupt({
          reason: 'Underutilized',
          outcome: 'deleted',
          commandId: 'a',
          atMs: START + 4 * HOUR,
          candidates: [{ nodeClaim: 'n1', pricePerHour: 0.2 }, { nodeClaim: 'n2' }],
          replacements: [{ nodeClaim: 'r1', pricePerHour: 0.14 }],
        }),
        // The same command logged again: counted once.
        disrupt({
          reason: 'Underutilized',
          outcome: 'deleted',
          commandId: 'a',
          atMs: START + 5 * HOUR,
          candidates: [{ nodeClaim: 'n1' }, { nodeClaim: 'n2' }],
          replacements: [{ nodeClaim: 'r1' }],
        }),
        // An empty node with no launch in the record: its logged price.
        disrupt({
          reason: 'Empty',
          outcome: 'deleted',
          commandId: 'b',
          atMs: START + 8 * HOUR,
          candidates: [{ nodeClaim: 'n9', pricePerHour: 0.5 }],
          replacements: [],
        }),
        // Not carried out, or not about cost.
        disrupt({
          reason: 'Underutilized',
          outcome: 'started',
          commandId: 'c',
          atMs: START,
          candidates: [{ nodeClaim: 'n3' }],
        }),
        disrupt({
          reason: 'Empty',
          outcome: 'abandoned',
          commandId: 'd',
          atMs: START,
          candidates: [{ nodeClaim: 'n3' }],
        }),
        disrupt({
          reason: 'Drifted',
          outcome: 'deleted',
          commandId: 'e',
          atMs: START,
          candidates: [{ nodeClaim: 'n3' }],
        }),
        disrupt({
          reason: 'Expired',
          outcome: 'deleted',
          commandId: 'f',
          atMs: START,
          candidates: [{ nodeClaim: 'n3' }],
        }),
      ],
      [launch('n1', 0.2), launch('n2', 0.2), launch('r1', 0.15), launch('n3', 1)],
    );
    const withNodes: SimulationRecord = {
      ...r,
      disruptions: [
        { atMs: START + 4 * HOUR, nodeClaim: 'n1', reason: 'Underutilized' },
        { atMs: START + 4 * HOUR, nodeClaim: 'n2', reason: 'Underutilized' },
        { atMs: START + 8 * HOUR, nodeClaim: 'n9', reason: 'Empty' },
      ],
    };
    const rows = consolidationSavings(r);
    expect(rows.map((row) => [row.reason, row.commands])).toEqual([
      ['Empty', 1],
      ['Underutilized', 1],
    ]);
    expect(rows[0]?.perHour).toBeCloseTo(0.5, 10);
    expect(rows[0]?.usd).toBeCloseTo(0.5 * 2, 10);
    expect(rows[1]?.perHour).toBeCloseTo(0.25, 10);
    expect(rows[1]?.usd).toBeCloseTo(0.25 * 6, 10);
    expect(renderSummary(withNodes)).toContain(
      'Saved by consolidation: $2.50 (Empty: 1 command, $0.5000/hour, $1.00; Underutilized: 1 command, $0.2500/hour, $1.50)',
    );
    const html = renderHtmlReport(withNodes);
    expect(html).toContain('<b>$2.50</b>saved by consolidation');
    expect(html).toContain('<h3>Saved by consolidation</h3>');
    expect(html).toContain('<td>Underutilized</td>');
  });

  it('is empty when nothing was consolidated, and the summary then says nothing of savings', () => {
    const r = record([disrupt({ reason: 'Drifted', outcome: 'deleted', commandId: 'e', atMs: START })], []);
    expect(consolidationSavings(r)).toEqual([]);
    expect(renderSummary(r)).not.toContain('Saved by consolidation');
  });
});

// The daily curve's end-to-end check (the report's savings against the same day run again with
// consolidation off) runs in `npm run bench:sim`: two simulated days are too heavy for the unit
// tests on a busy two-core machine.
