import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import type { Labels } from '../core/index.ts';
import { UNREGISTERED_TAINT, ValidationError } from '../core/index.ts';
import type { AmiFamily, KubeletSpec, Taint } from '../ports/cloud.ts';
import { BOTTLEROCKET_KUBELET_KEYS, copyKubeletSettings, NODEADM_KUBELET_KEYS } from './kubelet-settings.ts';

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

/** MIME boundary Karpenter uses for AL2 and AL2023 user data. */
export const MIME_BOUNDARY = '//';

/**
 * The user data (plain text, not base64) that makes the node join the cluster with Karpenter's
 * labels and taints: a nodeadm NodeConfig in a MIME multipart document for AL2023, an
 * `/etc/eks/bootstrap.sh` call in a MIME multipart document for AL2, TOML settings for
 * Bottlerocket, a `<powershell>` block calling `Start-EKSBootstrap.ps1` for Windows, and the
 * custom user data exactly as written for Custom. Custom user data goes first (MIME parts, the
 * PowerShell lines) or under Flotilla's keys (TOML), so Flotilla's settings win.
 * @throws ValidationError when the custom user data cannot be merged (bad TOML or MIME, a
 *   PowerShell block that closes early) or is empty for Custom.
 */
export function renderUserData(options: UserDataOptions): string {
  switch (options.family) {
    case 'AL2023':
      return renderAl2023(options);
    case 'AL2':
      return renderAl2(options);
    case 'Bottlerocket':
      return renderBottlerocket(options);
    case 'Windows2019':
    case 'Windows2022':
    case 'Windows2025':
      return renderWindows(options);
    case 'Custom':
      return renderCustom(options);
  }
}

/** Why an EC2NodeClass's user data cannot be rendered for its family, as a condition's reason and message. */
export interface UserDataProblem {
  readonly reason: 'UserDataRequired' | 'UserDataInvalid';
  readonly message: string;
}

/**
 * Checks, before any launch, that the NodeClass's user data renders for its AMI family: Custom
 * needs user data of its own (Flotilla adds nothing to it), and custom user data must merge with
 * Flotilla's (TOML for Bottlerocket, MIME or a script for AL2 and AL2023, PowerShell for Windows).
 * @returns undefined when it renders.
 */
export function userDataProblem(
  family: AmiFamily,
  nodeClassName: string,
  customUserData: string | undefined,
): UserDataProblem | undefined {
  try {
    renderUserData({
      family,
      cluster: { name: 'cluster', endpoint: 'https://cluster.invalid', caBundle: '' },
      nodeClassName,
      labels: {},
      taints: [],
      startupTaints: [],
      maxPods: 110,
      ...(customUserData === undefined ? {} : { customUserData }),
    });
    return undefined;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return {
      reason:
        family === 'Custom' && (customUserData ?? '').trim() === '' ? 'UserDataRequired' : 'UserDataInvalid',
      message: error.message,
    };
  }
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

// --------------------------------------------------------------------------------------------
// AL2023 (nodeadm)

function renderAl2023(options: UserDataOptions): string {
  const kubelet = options.kubelet ?? {};
  const config: Record<string, unknown> = {};
  if (kubelet.clusterDNS !== undefined && kubelet.clusterDNS.length > 0)
    config['clusterDNS'] = [...kubelet.clusterDNS];
  copyKubeletSettings(kubelet, options.maxPods, NODEADM_KUBELET_KEYS, config);
  config['registerWithTaints'] = registrationTaints(options.taints, options.startupTaints).map((t) => ({
    key: t.key,
    ...(t.value === undefined || t.value === '' ? {} : { value: t.value }),
    effect: t.effect,
  }));
  const labels = kubeletLabels(options.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const nodeConfig = {
    apiVersion: 'node.eks.aws/v1alpha1',
    kind: 'NodeConfig',
    spec: {
      cluster: {
        name: options.cluster.name,
        apiServerEndpoint: options.cluster.endpoint,
        certificateAuthority: options.cluster.caBundle,
        ...(options.cluster.serviceCidr === undefined ? {} : { cidr: options.cluster.serviceCidr }),
      },
      kubelet: {
        config,
        flags: labels === '' ? [] : [`--node-labels=${labels}`],
      },
      ...(options.instanceStorePolicy === 'RAID0'
        ? { instance: { localStorage: { strategy: 'RAID0' } } }
        : {}),
    },
  };
  const karpenterPart = {
    contentType: 'application/node.eks.aws',
    body: `# Flotilla generated NodeConfig\n${stringifyYaml(nodeConfig, { lineWidth: 0 })}`,
  };
  const custom = customParts(options.nodeClassName, options.customUserData);
  return mime([...custom, karpenterPart]);
}

interface MimePart {
  readonly contentType: string;
  readonly body: string;
}

function mime(parts: readonly MimePart[]): string {
  const lines = ['MIME-Version: 1.0', `Content-Type: multipart/mixed; boundary="${MIME_BOUNDARY}"`, ''];
  for (const part of parts) {
    lines.push(`--${MIME_BOUNDARY}`, `Content-Type: ${part.contentType}`, '', part.body.replace(/\n+$/, ''));
  }
  lines.push(`--${MIME_BOUNDARY}--`, '');
  return lines.join('\n');
}

/**
 * Custom user data as MIME parts, placed before Flotilla's NodeConfig (nodeadm merges later
 * NodeConfigs over earlier ones, so Flotilla's settings win). A MIME document keeps its parts; a
 * NodeConfig YAML becomes an `application/node.eks.aws` part; anything else a shell script part.
 */
function customParts(
  nodeClassName: string,
  userData: string | undefined,
  nodeConfigs: 'nodeadm' | 'none' = 'nodeadm',
): MimePart[] {
  const text = userData?.trim() ?? '';
  if (text === '') return [];
  if (/^MIME-Version:/im.test(text) && /multipart\//i.test(text)) {
    const boundary = /boundary="?([^";\r\n]+)"?/i.exec(text)?.[1];
    if (boundary === undefined) {
      throw new ValidationError(
        `ec2NodeClass "${nodeClassName}"`,
        'spec.userData',
        'is a MIME document without a boundary parameter; add boundary="..." to its Content-Type or use a plain NodeConfig or script',
      );
    }
    return text
      .split(`--${boundary}`)
      .slice(1)
      .filter((part) => !part.startsWith('--'))
      .map((part) => {
        const split = part.search(/\r?\n\r?\n/);
        const headers = split === -1 ? part : part.slice(0, split);
        const contentType = /Content-Type:\s*([^\r\n]+)/i.exec(headers)?.[1]?.trim() ?? 'text/x-shellscript';
        return { contentType, body: split === -1 ? '' : part.slice(split).trim() };
      });
  }
  const isNodeConfig =
    nodeConfigs === 'nodeadm' &&
    parseAllDocuments(text).some((doc) => {
      try {
        return (doc.toJS() as { kind?: unknown } | null)?.kind === 'NodeConfig';
      } catch {
        return false;
      }
    });
  return [
    isNodeConfig
      ? { contentType: 'application/node.eks.aws', body: text }
      : { contentType: 'text/x-shellscript; charset="us-ascii"', body: text },
  ];
}

