import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  gateSwitch,
  providerEnv,
  providerSettingsOf,
  provisionerSettingsEnv,
} from '../../../lambdas/common/wiring.ts';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { FEATURE_GATE_DEFAULTS, FEATURE_GATE_NAMES } from '../../../shared/runtime/feature-gates.ts';

// Karpenter's gates and settings as a Lambda reads them from its environment at cold start: unset
// is Karpenter's default, a value out of range is a configuration error rather than a default.

describe('a feature gate from the environment', () => {
  it.each(FEATURE_GATE_NAMES)('%s unset is Karpenter`s default, and reads true and false', (gate) => {
    const parse = (value: string | undefined) => gateSwitch(gate).parse(value);
    expect(parse(undefined)).toBe(FEATURE_GATE_DEFAULTS[gate]);
    expect(parse('true')).toBe(true);
    expect(parse('false')).toBe(false);
    expect(gateSwitch(gate).safeParse('on').success).toBe(false);
  });
});

describe('the provider and provisioner settings from the environment', () => {
  const provider = z.object(providerEnv);
  const provisioner = z.object(provisionerSettingsEnv);

  it('are Karpenter`s defaults when unset', () => {
    expect(providerSettingsOf(provider.parse({}))).toEqual({
      reservedCapacity: true,
      vmMemoryOverheadPercent: 0.075,
      reservedENIs: 0,
    });
    expect(provisioner.parse({})).toEqual({
      [EnvVar.batchIdleMs]: 1_000,
      [EnvVar.batchMaxMs]: 10_000,
      [EnvVar.amiRefreshSeconds]: 60,
    });
  });

  it('read what the stack sets', () => {
    const env = {
      [EnvVar.reservedCapacity]: 'false',
      [EnvVar.vmMemoryOverheadPercent]: '0.1',
      [EnvVar.reservedENIs]: '2',
      [EnvVar.batchIdleMs]: '2500',
      [EnvVar.batchMaxMs]: '20000',
      [EnvVar.amiRefreshSeconds]: '300',
    };
    expect(providerSettingsOf(provider.parse(env))).toEqual({
      reservedCapacity: false,
      vmMemoryOverheadPercent: 0.1,
      reservedENIs: 2,
    });
    expect(provisioner.parse(env)).toEqual({
      [EnvVar.batchIdleMs]: 2_500,
      [EnvVar.batchMaxMs]: 20_000,
      [EnvVar.amiRefreshSeconds]: 300,
    });
  });

  it.each([
    [EnvVar.vmMemoryOverheadPercent, '1'],
    [EnvVar.vmMemoryOverheadPercent, 'much'],
    [EnvVar.reservedENIs, '-1'],
    [EnvVar.reservedENIs, '1.5'],
    [EnvVar.reservedCapacity, 'yes'],
  ])('refuse %s=%j', (name, value) => {
    const parsed = provider.safeParse({ [name]: value });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual([name]);
  });

  it.each([
    [EnvVar.batchIdleMs, '0'],
    [EnvVar.batchMaxMs, '10s'],
    [EnvVar.amiRefreshSeconds, '30'],
  ])('refuse %s=%j', (name, value) => {
    const parsed = provisioner.safeParse({ [name]: value });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual([name]);
  });
});
