import { describe, expect, it } from 'vitest';
import type { ShadowLineQuery, ShadowLineSource } from '../../../../shared/ports/log-lines.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { compareShadow } from '../../../../shared/usecases/shadow/compare.ts';
import {
  compareDecisionOf,
  compareShadowDay,
  utcDay,
  utcDayBefore,
} from '../../../../shared/usecases/shadow/day.ts';
import { SHADOW_DECISION_KINDS } from '../../../../shared/usecases/shadow/lines.ts';
import { recordingMetrics } from '../../../fixtures/metrics.ts';
import { LINES } from '../../../fixtures/shadow-lines.ts';

// A shadow day's figures from the fixture's two hours, worked by hand from the comparison's own
// hand-worked figures (compare.test.ts): live $2.85 over 2 h; the differences +$0.4 and +$0.1875
// (disruption), +$0.1667 (cheaper launch), +$0.1167 (launch not made), −$0.1 (extra launch).

const DAY = {
  day: '2026-12-03',
  fromMs: Date.parse('2026-12-03T00:00:00Z'),
  toMs: Date.parse('2026-12-04T00:00:00Z'),
};

describe('the UTC day a run compares', () => {
  it('is the day before the one the schedule fires in', () => {
    expect(utcDayBefore(Date.parse('2026-12-04T00:20:00Z'))).toEqual(DAY);
    // Just before midnight it is still the day before that.
    expect(utcDayBefore(Date.parse('2026-12-03T23:59:59.999Z')).day).toBe('2026-12-02');
    expect(utcDayBefore(Date.parse('2027-01-01T00:20:00Z')).day).toBe('2026-12-31');
  });

  it('is the day asked for, when it names one', () => {
    expect(utcDay('2026-12-03')).toEqual(DAY);
    for (const bad of ['2026-02-30', '2026-12-3', 'yesterday', '2026-12-03T00:00:00Z']) {
      expect(utcDay(bad), bad).toBeUndefined();
    }
  });
});

describe("a shadow day's decision, worked by hand", () => {
  const decision = compareDecisionOf(DAY, compareShadow(LINES), { read: LINES.length, unreadable: 0 });

  it('gives both sides in USD per hour over the window the lines cover', () => {
    expect(decision).toMatchObject({ kind: 'compare', reason: 'compared', day: '2026-12-03', hours: 2 });
    expect(decision.live?.pricePerHour).toBeCloseTo(2.85 / 2, 6);
    // 2.85 − (0.4 + 0.1875 + ⅙ + 7/60 − 0.1) = $2.07917 over 2 h (the comparison rounds to 4 places).
    expect(decision.flotilla?.pricePerHour).toBeCloseTo(2.0791667 / 2, 4);
  });

  it('gives what each kind of difference saves per hour, every kind, summing to the difference', () => {
    const perHour = decision.savingsPerHour ?? {};
    expect(perHour['disruption']).toBeCloseTo((0.4 + 0.1875) / 2, 6);
    expect(perHour['cheaper launch']).toBeCloseTo(0.1667 / 2, 6);
    expect(perHour['launch not made']).toBeCloseTo(0.1167 / 2, 6);
    expect(perHour['extra launch']).toBeCloseTo(-0.1 / 2, 6);
    expect(perHour['replacement not made']).toBe(0);
    const sum = Object.values(perHour).reduce((a, b) => a + b, 0);
    // Each side's figure is rounded to 4 places, and so is each difference's dollars.
    expect(sum).toBeCloseTo((decision.live?.pricePerHour ?? 0) - (decision.flotilla?.pricePerHour ?? 0), 3);
  });

  it('gives pod wait on both sides, and the largest differences', () => {
    expect(decision.live).toMatchObject({ podWaitP50Seconds: 20, podWaitP90Seconds: 30 });
    expect(decision.flotilla).toMatchObject({ podWaitP50Seconds: 4, podWaitP90Seconds: 6 });
    expect(decision.differenceCount).toBe(5);
    expect(decision.differences?.map((d) => d.kind)).toEqual([
      'disruption',
      'disruption',
      'cheaper launch',
      'launch not made',
      'extra launch',
    ]);
  });

  it('says when the day held no observation, with nothing but the hours covered', () => {
    const none = compareDecisionOf(DAY, undefined, { read: 3, unreadable: 1 });
    expect(none).toEqual({
      kind: 'compare',
      reason: 'no observation',
      day: '2026-12-03',
      hours: 0,
      lines: 3,
      unreadableLines: 1,
    });
  });
});

