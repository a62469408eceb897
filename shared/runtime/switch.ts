import { z } from 'zod';

// On/off settings of the stack that reach a Lambda through its environment.

/**
 * An on/off setting written as `true` or `false`, `unset` when absent. Anything else is rejected
 * at cold start, never taken for either.
 */
const onOff = (unset: 'true' | 'false') =>
  z
    .enum(['true', 'false'], {
      error: (issue) => `must be true or false, not ${JSON.stringify(issue.input)}`,
    })
    .default(unset)
    .transform((value) => value === 'true');

/** An on/off setting, off when unset. */
export const switchSetting = onOff('false');

/** An on/off setting, on when unset. */
export const onByDefaultSetting = onOff('true');

/**
 * `FLOTILLA_MODE`: `live` (unset) or `shadow`, read as whether the Lambda is a shadow stack's.
 * Anything else is rejected at cold start.
 */
export const shadowModeSetting = z
  .enum(['live', 'shadow'], { error: 'must be "live" or "shadow"' })
  .default('live')
  .transform((mode) => mode === 'shadow');
