import { z } from 'zod';

// On/off settings of the stack that reach a Lambda through its environment.

/**
 * An on/off setting written as `true` or `false` (unset: off). Anything else is rejected at cold
 * start, never taken for off.
 */
export const switchSetting = z
  .enum(['true', 'false'], { error: (issue) => `must be true or false, not ${JSON.stringify(issue.input)}` })
  .default('false')
  .transform((value) => value === 'true');

/** An on/off setting as `switchSetting`, but on when unset. */
export const onByDefaultSetting = z
  .enum(['true', 'false'], { error: (issue) => `must be true or false, not ${JSON.stringify(issue.input)}` })
  .default('true')
  .transform((value) => value === 'true');

/**
 * `FLOTILLA_MODE`: `live` (unset) or `shadow`, read as whether the Lambda is a shadow stack's.
 * Anything else is rejected at cold start.
 */
export const shadowModeSetting = z
  .enum(['live', 'shadow'], { error: 'must be "live" or "shadow"' })
  .default('live')
  .transform((mode) => mode === 'shadow');