// --------------------------------------------------------------------------------------------
// Bottlerocket (TOML settings)

type Table = Record<string, unknown>;

function table(parent: Table, key: string): Table {
  const existing = parent[key];
  if (existing !== undefined && typeof existing === 'object' && !Array.isArray(existing))
    return existing as Table;
  const created: Table = {};
  parent[key] = created;
  return created;
}

function renderBottlerocket(options: UserDataOptions): string {
  let document: Table = {};
  const custom = options.customUserData?.trim() ?? '';
  if (custom !== '') {
    try {
      document = parseToml(custom) as Table;
    } catch (error) {
      throw new ValidationError(
        `ec2NodeClass "${options.nodeClassName}"`,
        'spec.userData',
        `is not valid TOML (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); Bottlerocket user data must be TOML settings`,
        { cause: error },
      );
    }
  }
  const kubernetes = table(table(document, 'settings'), 'kubernetes');
  const kubelet = options.kubelet ?? {};
  // Flotilla's keys win over the custom settings, as Karpenter's do.
  kubernetes['cluster-name'] = options.cluster.name;
  kubernetes['api-server'] = options.cluster.endpoint;
  kubernetes['cluster-certificate'] = options.cluster.caBundle;
  if (kubelet.clusterDNS?.[0] !== undefined) kubernetes['cluster-dns-ip'] = kubelet.clusterDNS[0];
  const labels = table(kubernetes, 'node-labels');
  for (const [key, value] of kubeletLabels(options.labels)) labels[key] = value;
  const taints = table(kubernetes, 'node-taints');
  for (const taint of registrationTaints(options.taints, options.startupTaints)) {
    const entry = `${taint.value ?? ''}:${taint.effect}`;
    const existing = taints[taint.key];
    const list = Array.isArray(existing)
      ? existing.map(String)
      : typeof existing === 'string'
        ? [existing]
        : [];
    if (!list.includes(entry)) list.push(entry);
    taints[taint.key] = list;
  }
  copyKubeletSettings(kubelet, options.maxPods, BOTTLEROCKET_KUBELET_KEYS, kubernetes);
  if (options.instanceStorePolicy === 'RAID0') {
    // Bottlerocket stripes the instance store and binds the kubelet's and containerd's directories to it.
    table(table(document, 'settings'), 'bootstrap-commands')['000-mount-instance-storage'] = {
      commands: [
        ['apiclient', 'ephemeral-storage', 'init'],
        [
          'apiclient',
          'ephemeral-storage',
          'bind',
          '--dirs',
          '/var/lib/containerd',
          '/var/lib/kubelet',
          '/var/log/pods',
        ],
      ],
      mode: 'always',
      essential: true,
    };
  }
  return `${stringifyToml(document)}\n`;
}

