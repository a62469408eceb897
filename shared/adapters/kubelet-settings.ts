import { KUBELET_CONFIGURATION_FIELDS } from '../core/index.ts';
import type { KubeletSpec, ManagedKubeletField } from '../ports/cloud.ts';

// The `spec.kubelet` settings nodeadm (AL2023) and Bottlerocket take as they are, each family under
// its own key (Bottlerocket has none for podsPerCore), and on AL2023 every other kubelet field;
// user-data.ts writes them.

/** `spec.kubelet` fields and the key a family writes each under, in the order they are written. */
export type KubeletKeys = readonly (readonly [Exclude<ManagedKubeletField, 'clusterDNS'>, string])[];

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

/**
 * Copies the `spec.kubelet` fields outside the managed set into a nodeadm kubelet config as they
 * are: AL2023 applies any kubelet configuration field, as Karpenter's does. Only names of the
 * upstream configuration are written; the status controller keeps a class that sets any other
 * from launching, so nothing is lost here.
 */
export function copyUnmanagedKubeletSettings(kubelet: KubeletSpec, into: Record<string, unknown>): void {
  for (const [field, value] of Object.entries(kubelet.unmanaged ?? {})) {
    if (KUBELET_CONFIGURATION_FIELDS.has(field)) into[field] = value;
  }
}
