// Amazon Linux user data: a nodeadm NodeConfig (AL2023) or an `/etc/eks/bootstrap.sh` call
// (AL2), each in a MIME multipart document after the NodeClass's own parts.
import { parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import { ValidationError } from '../../core/index.ts';
import {
  copyKubeletSettings,
  copyUnmanagedKubeletSettings,
  NODEADM_KUBELET_KEYS,
} from '../kubelet-settings.ts';
import {
  clusterIpFamily,
  kubeletFlags,
  kubeletLabels,
  registrationTaints,
  type UserDataOptions,
} from './node-settings.ts';

/** MIME boundary Karpenter uses for AL2 and AL2023 user data. */
export const MIME_BOUNDARY = '//';

/** AL2023: a nodeadm NodeConfig after the NodeClass's own parts. */
export function renderAl2023(options: UserDataOptions): string {
  const kubelet = options.kubelet ?? {};
  const config: Record<string, unknown> = {};
  if (kubelet.clusterDNS !== undefined && kubelet.clusterDNS.length > 0)
    config['clusterDNS'] = [...kubelet.clusterDNS];
  copyKubeletSettings(kubelet, options.maxPods, NODEADM_KUBELET_KEYS, config);
  copyUnmanagedKubeletSettings(kubelet, config);
  // Always Flotilla's own: the node registers tainted until it is initialized.
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

/** A word in single quotes for bash. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** AL2: an `/etc/eks/bootstrap.sh` script after the NodeClass's own parts. */
export function renderAl2(options: UserDataOptions): string {
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
