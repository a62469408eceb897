import { describe, expect, it } from 'vitest';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { computeCost, formatDuration, nearestRank } from '../../../shared/simulator/stats.ts';
import { renderSummary, sparkline } from '../../../shared/simulator/summary.ts';
import { dayRecord, disruptedRecord, emptyRecord, START_MS, unschedulablePod } from './records.ts';

const lines = (text: string) => text.split('\n');
const HOUR = 3_600_000;

function withSamples(costs: readonly number[], stepMs: number, durationMs: number): SimulationRecord {
  return {
    ...emptyRecord(),
    scenario: { name: 'costs', region: 'us-east-1', startMs: START_MS, durationMs },
    samples: costs.map((costPerHour, i) => ({
      atMs: START_MS + i * stepMs,
      nodes: 1,
      nodesByCapacityType: { spot: 1 },
      costPerHour,
      pendingPods: 0,
      runningPods: 1,
    })),
  };
}

describe('nearestRank', () => {
  it.each([
    [[5], 50, 5],
    [[5], 95, 5],
    [[4, 1, 3, 2], 50, 2],
    [[4, 1, 3, 2], 95, 4],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50, 5],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95, 10],
    [Array.from({ length: 100 }, (_, i) => i + 1), 95, 95],
    [Array.from({ length: 20 }, (_, i) => (i + 1) * 10), 95, 190],
  ])('%j p%d is %d', (values, p, expected) => {
    expect(nearestRank(values, p)).toBe(expected);
  });

  it('is undefined for no values', () => {
    expect(nearestRank([], 50)).toBeUndefined();
  });
});

