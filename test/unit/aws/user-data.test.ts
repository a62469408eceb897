import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { renderUserData, type UserDataOptions } from '../../../shared/adapters/aws/user-data.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import { ValidationError } from '../../../shared/core/errors.ts';
import { kubeletProblems } from '../../../shared/usecases/nodeclass/kubelet.ts';
import { ec2NodeClass } from '../../fixtures/node-classes.ts';
import { parseKubeletRegistration } from '../../harness/user-data.ts';
import { GOLDEN_CLUSTER, golden } from './golden.ts';

const base: UserDataOptions = {
  family: 'AL2023',
  cluster: GOLDEN_CLUSTER,
  nodeClassName: 'default',
  labels: { 'karpenter.sh/nodepool': 'general', 'karpenter.k8s.aws/ec2nodeclass': 'default', team: 'web' },
  taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
  startupTaints: [{ key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' }],
  kubelet: {
    clusterDNS: ['172.20.0.10'],
    kubeReserved: { cpu: '100m', memory: '500Mi' },
    evictionHard: { 'memory.available': '5%' },
  },
  maxPods: 29,
};

const expectedTaints = [
  { key: 'dedicated', value: 'web', effect: 'NoSchedule' },
  { key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' },
  { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
];

describe('AL2023 user data', () => {
  it('is a MIME document with a nodeadm NodeConfig carrying labels, taints and maxPods', () => {
    const text = renderUserData(base);
    golden('al2023.mime', text);
    const registration = parseKubeletRegistration(text);
    expect(registration).toMatchObject({ format: 'nodeadm', maxPods: 29, clusterName: 'prod' });
    expect(registration.labels).toEqual(base.labels);
    expect(registration.taints).toEqual(expectedTaints);
  });

  it('puts custom MIME parts before its own NodeConfig, so its settings win', () => {
    const custom = [
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="BOUNDARY"',
      '',
      '--BOUNDARY',
      'Content-Type: text/x-shellscript; charset="us-ascii"',
      '',
      '#!/bin/bash',
      'echo "hello from custom user data"',
      '--BOUNDARY',
      'Content-Type: application/node.eks.aws',
      '',
      'apiVersion: node.eks.aws/v1alpha1',
      'kind: NodeConfig',
      'spec:',
      '  kubelet:',
      '    config:',
      '      maxPods: 7',
      '      shutdownGracePeriod: 30s',
      '--BOUNDARY--',
    ].join('\n');
    const text = renderUserData({ ...base, customUserData: custom });
    golden('al2023-custom-mime.mime', text);
    expect(text.indexOf('hello from custom')).toBeLessThan(text.indexOf('# Flotilla generated NodeConfig'));
    expect(parseKubeletRegistration(text).maxPods).toBe(29);
  });

  it('wraps a plain custom script as a shell part', () => {
    const text = renderUserData({ ...base, customUserData: '#!/bin/bash\necho hi\n' });
    golden('al2023-custom-script.mime', text);
    expect(text).toContain(
      'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho hi\n--//',
    );
  });

  it('uses kubelet maxPods from the NodeClass over the instance type pod count', () => {
    const text = renderUserData({ ...base, kubelet: { maxPods: 110 } });
    expect(parseKubeletRegistration(text).maxPods).toBe(110);
  });
});

/** The `spec.kubelet.config` of Flotilla's NodeConfig in AL2023 user data. */
function nodeadmKubeletConfig(text: string): Record<string, unknown> {
  const part = text.split('--//').find((p) => p.includes('# Flotilla generated NodeConfig')) ?? '';
  const document = parseYaml(part.slice(part.indexOf('apiVersion:'))) as {
    spec: { kubelet: { config: Record<string, unknown> } };
  };
  return document.spec.kubelet.config;
}

/** An EC2NodeClass of `alias` with `kubelet`, parsed as the controllers read it. */
const nodeClassWith = (alias: string, kubelet: Record<string, unknown>) =>
  parseEC2NodeClass(ec2NodeClass('default', { amiSelectorTerms: [{ alias }], kubelet }));

/** Managed fields and upstream ones an AL2023 class may set. */
const OPEN_KUBELET = {
  maxPods: 58,
  clusterDNS: ['172.20.0.10'],
  featureGates: { InPlacePodVerticalScaling: true },
  shutdownGracePeriod: '45s',
  reservedMemory: [{ numaNode: 0, limits: { memory: '1Gi' } }],
  memoryThrottlingFactor: 0.8,
};

describe('AL2023 user data and the open spec.kubelet map', () => {
  it('passes every field outside the managed set into the NodeConfig as the manifest sets it', () => {
    const nodeClass = nodeClassWith('al2023@latest', OPEN_KUBELET);
    expect(kubeletProblems(nodeClass)).toEqual([]);
    const config = nodeadmKubeletConfig(renderUserData({ ...base, kubelet: nodeClass.spec.kubelet ?? {} }));
    expect(config).toMatchObject(OPEN_KUBELET);
    // The registration taints stay Flotilla's.
    expect(config['registerWithTaints']).toEqual(expectedTaints);
  });

  it('writes only the managed fields when the map has no others, as before', () => {
    expect(Object.keys(nodeadmKubeletConfig(renderUserData(base))).sort()).toEqual([
      'clusterDNS',
      'evictionHard',
      'kubeReserved',
      'maxPods',
      'registerWithTaints',
    ]);
  });
});

describe('Bottlerocket user data', () => {
  const bottlerocket: UserDataOptions = { ...base, family: 'Bottlerocket' };

  it('is TOML settings with node labels, taints and max pods', () => {
    const text = renderUserData(bottlerocket);
    golden('bottlerocket.toml', text);
    const registration = parseKubeletRegistration(text);
    expect(registration).toMatchObject({ format: 'bottlerocket', maxPods: 29, clusterName: 'prod' });
    expect(registration.labels).toEqual(base.labels);
    expect(registration.taints).toEqual(expectedTaints);
    const settings = parseToml(text) as { settings: { kubernetes: Record<string, unknown> } };
    expect(settings.settings.kubernetes['kube-reserved']).toEqual({ cpu: '100m', memory: '500Mi' });
    expect(settings.settings.kubernetes['cluster-dns-ip']).toBe('172.20.0.10');
  });

  it('merges custom TOML with Flotilla keys winning and custom settings kept', () => {
    const custom = [
      '[settings.kubernetes]',
      'cluster-name = "wrong"',
      '[settings.kubernetes.node-labels]',
      'extra = "kept"',
      'team = "overridden"',
      '[settings.kubernetes.node-taints]',
      'custom = ["x:NoSchedule"]',
      '[settings.host-containers.admin]',
      'enabled = true',
    ].join('\n');
    const text = renderUserData({ ...bottlerocket, customUserData: custom });
    golden('bottlerocket-custom.toml', text);
    const parsed = parseToml(text) as {
      settings: { kubernetes: Record<string, unknown>; 'host-containers': { admin: { enabled: boolean } } };
    };
    expect(parsed.settings.kubernetes['cluster-name']).toBe('prod');
    expect(parsed.settings['host-containers'].admin.enabled).toBe(true);
    const registration = parseKubeletRegistration(text);
    expect(registration.labels).toMatchObject({ extra: 'kept', team: 'web' });
    expect(registration.taints).toContainEqual({ key: 'custom', value: 'x', effect: 'NoSchedule' });
  });

  it('has no setting for podsPerCore, so a class that sets it is refused as unsupported', () => {
    const text = renderUserData({ ...bottlerocket, kubelet: { podsPerCore: 4, maxPods: 110 } });
    const kubernetes = (parseToml(text) as { settings: { kubernetes: Record<string, unknown> } }).settings
      .kubernetes;
    expect(kubernetes['max-pods']).toBe(110);
    expect(Object.keys(kubernetes).filter((key) => /pods-per-core|podsPerCore/i.test(key))).toEqual([]);
    expect(Object.values(kubernetes)).not.toContain(4);
    expect(kubeletProblems(nodeClassWith('bottlerocket@latest', { podsPerCore: 4 }))).toMatchObject([
      {
        reason: 'UnsupportedKubeletConfiguration',
        path: ['podsPerCore'],
        message: expect.stringContaining(
          'spec.kubelet.podsPerCore: the Bottlerocket AMI family does not apply it',
        ),
      },
    ]);
  });

  it('rejects custom user data that is not TOML, naming the field', () => {
    expect(() => renderUserData({ ...bottlerocket, customUserData: '#!/bin/bash\necho no' })).toThrow(
      ValidationError,
    );
    expect(() => renderUserData({ ...bottlerocket, customUserData: '#!/bin/bash\necho no' })).toThrow(
      /spec\.userData/,
    );
  });
});
