import { describe, expect, it } from 'vitest';
import {
  type ClusterSize,
  DEFAULT_CLUSTER_SIZE,
  expectedPeakMiB,
  lambdaMemoryMb,
  lineThrough,
  type MemoryModel,
  NODE_WEIGHT_PODS,
  SHIM_MEMORY_MODEL,
  shimMemoryFor,
} from '../../infra/cluster-size.ts';
import { FlotillaConfigError } from '../../infra/flotilla-cluster.ts';
import { FLOTILLA_FUNCTIONS } from '../../infra/functions.ts';
import { functionMemoryMb } from '../../infra/lambda-functions.ts';
import { makeStack } from './stacks.ts';

// The cluster's size and the memory it takes: each Lambda that reads the cluster, and the shim,
// get their measured peak at that size with 30% headroom.

const model: MemoryModel = { baseMiB: 200, perThousandPodsMiB: 10, perThousandNodesMiB: 20 };
const LARGE: ClusterSize = { nodes: 2_000, pods: 30_000 };

describe('memory for a cluster size', () => {
  it('is the expected peak over 70%, in 64 MB steps, within Lambda bounds and never below the floor', () => {
    // 200 + 30·10 + 2·20 = 540 MiB expected; 540 / 0.7 = 771.4 → 832.
    expect(expectedPeakMiB(model, LARGE)).toBe(540);
    expect(lambdaMemoryMb(model, LARGE, 512)).toBe(832);
    expect(lambdaMemoryMb(model, { nodes: 1, pods: 1 }, 512)).toBe(512);
    // 200 + 300·10 + 15·20 = 3,500 / 0.7 = 5,000 → 5,056; ten times that is capped at Lambda's most.
    expect(lambdaMemoryMb(model, { nodes: 15_000, pods: 300_000 }, 512)).toBe(5_056);
    expect(lambdaMemoryMb({ ...model, perThousandPodsMiB: 100 }, { nodes: 15_000, pods: 300_000 }, 512)).toBe(
      10_240,
    );
  });

  it('draws the line through two measured peaks, sharing growth between pods and nodes, and stays flat when a peak did not grow', () => {
    const small = { nodes: 500, pods: 5_000, peakMiB: 250 };
    const large = { nodes: 2_000, pods: 30_000, peakMiB: 570 };
    const line = lineThrough(small, large);
    expect(expectedPeakMiB(line, small)).toBeCloseTo(250, 0);
    expect(expectedPeakMiB(line, large)).toBeCloseTo(570, 0);
    // A node weighs NODE_WEIGHT_PODS pods.
    expect(line.perThousandNodesMiB).toBeCloseTo(line.perThousandPodsMiB * NODE_WEIGHT_PODS, 5);
    const flat = lineThrough({ ...small, peakMiB: 240 }, { ...large, peakMiB: 220 });
    expect(flat).toEqual({ baseMiB: 240, perThousandPodsMiB: 0, perThousandNodesMiB: 0 });
  });

  it('gives the shim its expected peak as request and that over 70% as limit', () => {
    const memory = shimMemoryFor(SHIM_MEMORY_MODEL, LARGE);
    const peak = expectedPeakMiB(SHIM_MEMORY_MODEL, LARGE);
    expect(memory.requestMiB).toBeGreaterThanOrEqual(peak);
    expect(memory.limitMiB).toBeGreaterThanOrEqual(peak / 0.7);
    expect(memory.limitMiB).toBeLessThan(peak / 0.7 + 32);
  });

  it('sizes every Lambda with a memory model for the stack’s clusterSize, and grows them with it', () => {
    const small = makeStack();
    const large = makeStack({ clusterSize: LARGE });
    const memoryOf = (built: ReturnType<typeof makeStack>, name: string) =>
      (
        built.template.findResources('AWS::Lambda::Function') as Record<
          string,
          { Properties: Record<string, unknown> }
        >
      )[built.stack.getLogicalId(built.cluster.functions[name]?.node.defaultChild as never)]?.Properties[
        'MemorySize'
      ];
    const modelled = FLOTILLA_FUNCTIONS.filter((f) => f.memoryModel !== undefined);
    // Every Lambda that reads the cluster has a model.
    expect(modelled.map((f) => f.name).sort()).toEqual(
      FLOTILLA_FUNCTIONS.filter((f) => f.permissions.includes('kubernetes'))
        .map((f) => f.name)
        .sort(),
    );
    for (const row of modelled) {
      expect(memoryOf(small, row.name)).toBe(functionMemoryMb(row, DEFAULT_CLUSTER_SIZE));
      expect(memoryOf(large, row.name)).toBe(functionMemoryMb(row, LARGE));
      expect(Number(memoryOf(large, row.name))).toBeGreaterThanOrEqual(Number(memoryOf(small, row.name)));
    }
  });

  it.each([
    [{ nodes: 0, pods: 10 }, /clusterSize.nodes 0 must be a whole number from 1 to 15,000/],
    [{ nodes: 10, pods: 1.5 }, /clusterSize.pods 1.5 must be a whole number from 1 to 300,000/],
  ])('refuses %j', (clusterSize, message) => {
    expect(() => makeStack({ clusterSize })).toThrow(FlotillaConfigError);
    expect(() => makeStack({ clusterSize })).toThrow(message);
  });
});
