import type { ShimMemory } from './shim/manifests.ts';

// How big the cluster Flotilla serves may grow, and the memory that takes: each Lambda that reads
// the cluster, and the shim, get memory for it with 30% headroom, from what `npm run bench:scale`
// measured of them (BENCHMARKS.md, "Reading the cluster").

/** The size of the cluster: what the Lambdas' and the shim's memory is made for. */
export interface ClusterSize {
  /** Nodes it may grow to. */
  readonly nodes: number;
  /** Pods (not finished) it may run at once. */
  readonly pods: number;
}

/** @default of FlotillaClusterProps.clusterSize: Karpenter's own scale-test size, and then some. */
export const DEFAULT_CLUSTER_SIZE: ClusterSize = { nodes: 500, pods: 10_000 };

/** Peak memory (RSS) of a program as the cluster grows, from its measurements. */
export interface MemoryModel {
  /** With an empty cluster: the runtime, the SDK and Flotilla's code. */
  readonly baseMiB: number;
  /** Per 1,000 pods (not finished). */
  readonly perThousandPodsMiB: number;
  /** Per 1,000 Nodes (and their NodeClaims). */
  readonly perThousandNodesMiB: number;
}

/** A peak measured at one size (`npm run bench:scale`), in MiB. */
export interface MeasuredPeak extends ClusterSize {
  readonly peakMiB: number;
}

/**
 * What a node (its Node and NodeClaim) weighs against a pod in what the programs hold: a pod in the
 * summary is its name, uid, node, phase and times beside its workload's shared template; a node
 * carries its labels, taints, capacity and the NodeClaim's status. Two measured sizes cannot tell
 * the two apart (pods and nodes grow together), so growth is shared out by this weight.
 */
export const NODE_WEIGHT_PODS = 10;

/**
 * The straight line through two measured peaks, growth shared between pods and nodes by
 * NODE_WEIGHT_PODS; a peak that did not grow (within the measurement's noise) gives a flat model at
 * the larger of the two.
 */
export function lineThrough(small: MeasuredPeak, large: MeasuredPeak): MemoryModel {
  const units = (size: ClusterSize) => (size.pods + NODE_WEIGHT_PODS * size.nodes) / 1000;
  const perUnit = Math.max(0, (large.peakMiB - small.peakMiB) / (units(large) - units(small)));
  const baseMiB = Math.max(small.peakMiB, large.peakMiB) - perUnit * Math.max(units(small), units(large));
  return {
    baseMiB: Math.round(baseMiB),
    perThousandPodsMiB: Math.round(perUnit * 100) / 100,
    perThousandNodesMiB: Math.round(perUnit * NODE_WEIGHT_PODS * 100) / 100,
  };
}

/** Headroom over the measured peak: the peak is at most 70% of what is given. */
export const HEADROOM = 0.7;

/** Lambda's bounds and step. */
const LAMBDA_MIN_MB = 128;
const LAMBDA_MAX_MB = 10_240;

/** The peak the model expects at `size`, in MiB. */
export function expectedPeakMiB(model: MemoryModel, size: ClusterSize): number {
  return (
    model.baseMiB +
    (size.pods / 1000) * model.perThousandPodsMiB +
    (size.nodes / 1000) * model.perThousandNodesMiB
  );
}

/**
 * A Lambda's memory for `size`: the expected peak over HEADROOM, rounded up to 64 MB, never below
 * `floorMb` and within Lambda's bounds.
 */
export function lambdaMemoryMb(model: MemoryModel, size: ClusterSize, floorMb: number): number {
  const needed = Math.ceil(expectedPeakMiB(model, size) / HEADROOM / 64) * 64;
  return Math.min(LAMBDA_MAX_MB, Math.max(LAMBDA_MIN_MB, floorMb, needed));
}

/** The shim's memory for `size`: the expected peak as its request, over HEADROOM as its limit. */
export function shimMemoryFor(model: MemoryModel, size: ClusterSize): ShimMemory {
  const peak = expectedPeakMiB(model, size);
  return {
    requestMiB: Math.ceil(peak / 32) * 32,
    limitMiB: Math.ceil(peak / HEADROOM / 32) * 32,
  };
}

/** What `size` must be: whole numbers, at least one node, no more than Kubernetes' tested limits. */
export function clusterSizeProblems(size: ClusterSize): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(size.nodes) || size.nodes < 1 || size.nodes > 15_000) {
    problems.push(`clusterSize.nodes ${size.nodes} must be a whole number from 1 to 15,000`);
  }
  if (!Number.isInteger(size.pods) || size.pods < 1 || size.pods > 300_000) {
    problems.push(`clusterSize.pods ${size.pods} must be a whole number from 1 to 300,000`);
  }
  return problems;
}

/**
 * The shim's peak memory (RSS, MiB) while it serves the cluster (its start, then every Lambda step
 * of `npm run bench:scale`): the line through 500 nodes / 5,000 pods and the highest peak of six
 * runs at 5,000 nodes / 30,000 pods (530, 592, 608, 621, 604 and 628 MiB; BENCHMARKS.md, "Reading
 * the cluster", "At 5,000 nodes" and after). It passes above the 399 MiB measured at 2,000 nodes /
 * 30,000 pods; the line through the two smaller sizes fell short at 5,000 nodes.
 */
export const SHIM_MEMORY_MODEL: MemoryModel = lineThrough(
  { nodes: 500, pods: 5_000, peakMiB: 169 },
  { nodes: 5_000, pods: 30_000, peakMiB: 628 },
);
