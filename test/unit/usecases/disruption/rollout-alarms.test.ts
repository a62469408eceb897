import { describe, expect, it } from 'vitest';
import {
  parseRolloutAlarms,
  ROLLOUT_ALARMS_ANNOTATION,
  rolloutCondition,
  rolloutVerdict,
} from '../../../../shared/usecases/disruption/rollout-alarms.ts';
import { nodePool } from '../provisioning/builders.ts';

// The NodePool's rollout alarms, read from its annotation, and what their states make of its drift
// and expiration replacements.

const annotated = (value: string) => ({ [ROLLOUT_ALARMS_ANNOTATION]: value });

describe('parseRolloutAlarms', () => {
  it.each([
    ['no annotation', undefined, { kind: 'none' }],
    ['an empty one', annotated('  '), { kind: 'none' }],
    ['one name', annotated('web-5xx'), { kind: 'alarms', names: ['web-5xx'] }],
    [
      'names separated by commas',
      annotated(' web-5xx, p99 ,web-5xx'),
      { kind: 'alarms', names: ['web-5xx', 'p99'] },
    ],
    ['a JSON array (names with commas)', annotated('["a,b", "c"]'), { kind: 'alarms', names: ['a,b', 'c'] }],
  ] as const)('%s', (_, annotations, expected) => {
    expect(parseRolloutAlarms(annotations)).toEqual(expected);
  });

  it.each([
    ['an empty name', 'a,,b', 'names an empty alarm'],
    ['a broken JSON array', '["a",', 'is not a JSON array'],
    ['a JSON array of numbers', '[1, 2]', 'not a JSON array of alarm names'],
    ['a name past 255 characters', 'x'.repeat(256), 'longer than 255'],
    ['more than 100 alarms', Array.from({ length: 101 }, (_, i) => `a${i}`).join(','), 'more than 100'],
  ])('refuses %s, saying why', (_, value, why) => {
    const parsed = parseRolloutAlarms(annotated(value));
    expect(parsed.kind).toBe('invalid');
    expect(parsed.kind === 'invalid' && parsed.problem).toContain(why);
    expect(parsed.kind === 'invalid' && parsed.problem).toContain(ROLLOUT_ALARMS_ANNOTATION);
  });
});

describe('rolloutVerdict', () => {
  const alarms = { kind: 'alarms', names: ['web-5xx', 'p99'] } as const;

  it('holds while an alarm is in ALARM, naming it', () => {
    const v = rolloutVerdict(
      alarms,
      new Map([
        ['web-5xx', 'ALARM'],
        ['p99', 'OK'],
      ]),
    );
    expect(v).toMatchObject({ hold: true, reason: 'AlarmFiring', alarms: ['web-5xx'] });
  });

  it('goes on when none is in ALARM (INSUFFICIENT_DATA is not ALARM)', () => {
    const v = rolloutVerdict(
      alarms,
      new Map([
        ['web-5xx', 'OK'],
        ['p99', 'INSUFFICIENT_DATA'],
      ]),
    );
    expect(v).toMatchObject({ hold: false, reason: 'AlarmsClear' });
  });

  it('holds when an alarm does not exist, when CloudWatch cannot be read, and when the annotation does not parse', () => {
    expect(rolloutVerdict(alarms, new Map([['web-5xx', 'OK']]))).toMatchObject({
      hold: true,
      reason: 'AlarmUnreadable',
      alarms: ['p99'],
    });
    const denied = rolloutVerdict(alarms, undefined, 'AccessDenied');
    expect(denied).toMatchObject({ hold: true, reason: 'AlarmUnreadable' });
    expect(denied.message).toContain('AccessDenied');
    expect(rolloutVerdict({ kind: 'invalid', problem: 'bad' }, undefined)).toMatchObject({
      hold: true,
      reason: 'AlarmsAnnotationInvalid',
    });
  });
});

describe('rolloutCondition', () => {
  const pool = nodePool('web');
  const firing = rolloutVerdict({ kind: 'alarms', names: ['a'] }, new Map([['a', 'ALARM']]));
  const clear = rolloutVerdict({ kind: 'alarms', names: ['a'] }, new Map([['a', 'OK']]));
  const withCondition = (status: 'True' | 'False', reason: string, message: string) =>
    nodePool(
      'web',
      {},
      { conditions: [{ type: 'RolloutPaused', status, reason, message, lastTransitionTime: '' }] },
    );

  it('writes nothing for a pool that never held, and True when a hold starts', () => {
    expect(rolloutCondition(pool, undefined)).toBeUndefined();
    expect(rolloutCondition(pool, clear)).toBeUndefined();
    expect(rolloutCondition(pool, firing)).toMatchObject({
      type: 'RolloutPaused',
      status: 'True',
      reason: 'AlarmFiring',
    });
  });

  it('writes False once the alarms clear or the annotation goes, and nothing while it already says so', () => {
    const held = withCondition('True', 'AlarmFiring', firing.message);
    expect(rolloutCondition(held, firing)).toBeUndefined();
    expect(rolloutCondition(held, clear)).toMatchObject({ status: 'False', reason: 'AlarmsClear' });
    expect(rolloutCondition(held, undefined)).toMatchObject({ status: 'False', reason: 'AlarmsRemoved' });
    expect(rolloutCondition(withCondition('False', 'AlarmsClear', clear.message), clear)).toBeUndefined();
  });
});
