import { describe, expect, it } from 'vitest';
import { compareShadow } from '../../../../shared/usecases/shadow/compare.ts';
import { at, change, LINES, launch, observe as observeLine } from '../../../fixtures/shadow-lines.ts';

// The comparison of a shadow stack's lines, on the small window of the fixture worked out by hand
// (below, in the order of the model in compare.ts).

describe('compareShadow, worked by hand', () => {
  const result = compareShadow(LINES);

  it('prices the live side from the observations: 1.0×½ + 1.5×½ + 1.5×½ + 1.7×½ = $2.85 over 2 h', () => {
    expect(result.from).toBe(at('10:00'));
    expect(result.to).toBe(at('12:00'));
    expect(result.hours).toBe(2);
    expect(result.live.dollars).toBeCloseTo(2.85, 6);
    expect(result.live.averagePricePerHour).toBeCloseTo(1.425, 6);
    expect(result.live.nodeClaimsCreated).toBe(2);
    expect(result.live.nodeClaimsDeleted).toBe(2);
    expect(result.live.podStartupSeconds).toEqual({ count: 3, p50: 20, p90: 30 });
  });

  it('prices each difference as the model says', () => {
    const byKind = result.differences.map((d) => [d.kind, d.dollars, d.from, d.until]);
    expect(byKind).toEqual([
      // k2 replaced $0.6 → $0.2 from 11:00; proposed last at 11:30, one pass (30 min) more: 1 h × $0.4.
      ['disruption', 0.4, at('11:00'), at('12:00')],
      // k1 deleted from 10:05 until the live autoscaler deleted it at 10:50: ¾ h × $0.25.
      ['disruption', 0.1875, at('10:05'), at('10:50')],
      // l1 at $0.5 against Flotilla's m6a.xlarge at $0.4 from 10:20 to 12:00: 5/3 h × $0.1.
      ['cheaper launch', 0.1667, at('10:20'), at('12:00')],
      // l2 at 11:25, no shadow launch within 10 minutes (k2's replacement was proposed at 11:00,
      // Flotilla's m5.large for default/z at 11:40): 35 min × $0.2.
      ['launch not made', 0.1167, at('11:25'), at('12:00')],
      // Flotilla's m5.large for default/z from 11:40, proposed until 11:45 plus a pass, cut at 12:00: ⅓ h × $0.3.
      ['extra launch', -0.1, at('11:40'), at('12:00')],
    ]);
    expect(result.flotilla.dollars).toBeCloseTo(2.85 - (0.4 + 0.1875 + 1 / 6 + (0.2 * 35) / 60 - 0.1), 3);
    expect(result.flotilla.launchesProposed).toBe(2);
    expect(result.flotilla.commandsProposed).toBe(2);
    expect(result.flotilla.decisionWaitSeconds).toEqual({ count: 2, p50: 4, p90: 6 });
  });

  it('lists the live deletion no proposal named, unpriced', () => {
    expect(result.unmatchedDeletions).toEqual([{ nodeClaim: 'k9', at: at('10:40') }]);
  });

  it('says a shadow line it cannot read is unreadable instead of guessing', async () => {
    const { shadowLines } = await import('../../../../shared/usecases/shadow/lines.ts');
    const broken = { shadow: true, time: at('10:10'), decision: 'observe', reason: 'disruption pass' };
    const lines = shadowLines([...LINES, broken, { shadow: true, time: 'yesterday', decision: 'plan' }]);
    expect(lines.unreadable).toBe(2);
    expect(lines.observations).toHaveLength(5);
  });

  it('pairs a live launch with the replacement of a command Flotilla proposed near it, at no difference', () => {
    const moved = LINES.map((l) =>
      l.time === at('11:30') && l.decision === 'observe'
        ? {
            ...l,
            nodeClaimsCreated: {
              count: 1,
              pricePerHour: 0.2,
              nodeClaims: [change('l2', '11:10', 0.2, 'm5.large')],
            },
          }
        : l,
    );
    const paired = compareShadow(moved);
    expect(paired.differences.map((d) => d.kind)).not.toContain('launch not made');
    expect(paired.differences.filter((d) => d.kind === 'disruption').map((d) => d.dollars)).toEqual([
      0.4, 0.1875,
    ]);
  });

  it('pairs launches of the same instance type first when several happen at once', () => {
    const both = compareShadow([
      observeLine('10:00', 0),
      launch('10:01', 'default/a', 'm5.large', 0.096),
      launch('10:01', 'default/b', 'c5.large', 0.085),
      observeLine('10:30', 0.181, {
        nodeClaimsCreated: {
          count: 2,
          pricePerHour: 0.181,
          nodeClaims: [change('x', '10:01', 0.085, 'c5.large'), change('y', '10:01', 0.096, 'm5.large')],
        },
      }),
    ]);
    expect(both.differences).toEqual([]);
  });

  it('leaves out live changes made before the window opened', () => {
    const early = compareShadow([
      observeLine('10:00', 0.2),
      observeLine('10:30', 0.2, {
        nodeClaimsCreated: { count: 1, pricePerHour: 0.2, nodeClaims: [change('old', '09:59', 0.2)] },
        nodeClaimsDeleted: { count: 1, pricePerHour: 0.1, nodeClaims: [change('gone', '09:59', 0.1)] },
      }),
    ]);
    expect(early.differences).toEqual([]);
    expect(early.unmatchedDeletions).toEqual([]);
    expect(early.live.nodeClaimsCreated).toBe(0);
  });

  it('takes a live launch beside a live deletion no proposal named for a replacement Flotilla would not make', () => {
    const replaced = compareShadow([
      observeLine('10:00', 0.1),
      observeLine('10:30', 0.06, {
        nodeClaimsCreated: { count: 1, pricePerHour: 0.06, nodeClaims: [change('new', '10:12', 0.06)] },
        nodeClaimsDeleted: { count: 1, pricePerHour: 0.1, nodeClaims: [change('old', '10:10', 0.1)] },
      }),
      observeLine('11:00', 0.06),
    ]);
    // Flotilla would have kept `old` at $0.1/h where the live side runs `new` at $0.06/h: from
    // 10:12 to 11:00, 0.8 h × −$0.04.
    expect(replaced.differences).toEqual([
      expect.objectContaining({ kind: 'replacement not made', dollars: -0.032, pricePerHour: -0.04 }),
    ]);
    expect(replaced.unmatchedDeletions).toEqual([]);
  });
});
