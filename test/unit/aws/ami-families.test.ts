import type { _InstanceType } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { aliasParameters } from '../../../shared/adapters/aws/ami.ts';
import { toCachedInstanceType, toInstanceTypes } from '../../../shared/adapters/aws/instance-types.ts';
import {
  defaultBlockDeviceMappings,
  launchTemplateData,
} from '../../../shared/adapters/aws/launch-templates.ts';
import {
  kubeletFlags,
  kubeletLabels,
  renderUserData,
  type UserDataOptions,
  userDataProblem,
} from '../../../shared/adapters/aws/user-data.ts';
import { ValidationError } from '../../../shared/core/errors.ts';
import type { AmiFamily, EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { parseKubeletRegistration } from '../../harness/user-data.ts';
import { DEFAULT_NODE_CLASS, readyNodeClass } from '../memory/fixtures.ts';
import { GOLDEN_CLUSTER, golden } from './golden.ts';

const labels = {
  'karpenter.sh/nodepool': 'general',
  'karpenter.k8s.aws/ec2nodeclass': 'default',
  'karpenter.sh/capacity-type': 'on-demand',
  team: 'web',
};

const base: Omit<UserDataOptions, 'family'> = {
  cluster: GOLDEN_CLUSTER,
  nodeClassName: 'default',
  // Labels kubelet may not set itself are left to the registration.
  labels: {
    ...labels,
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': 'm5.large',
    'topology.kubernetes.io/zone': 'us-east-1a',
  },
  taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
  startupTaints: [{ key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' }],
  kubelet: {
    clusterDNS: ['172.20.0.10'],
    kubeReserved: { cpu: '100m', memory: '500Mi' },
    systemReserved: { memory: '100Mi' },
    evictionHard: { 'memory.available': '5%', 'nodefs.available': '10%' },
    evictionSoft: { 'memory.available': '10%' },
    evictionSoftGracePeriod: { 'memory.available': '1m0s' },
    evictionMaxPodGracePeriod: 60,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    cpuCFSQuota: true,
    podsPerCore: 10,
  },
  maxPods: 29,
};

const expectedTaints = [
  { key: 'dedicated', value: 'web', effect: 'NoSchedule' },
  { key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' },
  { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
];

/** Kubelet, started by the family's bootstrap, registers with every label, taint and setting asked. */
function expectRegistration(userData: string, format: 'bootstrap.sh' | 'windows'): void {
  const registration = parseKubeletRegistration(userData);
  expect(registration).toMatchObject({
    format,
    clusterName: 'prod',
    maxPods: 29,
    kubeReserved: { cpu: '100m', memory: '500Mi' },
    systemReserved: { memory: '100Mi' },
    evictionHard: { 'memory.available': '5%', 'nodefs.available': '10%' },
  });
  expect(registration.labels).toEqual(labels);
  expect(registration.taints).toEqual(expectedTaints);
}

const WINDOWS = ['Windows2019', 'Windows2022', 'Windows2025'] as const;

describe('kubelet flags (AL2 and Windows)', () => {
  it('carry labels, taints with karpenter.sh/unregistered, max pods and every kubelet setting', () => {
    expect(kubeletFlags({ ...base, family: 'AL2' })).toEqual([
      '--node-labels="karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=general,team=web"',
      '--register-with-taints="dedicated=web:NoSchedule,node.cilium.io/agent-not-ready=true:NoExecute,karpenter.sh/unregistered:NoExecute"',
      '--max-pods=29',
      '--pods-per-core=10',
      '--system-reserved="memory=100Mi"',
      '--kube-reserved="cpu=100m,memory=500Mi"',
      '--eviction-hard="memory.available<5%,nodefs.available<10%"',
      '--eviction-soft="memory.available<10%"',
      '--eviction-soft-grace-period="memory.available=1m0s"',
      '--eviction-max-pod-grace-period=60',
      '--image-gc-high-threshold=85',
      '--image-gc-low-threshold=80',
      '--cpu-cfs-quota=true',
    ]);
  });

  it('take the NodeClass maxPods over the instance type pod capacity', () => {
    expect(kubeletFlags({ ...base, family: 'AL2', kubelet: { maxPods: 110 } })).toContain('--max-pods=110');
  });

  it.each([
    ['kubernetes.io/arch', false],
    ['node.kubernetes.io/instance-type', false],
    ['node-restriction.kubernetes.io/team', false],
    ['example.k8s.io/x', false],
    ['karpenter.sh/nodepool', true],
    ['topology.k8s.aws/zone-id', true],
    ['team', true],
  ])('leave %s to the registration: kept=%s', (key, kept) => {
    expect(kubeletLabels({ [key]: 'v' }).length === 1).toBe(kept);
  });
});

describe('AL2 user data', () => {
  const al2: UserDataOptions = { ...base, family: 'AL2' };

  it('is a MIME document whose shell part calls bootstrap.sh with the kubelet flags', () => {
    const text = renderUserData(al2);
    golden('al2.mime', text);
    expect(text).toContain("/etc/eks/bootstrap.sh 'prod'");
    expect(text).toContain("--dns-cluster-ip '172.20.0.10'");
    expect(text).toContain('--use-max-pods false');
    expectRegistration(text, 'bootstrap.sh');
  });

  it('has bootstrap.sh stripe the instance store with --local-disks raid0 under instanceStorePolicy RAID0', () => {
    const text = renderUserData({ ...al2, instanceStorePolicy: 'RAID0' });
    golden('al2-raid0.mime', text);
    const bootstrap = text.slice(text.indexOf('/etc/eks/bootstrap.sh'));
    expect(bootstrap).toMatch(/--kubelet-extra-args '[^']*' \\\n {2}--local-disks raid0\n--\/\/--/);
    expect(renderUserData(al2)).not.toContain('--local-disks');
  });

  it('puts custom user data first, a plain script as a shell part and MIME parts as they are', () => {
    const script = renderUserData({ ...al2, customUserData: '#!/bin/bash\necho custom\n' });
    golden('al2-custom-script.mime', script);
    expect(script.indexOf('echo custom')).toBeLessThan(script.indexOf('/etc/eks/bootstrap.sh'));
    const mime = renderUserData({
      ...al2,
      customUserData: [
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="X"',
        '',
        '--X',
        'Content-Type: text/cloud-config',
        '',
        'packages: [jq]',
        '--X--',
      ].join('\n'),
    });
    expect(mime).toContain('Content-Type: text/cloud-config\n\npackages: [jq]\n--//');
    expect(parseKubeletRegistration(mime).labels).toEqual(labels);
  });

  it('quotes a value holding a single quote so bash reads it back', () => {
    const text = renderUserData({ ...al2, cluster: { ...base.cluster, name: "it's" } });
    expect(parseKubeletRegistration(text).clusterName).toBe("it's");
  });

  it('sets the IPv6 family when cluster DNS is IPv6', () => {
    expect(renderUserData({ ...al2, kubelet: { clusterDNS: ['fd00::a'] } })).toContain('--ip-family ipv6');
  });

  it('refuses MIME user data without a boundary', () => {
    expect(() =>
      renderUserData({ ...al2, customUserData: 'MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nx' }),
    ).toThrow(ValidationError);
  });
});

describe('Windows user data', () => {
  it.each(WINDOWS)(
    '%s is a PowerShell block calling Start-EKSBootstrap.ps1 with the kubelet flags',
    (family) => {
      const text = renderUserData({ ...base, family });
      if (family === 'Windows2022') golden('windows.ps1', text);
      expect(text.startsWith('<powershell>\n')).toBe(true);
      expect(text.trimEnd().endsWith('</powershell>')).toBe(true);
      expect(text).toContain("-DNSClusterIP '172.20.0.10'");
      expectRegistration(text, 'windows');
    },
  );

  it('runs custom PowerShell first, unwrapping its own <powershell> tags', () => {
    const text = renderUserData({
      ...base,
      family: 'Windows2022',
      customUserData: '<powershell>\nWrite-Host "custom"\n</powershell>',
    });
    golden('windows-custom.ps1', text);
    expect(text.match(/<powershell>/g)).toHaveLength(1);
    expect(text.indexOf('Write-Host "custom"')).toBeLessThan(text.indexOf('Start-EKSBootstrap.ps1'));
    expect(parseKubeletRegistration(text).labels).toEqual(labels);
  });

  it('refuses custom PowerShell that closes the block early', () => {
    expect(() =>
      renderUserData({
        ...base,
        family: 'Windows2019',
        customUserData: 'Write-Host a\n</powershell>\n<persist>true</persist>',
      }),
    ).toThrow(/spec\.userData/);
  });

  it("quotes a value holding a single quote as PowerShell's ''", () => {
    const text = renderUserData({
      ...base,
      family: 'Windows2025',
      cluster: { ...base.cluster, name: "it's" },
    });
    expect(text).toContain("-EKSClusterName 'it''s'");
    expect(parseKubeletRegistration(text).clusterName).toBe("it's");
  });
});

describe('Custom user data', () => {
  it('is the NodeClass user data exactly as written, whatever its format', () => {
    const nodeConfig = [
      'apiVersion: node.eks.aws/v1alpha1',
      'kind: NodeConfig',
      'spec:',
      '  cluster: { name: prod }',
      '  kubelet:',
      '    flags: [--node-labels=team=own]',
      '',
    ].join('\n');
    expect(renderUserData({ ...base, family: 'Custom', customUserData: nodeConfig })).toBe(nodeConfig);
    expect(parseKubeletRegistration(nodeConfig).labels).toEqual({ team: 'own' });
  });

  it('is none when the class has none, as Karpenter launches a Custom AMI that bootstraps itself', () => {
    expect(renderUserData({ ...base, family: 'Custom' })).toBe('');
  });
});

describe('userDataProblem', () => {
  it.each<[AmiFamily, string | undefined, string | undefined]>([
    ['AL2023', undefined, undefined],
    ['AL2', undefined, undefined],
    ['Bottlerocket', undefined, undefined],
    ['Windows2022', undefined, undefined],
    ['Custom', '#!/bin/bash\n/opt/join.sh', undefined],
    // As Karpenter: an AMI that bootstraps itself launches with no user data.
    ['Custom', undefined, undefined],
    ['Bottlerocket', '#!/bin/bash\necho not toml', 'UserDataInvalid'],
    ['AL2', 'MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nx', 'UserDataInvalid'],
    ['AL2023', 'MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nx', 'UserDataInvalid'],
    ['Windows2019', '</powershell>', 'UserDataInvalid'],
  ])('%s with user data %j: %s', (family, userData, reason) => {
    const problem = userDataProblem(family, 'default', userData);
    expect(problem?.reason).toBe(reason);
    if (problem !== undefined) expect(problem.message).toMatch(/ec2NodeClass "default": spec\.userData/);
  });
});

describe('default block devices per family', () => {
  const sizes = (family: AmiFamily | undefined) =>
    defaultBlockDeviceMappings(family).map(
      (m) => `${m.deviceName}:${(m.ebs?.volumeSizeBytes ?? 0) / 1024 ** 3}${m.rootVolume ? ':root' : ''}`,
    );

  it.each<[AmiFamily | undefined, string[]]>([
    ['AL2023', ['/dev/xvda:20:root']],
    ['AL2', ['/dev/xvda:20:root']],
    ['Bottlerocket', ['/dev/xvda:4', '/dev/xvdb:20:root']],
    ['Windows2019', ['/dev/sda1:50:root']],
    ['Windows2022', ['/dev/sda1:50:root']],
    ['Windows2025', ['/dev/sda1:50:root']],
    ['Custom', []],
  ])('%s: %j', (family, expected) => {
    expect(sizes(family)).toEqual(expected);
    for (const m of defaultBlockDeviceMappings(family)) {
      expect(m.ebs).toMatchObject({ volumeType: 'gp3', encrypted: true });
    }
  });

  it("leaves a Custom AMI's own volumes in place (no mappings in the launch template)", () => {
    const data = launchTemplateData({
      nodeClass: readyNodeClass(new Date('2026-11-21T10:00:00Z')),
      family: 'Custom',
      imageId: 'ami-1',
      userData: '#!/bin/bash',
      tags: {},
    });
    expect(data.BlockDeviceMappings).toBeUndefined();
    expect(data.UserData).toBe(Buffer.from('#!/bin/bash').toString('base64'));
    // A Custom AMI that bootstraps itself: no user data at all, as Karpenter launches it.
    const bare = launchTemplateData({
      nodeClass: readyNodeClass(new Date('2026-11-21T10:00:00Z')),
      family: 'Custom',
      imageId: 'ami-1',
      userData: '',
      tags: {},
    });
    expect(bare).not.toHaveProperty('UserData');
    expect(
      launchTemplateData({
        nodeClass: readyNodeClass(new Date('2026-11-21T10:00:00Z')),
        family: 'Windows2022',
        imageId: 'ami-1',
        userData: '<powershell></powershell>',
        tags: {},
      }).BlockDeviceMappings,
    ).toEqual([
      {
        DeviceName: '/dev/sda1',
        Ebs: { VolumeSize: 50, VolumeType: 'gp3', Encrypted: true, DeleteOnTermination: true },
      },
    ]);
  });
});

describe('AMI aliases of AL2 and Windows', () => {
  it("read Karpenter's public parameters", () => {
    expect(aliasParameters('al2@latest', '1.32').map((p) => `${p.arch}/${p.variant}:${p.path}`)).toEqual([
      'x86_64/standard:/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id',
      'arm64/standard:/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id',
      'x86_64/nvidia:/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id',
      'x86_64/neuron:/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id',
    ]);
    expect(aliasParameters('al2@v20250116', '1.32').map((p) => p.path)).toEqual([
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2/amazon-eks-node-1.32-v20250116/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20250116/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20250116/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20250116/image_id',
    ]);
    expect(aliasParameters('windows2022@latest', '1.34')).toEqual([
      {
        path: '/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id',
        arch: 'x86_64',
        variant: 'standard',
        windowsBuild: '10.0.20348',
      },
    ]);
    expect(aliasParameters('windows2019@latest', '1.34')[0]?.windowsBuild).toBe('10.0.17763');
    expect(aliasParameters('windows2025@latest', '1.34')[0]?.windowsBuild).toBe('10.0.26100');
  });
});

describe('instance types of a Windows NodeClass', () => {
  // Two types as DescribeInstanceTypes describes them, priced on demand in one zone.
  const cached = (name: string, arch: 'x86_64' | 'arm64') =>
    toCachedInstanceType(
      {
        InstanceType: name as _InstanceType,
        ProcessorInfo: { SupportedArchitectures: [arch] },
        VCpuInfo: { DefaultVCpus: 2 },
        MemoryInfo: { SizeInMiB: 8192 },
        NetworkInfo: { MaximumNetworkInterfaces: 3, Ipv4AddressesPerInterface: 10 },
        SupportedUsageClasses: ['on-demand'],
      },
      new Set(['us-east-1a']),
      new Map(),
      { onDemand: new Map([[name, 0.096]]), spot: new Map() },
      0,
    );
  const nodeClass = (family: AmiFamily): EC2NodeClass => ({
    ...readyNodeClass(new Date('2026-11-21T10:00:00Z')),
    spec: { ...DEFAULT_NODE_CLASS.spec, amiSelectorTerms: [{ id: 'ami-1' }], amiFamily: family },
  });
  const types = (family: AmiFamily) =>
    toInstanceTypes(
      [cached('m5.large', 'x86_64'), cached('m6g.large', 'arm64')].flatMap((t) => t ?? []),
      {
        region: 'us-east-1',
        nodeClass: nodeClass(family),
        family,
        unavailable: new Set(),
      },
    );

  it('are amd64 only, labelled windows with their build, 110 pods and a 50Gi C: drive', () => {
    const [m5, ...rest] = types('Windows2022');
    expect(rest).toEqual([]);
    expect(m5?.labels).toMatchObject({
      'kubernetes.io/os': 'windows',
      'node.kubernetes.io/windows-build': '10.0.20348',
    });
    expect(m5?.capacity).toMatchObject({ pods: 110, 'ephemeral-storage': 50 * 1024 ** 3 });
  });

  it('stay linux, ENI-limited and both architectures for a Linux family', () => {
    const linux = types('AL2');
    expect(linux.map((t) => t.name)).toEqual(['m5.large', 'm6g.large']);
    expect(linux[0]?.labels['kubernetes.io/os']).toBe('linux');
    expect(linux[0]?.labels['node.kubernetes.io/windows-build']).toBeUndefined();
    expect(linux[0]?.capacity['pods']).toBe(29);
  });
});
