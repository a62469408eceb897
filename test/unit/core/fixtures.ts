import { type InstanceType, Label, type SolveResult } from '../../../shared/core/index.ts';
import { fakeInstanceType } from './builders.ts';

/** A small, readable instance-type set (prices USD/hour, on-demand and spot in three zones). */
export const SMALL_TYPES: readonly InstanceType[] = [
  fakeInstanceType({
    name: 'c.large',
    cpu: 2,
    memoryGiB: 4,
    price: 0.085,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'm.large',
    cpu: 2,
    memoryGiB: 8,
    price: 0.096,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'm.xlarge',
    cpu: 4,
    memoryGiB: 16,
    price: 0.192,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'm.2xlarge',
    cpu: 8,
    memoryGiB: 32,
    price: 0.384,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'r.large',
    cpu: 2,
    memoryGiB: 16,
    price: 0.126,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'a.large',
    cpu: 2,
    memoryGiB: 8,
    price: 0.077,
    arch: 'arm64',
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'g.xlarge',
    cpu: 4,
    memoryGiB: 16,
    price: 1.006,
    extended: { 'nvidia.com/gpu': 1 },
    labels: { [Label.instanceGpuName]: 'a10g', [Label.instanceGpuCount]: '1' },
  }),
  fakeInstanceType({ name: 't.nano', cpu: 2, memoryGiB: 1, pods: 4, price: 0.005 }),
];

/** The zone a NodeClaim is pinned to, if exactly one. */
export function claimZone(claim: SolveResult['nodeClaims'][number]): string | undefined {
  const z = claim.requirements.find((r) => r.key === Label.zone);
  return z?.operator === 'In' && z.values?.length === 1 ? z.values[0] : undefined;
}

/** The instance types a claim may launch as. */
export function claimTypes(claim: SolveResult['nodeClaims'][number] | undefined): string[] {
  return (claim?.instanceTypes ?? []).map((t) => t.name);
}

/** Pod name → NodeClaim name or node name, for every placed pod. */
export function whereIs(result: SolveResult): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of result.nodeClaims) for (const p of c.pods) out.set(p.name, c.name);
  for (const p of result.placements) {
    out.set(p.pod.name, p.kind === 'existingNode' ? p.nodeName : p.nodeClaimName);
  }
  return out;
}
