// Bottlerocket user data: TOML settings, the NodeClass's own under Flotilla's keys.
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { ValidationError } from '../../core/index.ts';
import { BOTTLEROCKET_KUBELET_KEYS, copyKubeletSettings } from '../kubelet-settings.ts';
import { kubeletLabels, registrationTaints, type UserDataOptions } from './node-settings.ts';

type Table = Record<string, unknown>;

function table(parent: Table, key: string): Table {
  const existing = parent[key];
  if (existing !== undefined && typeof existing === 'object' && !Array.isArray(existing))
    return existing as Table;
  const created: Table = {};
  parent[key] = created;
  return created;
}

export function renderBottlerocket(options: UserDataOptions): string {
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
