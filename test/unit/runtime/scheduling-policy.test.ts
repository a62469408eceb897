import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EnvVar } from '../../../shared/runtime/env.ts';
import {
  disruptionSolveOptionsOf,
  kubeSchedulerEnv,
  schedulingPolicyEnv,
  schedulingPolicyOf,
} from '../../../shared/runtime/scheduling-policy.ts';

const parse = (env: Record<string, string>) => z.object(schedulingPolicyEnv).safeParse(env);

describe('scheduling policies from the environment', () => {
  it("takes Karpenter's defaults when the stack sets none", () => {
    const parsed = parse({});
    expect(parsed.success && schedulingPolicyOf(parsed.data)).toEqual({
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Respect',
    });
  });

  it('reads the values the stack sets', () => {
    const parsed = parse({ [EnvVar.minValuesPolicy]: 'BestEffort', [EnvVar.preferencePolicy]: 'Ignore' });
    expect(parsed.success && schedulingPolicyOf(parsed.data)).toEqual({
      minValuesPolicy: 'BestEffort',
      preferencePolicy: 'Ignore',
    });
  });

  it('refuses a value Karpenter does not have, naming the variable', () => {
    const parsed = parse({ [EnvVar.minValuesPolicy]: 'strict', [EnvVar.preferencePolicy]: 'Respect' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual([EnvVar.minValuesPolicy]);
  });

  it("reads the cluster's dollar limit when the stack sets one, and refuses one that is not a number", () => {
    const parsed = parse({ [EnvVar.maxCostPerHour]: '42.5' });
    expect(parsed.success && schedulingPolicyOf(parsed.data)).toEqual({
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Respect',
      maxCostPerHour: 42.5,
    });
    for (const bad of ['', '-1', '$40', 'lots']) {
      const refused = parse({ [EnvVar.maxCostPerHour]: bad });
      expect(refused.success).toBe(false);
      expect(refused.error?.issues.map((i) => i.path.join('.'))).toEqual([EnvVar.maxCostPerHour]);
    }
  });
});

describe("the cluster's kube-scheduler strategy from the environment (disruption)", () => {
  const parseDisruption = (env: Record<string, string>) =>
    z.object({ ...schedulingPolicyEnv, ...kubeSchedulerEnv }).safeParse(env);

  it("is kube-scheduler's default, LeastAllocated, when the stack sets none", () => {
    const parsed = parseDisruption({});
    expect(parsed.success && disruptionSolveOptionsOf(parsed.data)).toEqual({
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Respect',
      kubeSchedulerScoring: 'LeastAllocated',
    });
  });

  it('reads MostAllocated, and refuses a strategy kube-scheduler does not have, naming the variable', () => {
    const parsed = parseDisruption({ [EnvVar.kubeSchedulerScoring]: 'MostAllocated' });
    expect(parsed.success && disruptionSolveOptionsOf(parsed.data).kubeSchedulerScoring).toBe(
      'MostAllocated',
    );
    const refused = parseDisruption({ [EnvVar.kubeSchedulerScoring]: 'RequestedToCapacityRatio' });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((i) => i.path.join('.'))).toEqual([EnvVar.kubeSchedulerScoring]);
  });
});
