// What the user data of every AMI family gives kubelet: the cluster it joins, the labels it may
// register with, the taints it registers with, and (for AL2 and Windows) the kubelet flags.
import type { Labels } from '../../core/index.ts';
import { UNREGISTERED_TAINT } from '../../core/index.ts';
import type { AmiFamily, KubeletSpec, Taint } from '../../ports/cloud.ts';

/** What kubelet needs to join the cluster. */
export interface ClusterInfo {
  readonly name: string;
  /** https URL of the API server. */
  readonly endpoint: string;
  /** Base64 PEM of the cluster CA. */
  readonly caBundle: string;
  /** Service CIDR (nodeadm's `cluster.cidr`), e.g. `172.20.0.0/16` or `fd00:ab::/108`. */
  readonly serviceCidr?: string;
  /** The cluster's IP family as EKS reports it (`kubernetesNetworkConfig.ipFamily`). */
  readonly ipFamily?: IpFamily;
}

export type IpFamily = 'ipv4' | 'ipv6';

/**
 * The IP family the cluster's pods and services use: the one EKS reports, else `ipv6` when the
 * service CIDR or the cluster DNS address the nodes are given (kube-dns's service address, from
 * `spec.kubelet.clusterDNS`) is an IPv6 one, else `ipv4`.
 */
export function clusterIpFamily(cluster: ClusterInfo, kubelet?: KubeletSpec): IpFamily {
  if (cluster.ipFamily !== undefined) return cluster.ipFamily;
  const dns = kubelet?.clusterDNS?.[0];
  return cluster.serviceCidr?.includes(':') === true || dns?.includes(':') === true ? 'ipv6' : 'ipv4';
}

export interface UserDataOptions {
  readonly family: AmiFamily;
  readonly cluster: ClusterInfo;
  readonly nodeClassName: string;
  readonly labels: Labels;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  readonly kubelet?: KubeletSpec;
  /** Pods kubelet admits (the instance type's pod capacity). */
  readonly maxPods?: number;
  /** `spec.userData` of the EC2NodeClass. */
  readonly customUserData?: string;
  /**
   * `spec.instanceStorePolicy`: `RAID0` has the bootstrap stripe the instance store for ephemeral
   * storage (nodeadm's `localStorage` on AL2023, `--local-disks raid0` on AL2, `apiclient
   * ephemeral-storage` on Bottlerocket).
   */
  readonly instanceStorePolicy?: 'RAID0';
}

/** Taints kubelet registers with: the NodeClaim's taints, startup taints, then karpenter.sh/unregistered. */
export function registrationTaints(taints: readonly Taint[], startupTaints: readonly Taint[]): Taint[] {
  const all = [...taints, ...startupTaints];
  const seen = new Set<string>();
  const out: Taint[] = [];
  for (const taint of [...all, UNREGISTERED_TAINT]) {
    const key = `${taint.key}:${taint.effect}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(taint);
  }
  return out;
}

/**
 * The labels kubelet may register with, sorted: the NodeRestriction admission plugin refuses a
 * kubelet's own labels under `kubernetes.io` and `k8s.io` (kubelet sets the well-known ones
 * itself), so those are left to the registration, which copies them from the NodeClaim.
 */
export function kubeletLabels(labels: Labels): [string, string][] {
  return Object.entries(labels)
    .filter(([key]) => !isRestrictedLabel(key))
    .sort(([a], [b]) => a.localeCompare(b));
}

function isRestrictedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return false;
  const domain = key.slice(0, slash);
  return ['kubernetes.io', 'k8s.io'].some((d) => domain === d || domain.endsWith(`.${d}`));
}

/** A map flag as kubelet reads it: `--name="k<sep>v,…"` with keys sorted, or nothing when empty. */
function mapFlag(
  name: string,
  map: Readonly<Record<string, string>> | undefined,
  separator: string,
): string[] {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0
    ? []
    : [`--${name}="${entries.map(([k, v]) => `${k}${separator}${v}`).join(',')}"`];
}

/**
 * The kubelet flags Flotilla sets on AL2 and Windows nodes: node labels, registration taints
 * (always with `karpenter.sh/unregistered`), max pods (the NodeClass's, else the instance type's
 * pod capacity) and the NodeClass's kubelet settings.
 */
export function kubeletFlags(options: UserDataOptions): string[] {
  const kubelet = options.kubelet ?? {};
  const labels = kubeletLabels(options.labels);
  const taints = registrationTaints(options.taints, options.startupTaints).map((t) =>
    t.value === undefined || t.value === '' ? `${t.key}:${t.effect}` : `${t.key}=${t.value}:${t.effect}`,
  );
  const flags: string[] = [];
  if (labels.length > 0) flags.push(`--node-labels="${labels.map(([k, v]) => `${k}=${v}`).join(',')}"`);
  flags.push(`--register-with-taints="${taints.join(',')}"`);
  const maxPods = kubelet.maxPods ?? options.maxPods;
  if (maxPods !== undefined) flags.push(`--max-pods=${maxPods}`);
  if (kubelet.podsPerCore !== undefined) flags.push(`--pods-per-core=${kubelet.podsPerCore}`);
  flags.push(
    ...mapFlag('system-reserved', kubelet.systemReserved, '='),
    ...mapFlag('kube-reserved', kubelet.kubeReserved, '='),
    ...mapFlag('eviction-hard', kubelet.evictionHard, '<'),
    ...mapFlag('eviction-soft', kubelet.evictionSoft, '<'),
    ...mapFlag('eviction-soft-grace-period', kubelet.evictionSoftGracePeriod, '='),
  );
  if (kubelet.evictionMaxPodGracePeriod !== undefined)
    flags.push(`--eviction-max-pod-grace-period=${kubelet.evictionMaxPodGracePeriod}`);
  if (kubelet.imageGCHighThresholdPercent !== undefined)
    flags.push(`--image-gc-high-threshold=${kubelet.imageGCHighThresholdPercent}`);
  if (kubelet.imageGCLowThresholdPercent !== undefined)
    flags.push(`--image-gc-low-threshold=${kubelet.imageGCLowThresholdPercent}`);
  if (kubelet.cpuCFSQuota !== undefined) flags.push(`--cpu-cfs-quota=${kubelet.cpuCFSQuota}`);
  return flags;
}
