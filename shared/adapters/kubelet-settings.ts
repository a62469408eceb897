import type { KubeletSpec } from '../ports/cloud.ts';

// The `spec.kubelet` settings nodeadm (AL2023) and Bottlerocket take as they are, each family under
// its own key; user-data.ts writes them.

/** `spec.kubelet` fields and the key a family writes each under, in the order they are written. */
export type KubeletKeys = readonly (readonly [Exclude<keyof KubeletSpec, 'clusterDNS'>, string])[];

export const NODEADM_KUBELET_KEYS: KubeletKeys = [
  ['maxPods', 'maxPods'],
  ['podsPerCore', 'podsPerCore'],
  ['systemReserved', 'systemReserved'],
  ['kubeReserved', 'kubeReserved'],
  ['evictionHard', 'evictionHard'],
  ['evictionSoft', 'evictionSoft'],
  ['evictionSoftGracePeriod', 'evictionSoftGracePeriod'],
  ['evictionMaxPodGracePeriod', 'evictionMaxPodGracePeriod'],
  ['imageGCHighThresholdPercent', 'imageGCHighThresholdPercent'],
  ['imageGCLowThresholdPercent', 'imageGCLowThresholdPercent'],
  ['cpuCFSQuota', 'cpuCFSQuota'],
];

export const BOTTLEROCKET_KUBELET_KEYS: KubeletKeys = [
  ['maxPods', 'max-pods'],
  ['kubeReserved', 'kube-reserved'],
  ['systemReserved', 'system-reserved'],
  ['evictionHard', 'eviction-hard'],
  ['evictionSoft', 'eviction-soft'],
  ['evictionSoftGracePeriod', 'eviction-soft-grace-period'],
  ['evictionMaxPodGracePeriod', 'eviction-max-pod-grace-period'],
  ['imageGCHighThresholdPercent', 'image-gc-high-threshold-percent'],
  ['imageGCLowThresholdPercent', 'image-gc-low-threshold-percent'],
  ['cpuCFSQuota', 'cpu-cfs-quota-enforced'],
];

/**
 * Copies the set `spec.kubelet` fields into `into` under the family's keys; `maxPods` falls back
 * to the instance type's pod capacity.
 */
export function copyKubeletSettings(
  kubelet: KubeletSpec,
  typeMaxPods: number | undefined,
  keys: KubeletKeys,
  into: Record<string, unknown>,
): void {
  for (const [field, key] of keys) {
    const value = field === 'maxPods' ? (kubelet.maxPods ?? typeMaxPods) : kubelet[field];
    if (value === undefined) continue;
    into[key] = typeof value === 'object' ? { ...value } : value;
  }
}
