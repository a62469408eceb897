import { describe, expect, it } from 'vitest';
import { parseInterruptionEvent } from '../../../shared/messages/interruption-event.ts';
import {
  INTERRUPTION_KINDS,
  type InterruptionKindRow,
  interruptionRulePatterns,
} from '../../../shared/messages/interruption-kinds.ts';
import { interruptionPolicy } from '../../../shared/usecases/interruption/interruption.ts';
import { interruptionSamples } from '../../fixtures/events/interruption-samples.ts';

// The interruption kinds table and what derives from it: the codec's kinds, the rules' patterns and
// the use case's policy. A row missing any of them fails here (the synthesized rules are checked in
// test/infra/interruption-rules.test.ts, EventBridge's matching of them on moto in
// test/integration/aws/interruption-rules.test.ts).

const samples = INTERRUPTION_KINDS.flatMap((row) =>
  interruptionSamples(row).map((sample) => ({ ...sample, row })),
);

describe('INTERRUPTION_KINDS', () => {
  it('has one row per kind, none of them noop', () => {
    const kinds = INTERRUPTION_KINDS.map((r) => r.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(kinds).not.toContain('noop');
  });

  it('has a sample event of every row (a real-shaped fixture of its detail-type)', () => {
    for (const row of INTERRUPTION_KINDS) expect(interruptionSamples(row).length).toBeGreaterThan(0);
  });

  it.each(samples)('the codec parses a sample of $label back to its kind', ({ event, row }) => {
    const parsed = parseInterruptionEvent(JSON.stringify(event));
    expect(parsed).toMatchObject({ ok: true, message: { kind: row.kind } });
    if (parsed.ok) expect(parsed.message.instanceIds.length).toBeGreaterThan(0);
  });

  it.each(INTERRUPTION_KINDS)('the use case acts on $kind as its row says', (row) => {
    expect(interruptionPolicy(row.kind)).toEqual({
      action: row.action,
      disruptionReason: row.disruptionReason,
      event: row.event,
      backsOffSpotOffering: row.backsOffSpotOffering,
    });
  });

  it('lets the rebalance setting drain exactly the rows it governs', () => {
    for (const row of INTERRUPTION_KINDS) {
      expect(interruptionPolicy(row.kind, { rebalance: 'drain' }).action).toBe(
        row.actionSetting === 'rebalanceAction' ? 'cordonAndDrain' : row.action,
      );
    }
    expect(
      INTERRUPTION_KINDS.filter((r) => r.actionSetting === 'rebalanceAction').map((r) => r.kind),
    ).toEqual(['rebalanceRecommendation']);
  });
});

describe('interruptionRulePatterns', () => {
  it('puts every kind in exactly one rule, with its source, detail-type and filter values', () => {
    const rules = interruptionRulePatterns();
    for (const row of INTERRUPTION_KINDS) {
      const holding = rules.filter((r) => r.kinds.includes(row.kind));
      expect(holding).toHaveLength(1);
      const [rule] = holding;
      expect(rule).toMatchObject({ rule: row.rule, source: row.source, detailType: row.detailType });
      for (const [field, values] of Object.entries(row.detailFilter ?? {})) {
        expect(rule?.detail?.[field]).toEqual(expect.arrayContaining([...values]));
      }
    }
  });

  it('merges the filters of kinds that share a rule, in row order', () => {
    const stateChange = interruptionRulePatterns().find((r) => r.rule === 'InstanceStateChange');
    expect(stateChange).toMatchObject({
      kinds: ['instanceStopped', 'instanceTerminated'],
      detail: { state: ['stopping', 'stopped', 'shutting-down', 'terminated'] },
    });
  });

  it.each([
    ['a different detail-type', { detailType: 'EC2 Instance Rebalance Recommendation' }],
    ['a different filtered field', { detailFilter: { 'instance-action': ['stop'] } }],
    ['no filter beside a filtered kind', { detailFilter: undefined }],
  ])('refuses kinds of one rule that differ in %s', (_what, patch) => {
    const [stopped, terminated] = INTERRUPTION_KINDS.filter((r) => r.rule === 'InstanceStateChange');
    if (stopped === undefined || terminated === undefined) throw new Error('the state-change rows are gone');
    const { detailFilter: _drop, ...withoutFilter } = terminated;
    const odd = { ...withoutFilter, ...patch } as InterruptionKindRow<typeof terminated.kind>;
    expect(() => interruptionRulePatterns([stopped, odd])).toThrow(
      /interruption rule "InstanceStateChange": kinds instanceStopped and instanceTerminated differ/,
    );
  });
});
