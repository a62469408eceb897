import { z } from 'zod';
import { DEFAULT_FIT_SCORING, FIT_SCORINGS, type FitScoring } from '../core/resource-fit-score.ts';
import { EnvVar } from './env.ts';

// Karpenter's two scheduling settings, as the stack sets them for the Lambdas that schedule pods
// (the provisioner, and disruption's simulation of where a candidate's pods would go): the same
// names and values as Karpenter's MIN_VALUES_POLICY and PREFERENCE_POLICY, with Karpenter's
// defaults; and Flotilla's cluster-wide dollar limit, which bounds what both may launch.

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
  /** Flotilla's own: the cluster's dollar limit, USD per hour (the stack's `maxCostPerHour`). */
  readonly maxCostPerHour?: number;
}

/** The environment variables a scheduling Lambda reads, checked at cold start. */
export const schedulingPolicyEnv = {
  [EnvVar.minValuesPolicy]: z.enum(MIN_VALUES_POLICIES).default(DEFAULT_MIN_VALUES_POLICY),
  [EnvVar.preferencePolicy]: z.enum(PREFERENCE_POLICIES).default(DEFAULT_PREFERENCE_POLICY),
  [EnvVar.maxCostPerHour]: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of US dollars per hour, such as 50 or 12.5')
    .transform(Number)
    .optional(),
};

/** The policies from a parsed environment. */
export function schedulingPolicyOf(config: {
  readonly [EnvVar.minValuesPolicy]: MinValuesPolicy;
  readonly [EnvVar.preferencePolicy]: PreferencePolicy;
  readonly [EnvVar.maxCostPerHour]?: number | undefined;
}): SchedulingPolicy {
  const maxCostPerHour = config[EnvVar.maxCostPerHour];
  return {
    minValuesPolicy: config[EnvVar.minValuesPolicy],
    preferencePolicy: config[EnvVar.preferencePolicy],
    ...(maxCostPerHour === undefined ? {} : { maxCostPerHour }),
  };
}

/**
 * The disruption Lambda's one word on the cluster's kube-scheduler, its NodeResourcesFit strategy
 * (the stack's `kubeSchedulerScoring`), which the replay of a command's moved pods expects.
 */
export const kubeSchedulerEnv = {
  [EnvVar.kubeSchedulerScoring]: z.enum(FIT_SCORINGS).default(DEFAULT_FIT_SCORING),
};

/** Disruption's solve options: the policies, and kube-scheduler's strategy for its replay. */
export function disruptionSolveOptionsOf(
  config: Parameters<typeof schedulingPolicyOf>[0] & { readonly [EnvVar.kubeSchedulerScoring]: FitScoring },
): SchedulingPolicy & { readonly kubeSchedulerScoring: FitScoring } {
  return { ...schedulingPolicyOf(config), kubeSchedulerScoring: config[EnvVar.kubeSchedulerScoring] };
}