describe('computeCost', () => {
  it('holds each sample until the next one and the last until the end of the run', () => {
    // $1/h for 30 min, $3/h for 30 min, then $2/h for the last hour of a 2-hour run.
    const cost = computeCost(withSamples([1, 3, 2], HOUR / 2, 2 * HOUR));
    expect(cost?.totalUsd).toBeCloseTo(0.5 + 1.5 + 2, 10);
    expect(cost).toMatchObject({ minPerHour: 1, maxPerHour: 3, finalPerHour: 2, avgPerHour: 2 });
  });

  it('is undefined without samples', () => {
    expect(computeCost(emptyRecord())).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [850, '850ms'],
    [12_340, '12.3s'],
    [125_000, '2m05s'],
    [3_720_000, '1h02m'],
    [6 * HOUR, '6h00m'],
    [51 * HOUR, '2d03h'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('sparkline', () => {
  it('scales the highest value in each bucket from the lowest to the highest bar', () => {
    const points = [0, 1, 2, 3, 4, 5, 6, 7].map((v, i) => ({ atMs: i * 1000, value: v }));
    expect(sparkline(points, 8)).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline(points, 4)).toBe('▂▄▆█');
  });

  it('is flat at the bottom when everything is zero, and empty without points', () => {
    expect(
      sparkline(
        [0, 0, 0].map((v, i) => ({ atMs: i, value: v })),
        10,
      ),
    ).toBe('▁▁▁');
    expect(sparkline([], 10)).toBe('');
  });
});

describe('renderSummary', () => {
  const text = renderSummary(dayRecord());

  it('names the scenario and its span', () => {
    expect(lines(text).slice(0, 3)).toEqual([
      'Flotilla simulation "web-day"',
      '  A web tier through a working day, with spot interruptions',
      '  region us-west-2, 2025-03-03T00:00:00Z to 2025-03-03T06:00:00Z (6h00m of virtual time), 361 samples, 32 decisions logged',
    ]);
  });

  it('tables the launches by instance type and capacity type, most launched first', () => {
    const start = lines(text).findIndex((l) => l.startsWith('Nodes launched:'));
    expect(lines(text).slice(start, start + 8)).toEqual([
      'Nodes launched: 16 (on-demand 4, spot 12); at most 12 running at once',
      '  instance type  on-demand  spot  total      $/hour each',
      '  c7g.xlarge             1     3      4  $0.0512-$0.1450',
      '  m7i.large              1     3      4  $0.0421-$0.1008',
      '  r7g.large              1     3      4  $0.0398-$0.1071',
      '  m6a.xlarge             0     3      3          $0.0693',
      '  g5.xlarge              1     0      1            $1.01',
      '  total                  4    12     16',
    ]);
  });

  it('gives $/hour over time and the total cost', () => {
    expect(text).toContain('Cost ($/hour): min $0.1205  avg $0.6799  max $1.71  final $0.2004\n');
    // Times of day in UTC (the run starts at 2025-03-03T00:00:00Z).
    expect(text).toContain('  00:00 $0.1205  01:30 $1.50  03:00 $0.7975  04:30 $0.4966  06:00 $0.2004\n');
    expect(text).toMatch(/^ {2}00:00 [▁▂▃▄▅▆▇█]{48} 06:00 {2}\(full height \$1\.71\/hour\)$/m);
    expect(text).toContain('Total cost: $4.09 over 6h00m\n');
  });

  it('gives pod wait percentiles, interruptions and terminations', () => {
    expect(text).toContain('Pod wait (129 pods, creation to binding): p50 1m11s  p95 1m38s  max 1m40s\n');
    expect(text).toContain(
      [
        'Interruptions: 3 (2 handled, 1 not handled)',
        '  kind               count  handled  not handled',
        '  spot-interruption      2        2            0',
        '  rebalance              1        0            1',
      ].join('\n'),
    );
    expect(text).toContain('Nodes terminated: 13 (consolidation 10, interruption 2, empty 1)\n');
  });

  it('groups unschedulable pods by reason, largest group first', () => {
    expect(
      text.endsWith(
        [
          'Pods left unschedulable: 3',
          '  2 pods: nodePool default: no instance type has 512 cpu',
          '    batch/huge-0, batch/huge-1',
          '  1 pod: nodePool default: taint nvidia.com/gpu=true:NoSchedule not tolerated; nodePool gpu: limits exceeded (nvidia.com/gpu)',
          '    ml/trainer',
          '',
        ].join('\n'),
      ),
    ).toBe(true);
  });

  it('caps long lists of unschedulable pods and reasons', () => {
    const pods = [
      ...Array.from({ length: 12 }, (_, i) =>
        unschedulablePod('web', `big-${String(i).padStart(2, '0')}`, ['too big']),
      ),
      ...Array.from({ length: 10 }, (_, i) => unschedulablePod('misc', `odd-${i}`, [`reason ${i}`])),
    ];
    const out = lines(renderSummary(dayRecord({ unschedulable: pods })));
    const start = out.indexOf('Pods left unschedulable: 22');
    expect(out.slice(start + 1, start + 3)).toEqual([
      '  12 pods: too big',
      '    web/big-00, web/big-01, web/big-02, web/big-03, web/big-04, … and 7 more',
    ]);
    // 8 groups shown (the big one and 7 single ones), the other 3 summed up.
    expect(out.filter((l) => /^ {2}1 pod: reason \d$/.test(l))).toHaveLength(7);
    expect(out).toContain('  … and 3 more reasons (3 pods)');
  });

  it('counts the nodes disrupted by reason, with the first and the last, interruptions included', () => {
    const text = renderSummary(disruptedRecord());
    expect(text).toContain(
      [
        'Disruptions: 4 (Empty 1, Drifted 2, Interrupted 1)',
        '  reason       nodes  first   last',
        '  Empty            1  00:30  00:30',
        '  Drifted          2  00:05  00:25',
        '  Interrupted      1  00:40  00:40',
      ].join('\n'),
    );
  });

  it('is the same text for the same record', () => {
    expect(renderSummary(dayRecord())).toBe(text);
  });

  it('says so when there is nothing to report', () => {
    expect(lines(renderSummary(emptyRecord()))).toEqual([
      'Flotilla simulation "idle"',
      '  region us-east-1, 2025-03-03T00:00:00Z to 2025-03-03T01:00:00Z (1h00m of virtual time), 0 samples, 0 decisions logged',
      '  times below are UTC, as budget schedules are',
      '',
      'Nodes launched: none',
      '',
      'Cost ($/hour): no samples',
      '',
      'Idle capacity: no samples',
      '',
      'NodePools: none launched',
      '',
      'Pod wait: no pods got a node',
      '',
      'Interruptions: none',
      '',
      'Disruptions: none',
      '',
      'Disruptions blocked: none',
      '',
      'Evictions: none',
      '',
      'Nodes terminated: none',
      '',
      'Pods left unschedulable: none',
      '',
    ]);
  });
});

describe('figures that would mislead', () => {
  const launch = (instanceType: string, pricePerHour: number, priceAssumed?: boolean) => ({
    atMs: START_MS,
    nodeClaim: `claim-${instanceType}`,
    nodePool: 'default',
    instanceType,
    capacityType: 'spot' as const,
    zone: 'us-east-1a',
    pricePerHour,
    ...(priceAssumed === undefined ? {} : { priceAssumed }),
  });

  it('counts pods that never got a node in the wait percentiles, with their wait so far', () => {
    const record: SimulationRecord = {
      ...emptyRecord(),
      podWaitsMs: [40_000, 45_000, 47_000],
      podWaitsNotStartedMs: [600_000, 600_000, 600_000, 600_000, 600_000, 600_000, 600_000],
    };
    expect(renderSummary(record)).toContain(
      'Pod wait (10 pods, creation to binding; 7 not started by the end, counted with their wait so far): p50 10m00s  p95 10m00s  max 10m00s\n',
    );
    // Without pods left waiting the line is as before.
    expect(renderSummary({ ...record, podWaitsNotStartedMs: [] })).toContain(
      'Pod wait (3 pods, creation to binding): p50 45.0s  p95 47.0s  max 47.0s\n',
    );
  });

  it('marks a launch at an assumed price and says what the mark means', () => {
    const record: SimulationRecord = {
      ...emptyRecord(),
      launches: [launch('c6a.large', 0.0268), launch('m8i.large', 0.0371, true)],
    };
    const text = renderSummary(record);
    expect(text).toMatch(/^ {2}m8i\.large +0 +1 +1 +\$0\.0371 \*$/m);
    expect(text).toMatch(/^ {2}c6a\.large +0 +1 +1 +\$0\.0268$/m);
    expect(text).toContain(
      '  * assumed price: the bundled catalog has no Spot Advisor estimate for the type',
    );
    const known = renderSummary({ ...record, launches: [launch('c6a.large', 0.0268)] });
    expect(known).not.toContain('assumed price');
    expect(renderSummary({ ...record, scenario: { ...record.scenario, knownPricesOnly: true } })).toContain(
      '  region us-east-1 (known prices only), ',
    );
  });
});
