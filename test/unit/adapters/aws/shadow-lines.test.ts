import { describe, expect, it } from 'vitest';
import { shadowLinePattern } from '../../../../shared/adapters/aws/shadow-lines.ts';
import { SHADOW_DECISION_KINDS } from '../../../../shared/usecases/shadow/lines.ts';

// The filter pattern that leaves every line but the compared shadow lines in CloudWatch (moto
// matches every event to a JSON pattern, so the harness cannot check what it selects: its syntax
// is checked here, against CloudWatch's JSON pattern grammar of `&&`, `||`, parentheses, `IS TRUE`).

describe('the shadow line filter pattern', () => {
  it('selects shadow lines of the compared decision kinds', () => {
    expect(shadowLinePattern(SHADOW_DECISION_KINDS)).toBe(
      '{ $.shadow IS TRUE && ($.decision = "observe" || $.decision = "launch" || $.decision = "disrupt" || $.decision = "plan") }',
    );
    expect(shadowLinePattern([])).toBe('{ $.shadow IS TRUE }');
  });

  it('refuses a kind that would change the pattern instead of naming a value', () => {
    expect(() => shadowLinePattern(['observe" || $.x = "y'])).toThrow(/cannot go in a filter pattern/);
  });
});
