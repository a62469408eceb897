import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { onByDefaultSetting, switchSetting } from '../../../shared/runtime/switch.ts';

// An on/off setting as the disruption Lambda reads it from its environment at cold start.

const env = z.object({ [EnvVar.spotToSpotConsolidation]: switchSetting });

describe('an on/off setting from the environment', () => {
  it.each([
    ['true', true],
    ['false', false],
  ])('reads %s', (value, expected) => {
    expect(env.parse({ [EnvVar.spotToSpotConsolidation]: value })).toEqual({
      [EnvVar.spotToSpotConsolidation]: expected,
    });
  });

  it('is off when unset', () => {
    expect(env.parse({})[EnvVar.spotToSpotConsolidation]).toBe(false);
  });

  it.each(['yes', 'TRUE', '1', ''])(
    'rejects %j, naming the value, rather than taking it for off',
    (value) => {
      const parsed = env.safeParse({ [EnvVar.spotToSpotConsolidation]: value });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual([EnvVar.spotToSpotConsolidation]);
      expect(parsed.error?.issues[0]?.message).toBe(`must be true or false, not ${JSON.stringify(value)}`);
    },
  );
});

describe('an on/off setting that is on unless turned off', () => {
  const guard = z.object({ [EnvVar.runawayGuard]: onByDefaultSetting });

  it('is on when unset, off only when set to false', () => {
    expect(guard.parse({})[EnvVar.runawayGuard]).toBe(true);
    expect(guard.parse({ [EnvVar.runawayGuard]: 'true' })[EnvVar.runawayGuard]).toBe(true);
    expect(guard.parse({ [EnvVar.runawayGuard]: 'false' })[EnvVar.runawayGuard]).toBe(false);
  });

  it.each(['off', '0', ''])('rejects %j rather than guessing', (value) => {
    const parsed = guard.safeParse({ [EnvVar.runawayGuard]: value });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe(`must be true or false, not ${JSON.stringify(value)}`);
  });
});