describe('compareShadowDay', () => {
  it("reads the day's shadow lines of the kinds compared, and writes one decision dated at the day's start", async () => {
    const asked: ShadowLineQuery[] = [];
    const source: ShadowLineSource = {
      read: async (query) => {
        asked.push(query);
        // As CloudWatch returns them: each line's text, a prefix or not; one line not JSON.
        return [...LINES.map((l) => JSON.stringify(l)), 'START RequestId: 1 Version: $LATEST'];
      },
    };
    const lines: string[] = [];
    const metrics = recordingMetrics({
      cluster: 'prod/shadow',
      clock: { now: () => new Date('2026-12-04T00:20:00Z') },
    });
    const decision = await compareShadowDay(
      {
        lines: source,
        output: { logger: makeLogger({}, { sink: (l) => lines.push(l) }), metrics },
        logger: makeLogger(),
      },
      DAY,
    );
    // The day, and the day before it for what its lines pair.
    expect(asked).toEqual([
      { fromMs: DAY.fromMs - 86_400_000, toMs: DAY.toMs, decisions: SHADOW_DECISION_KINDS },
    ]);
    expect(decision.unreadableLines).toBe(1);
    expect(decision.lines).toBe(LINES.length);
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(['shadow day compared']);
    // Dated in the day's last minute: one value a day, minutes old when written.
    expect(new Set(metrics.points.map((p) => p.timeMs))).toEqual(new Set([DAY.toMs - 60_000]));
    const cost = metrics.points.filter((p) => p.name === 'shadow_cost_per_hour');
    expect(cost.map((p) => [p.dimensions.side, p.values[0]])).toEqual([
      ['live', decision.live?.pricePerHour],
      ['flotilla', decision.flotilla?.pricePerHour],
    ]);
  });
});

describe('a day that a difference of the day before runs into', () => {
  // The evening before, the live autoscaler launches l1 (m5.xlarge, $0.192/h) at 22:06 where the
  // shadow would have launched an m5.large ($0.096/h) at 22:05; l1 runs on through the day.
  // Observations: 22:00 and 22:30 the day before, then 06:00, 12:00, 18:00 and 23:30 of the day,
  // the live cost $1/h throughout.
  const t = (day: string, hhmm: string) => `${day}T${hhmm}:00.000Z`;
  const observation = (time: string, created?: object) => ({
    shadow: true,
    time,
    decision: 'observe',
    reason: 'disruption pass',
    nodePools: { default: { nodes: 3, pricePerHour: 1 } },
    podStartupSeconds: [time.startsWith('2026-12-02') ? 100 : 10],
    ...(created === undefined ? {} : { nodeClaimsCreated: created }),
  });
  const lines = [
    observation(t('2026-12-02', '22:00')),
    {
      shadow: true,
      time: t('2026-12-02', '22:05'),
      decision: 'launch',
      reason: 'provisioning',
      outcome: 'launched',
      nodePool: 'default',
      podCount: 1,
      pods: ['apps/web-1'],
      instanceType: 'm5.large',
      pricePerHour: 0.096,
    },
    observation(t('2026-12-02', '22:30'), {
      count: 1,
      pricePerHour: 0.192,
      nodeClaims: [
        {
          nodeClaim: 'l1',
          nodePool: 'default',
          at: t('2026-12-02', '22:06'),
          instanceType: 'm5.xlarge',
          pricePerHour: 0.192,
        },
      ],
    }),
    ...['06:00', '12:00', '18:00', '23:30'].map((hhmm) => observation(t('2026-12-03', hhmm))),
  ];

  it("prices the day's part of it, from the lines of both days", async () => {
    const source: ShadowLineSource = { read: async () => lines.map((l) => JSON.stringify(l)) };
    const metrics = recordingMetrics({ cluster: 'prod/shadow' });
    const decision = await compareShadowDay(
      {
        lines: source,
        output: { logger: makeLogger({}, { sink: () => {} }), metrics },
        logger: makeLogger(),
      },
      DAY,
    );
    // From midnight to the day's last line: 23.5 h at $1/h live.
    expect(decision).toMatchObject({ reason: 'compared', from: t('2026-12-03', '00:00'), hours: 23.5 });
    expect(decision.live?.dollars).toBeCloseTo(23.5, 6);
    // l1 against the m5.large: $0.096/h for the 23.5 h of it in the day.
    expect(decision.differences).toEqual([
      expect.objectContaining({ kind: 'cheaper launch', dollars: 2.256, from: t('2026-12-03', '00:00') }),
    ]);
    expect(decision.flotilla?.dollars).toBeCloseTo(23.5 - 2.256, 6);
    // Pod startups of the day only.
    expect(decision.live).toMatchObject({ podWaitP50Seconds: 10, podWaitP90Seconds: 10 });
  });

  it('says no observation for a day whose lines are all of the day before', async () => {
    const evening = lines.filter((l) => l.time.startsWith('2026-12-02'));
    const source: ShadowLineSource = { read: async () => evening.map((l) => JSON.stringify(l)) };
    const decision = await compareShadowDay(
      {
        lines: source,
        output: { logger: makeLogger({}, { sink: () => {} }), metrics: recordingMetrics() },
        logger: makeLogger(),
      },
      DAY,
    );
    expect(decision).toMatchObject({ reason: 'no observation', hours: 0 });
  });
});