// --------------------------------------------------------------------------------------------
// Kubelet flags (AL2's bootstrap.sh and Windows's Start-EKSBootstrap.ps1 pass them to kubelet)

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

// --------------------------------------------------------------------------------------------
// AL2 (/etc/eks/bootstrap.sh)

/** A word in single quotes for bash. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function renderAl2(options: UserDataOptions): string {
  const { cluster } = options;
  const dns = options.kubelet?.clusterDNS?.[0];
  const args = [
    shellQuote(cluster.name),
    `--apiserver-endpoint ${shellQuote(cluster.endpoint)}`,
    `--b64-cluster-ca ${shellQuote(cluster.caBundle)}`,
    ...(dns === undefined ? [] : [`--dns-cluster-ip ${shellQuote(dns)}`]),
    ...(clusterIpFamily(cluster, options.kubelet) === 'ipv6' ? ['--ip-family ipv6'] : []),
    // Flotilla always sets --max-pods itself (the instance type's pod capacity it planned with).
    '--use-max-pods false',
    `--kubelet-extra-args ${shellQuote(kubeletFlags(options).join(' '))}`,
    // bootstrap.sh stripes the NVMe instance store and mounts kubelet's and containerd's directories on it.
    ...(options.instanceStorePolicy === 'RAID0' ? ['--local-disks raid0'] : []),
  ];
  const script = [
    '#!/bin/bash -xe',
    'exec > >(tee /var/log/user-data.log | logger -t user-data -s 2>/dev/console) 2>&1',
    `/etc/eks/bootstrap.sh ${args.join(' \\\n  ')}`,
  ].join('\n');
  const custom = customParts(options.nodeClassName, options.customUserData, 'none');
  return mime([...custom, { contentType: 'text/x-shellscript; charset="us-ascii"', body: script }]);
}

// --------------------------------------------------------------------------------------------
// Windows (Start-EKSBootstrap.ps1 in a <powershell> block)

/** A string in single quotes for PowerShell. */
function powershellQuote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Custom PowerShell lines, run before the bootstrap in the same block. A custom block that wraps
 * itself in `<powershell>` tags is unwrapped; one that closes the block early cannot be merged.
 */
function customPowershell(nodeClassName: string, userData: string | undefined): string[] {
  let text = userData?.trim() ?? '';
  const wrapped = /^<powershell>([\s\S]*)<\/powershell>$/i.exec(text);
  if (wrapped) text = (wrapped[1] ?? '').trim();
  if (/<\/?powershell>/i.test(text)) {
    throw new ValidationError(
      `ec2NodeClass "${nodeClassName}"`,
      'spec.userData',
      'holds a <powershell> tag inside the script; Windows user data is PowerShell lines (optionally in one <powershell> block) that run before the bootstrap',
    );
  }
  return text === '' ? [] : [text];
}

function renderWindows(options: UserDataOptions): string {
  const { cluster } = options;
  const dns = options.kubelet?.clusterDNS?.[0];
  const bootstrap = [
    '& $EKSBootstrapScriptFile',
    `-EKSClusterName ${powershellQuote(cluster.name)}`,
    `-APIServerEndpoint ${powershellQuote(cluster.endpoint)}`,
    `-Base64ClusterCA ${powershellQuote(cluster.caBundle)}`,
    `-KubeletExtraArgs ${powershellQuote(kubeletFlags(options).join(' '))}`,
    ...(dns === undefined ? [] : [`-DNSClusterIP ${powershellQuote(dns)}`]),
  ].join(' ');
  return [
    '<powershell>',
    ...customPowershell(options.nodeClassName, options.customUserData),
    '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"',
    bootstrap,
    '</powershell>',
    '',
  ].join('\n');
}

// --------------------------------------------------------------------------------------------
// Custom (the NodeClass's user data as it is)

function renderCustom(options: UserDataOptions): string {
  const text = options.customUserData ?? '';
  if (text.trim() === '') {
    throw new ValidationError(
      `ec2NodeClass "${options.nodeClassName}"`,
      'spec.userData',
      'is empty, and amiFamily Custom launches with spec.userData exactly as written: the nodes would boot without joining the cluster. Set spec.userData to the bootstrap of your AMI (node labels and the karpenter.sh/unregistered:NoExecute taint included), or use a family Flotilla renders: AL2023, AL2, Bottlerocket, Windows2019, Windows2022, Windows2025',
    );
  }
  return text;
}
