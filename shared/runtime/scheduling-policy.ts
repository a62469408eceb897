import { z } from 'zod';
import { EnvVar } from './env.ts';

// Karpenter's two scheduling settings, as the stack sets them for the Lambdas that schedule pods
// (the provisioner, and disruption's simulation of where a candidate's pods would go): the same
// names and values as Karpenter's MIN_VALUES_POLICY and PREFERENCE_POLICY, with Karpenter's
// defaults.

/** `Strict` leaves a pod pending when minValues cannot be met; `BestEffort` launches and says so. */
export const MIN_VALUES_POLICIES = ['Strict', 'BestEffort'] as const;
export type MinValuesPolicy = (typeof MIN_VALUES_POLICIES)[number];
/** `Respect` honours preferred affinities and spreads, relaxing them only to schedule; `Ignore` drops them. */
export const PREFERENCE_POLICIES = ['Respect', 'Ignore'] as const;
export type PreferencePolicy = (typeof PREFERENCE_POLICIES)[number];

export const DEFAULT_MIN_VALUES_POLICY: MinValuesPolicy = 'Strict';
export const DEFAULT_PREFERENCE_POLICY: PreferencePolicy = 'Respect';

export interface SchedulingPolicy {
  readonly minValuesPolicy: MinValuesPolicy;
  readonly preferencePolicy: PreferencePolicy;
}

/** The environment variables a scheduling Lambda reads, checked at cold start. */
export const schedulingPolicyEnv = {
  [EnvVar.minValuesPolicy]: z.enum(MIN_VALUES_POLICIES).default(DEFAULT_MIN_VALUES_POLICY),
  [EnvVar.preferencePolicy]: z.enum(PREFERENCE_POLICIES).default(DEFAULT_PREFERENCE_POLICY),
};

/** The policies from a parsed environment. */
export function schedulingPolicyOf(config: {
  readonly [EnvVar.minValuesPolicy]: MinValuesPolicy;
  readonly [EnvVar.preferencePolicy]: PreferencePolicy;
}): SchedulingPolicy {
  return {
    minValuesPolicy: config[EnvVar.minValuesPolicy],
    preferencePolicy: config[EnvVar.preferencePolicy],
  };
}
