import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  type InstanceTypeContext,
  toCachedInstanceType,
  toInstanceTypes,
} from '../../../shared/adapters/aws/instance-types.ts';
import { launchTemplateData, launchTemplateName } from '../../../shared/adapters/aws/launch-templates.ts';
import {
  type ClusterInfo,
  clusterIpFamily,
  type IpFamily,
  renderUserData,
} from '../../../shared/adapters/aws/user-data.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import type { CachedInstanceType, EC2NodeClass, KubeletSpec } from '../../../shared/ports/cloud.ts';
import { validateNodeClass } from '../../../shared/usecases/nodeclass/status.ts';
import { nodeClassHash } from '../../../shared/usecases/state/new-nodeclaim.ts';

// The EC2NodeClass fields that shape a launch beyond AMI, network and user data: the instance-store
// policy, placement group, network interfaces (EFA), IP prefixes, CPU options, Nitro Enclaves and
// fleet context.
// From the manifest to the capacity the scheduler counts and the launch template EC2 is sent.

const GB = 1e9;
const CLUSTER: ClusterInfo = { name: 'c', endpoint: 'https://api.example.com', caBundle: 'Q0E=' };
const GiB = 1024 ** 3;

function manifest(spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'hpc', generation: 1 },
    spec: {
      subnetSelectorTerms: [{ tags: { discovery: 'c' } }],
      securityGroupSelectorTerms: [{ tags: { discovery: 'c' } }],
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      role: 'nodes',
      ...spec,
    },
  };
}

/** The class parsed from `spec`, with a resolved status (and `placementGroups` when given). */
function resolvedClass(spec: Record<string, unknown> = {}, placementGroupId?: string): EC2NodeClass {
  const parsed = parseEC2NodeClass(manifest(spec));
  return {
    ...parsed,
    status: {
      subnets: [{ id: 'subnet-a', zone: 'us-east-1a' }],
      securityGroups: [{ id: 'sg-1' }, { id: 'sg-2' }],
      amis: [{ id: 'ami-1', requirements: [] }],
      instanceProfile: 'hpc-profile',
      ...(placementGroupId === undefined
        ? {}
        : {
            placementGroups: [
              { id: placementGroupId, name: 'train', state: 'available', strategy: 'cluster' },
            ],
          }),
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }],
    },
  };
}

function cached(name: string, o: Partial<CachedInstanceType> = {}): CachedInstanceType {
  const labels = { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': name };
  const none = { count: 0 };
  return {
    ...{ name, arch: 'amd64', vcpu: 8, memoryMiB: 32768, labels, gpu: none, accelerator: none },
    ...{ enis: 4, ipv4PerEni: 15, branchEnis: 0, efaCount: 0, bareMetal: false, localNvmeGiB: 0 },
    offerings: [{ zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 1 }],
    ...o,
  };
}

const CATALOG = [
  cached('m5.2xlarge'),
  cached('m5d.2xlarge', { localNvmeGiB: 300 }),
  cached('c5n.18xlarge', { efaCount: 1, enis: 15, ipv4PerEni: 50 }),
  cached('p5.48xlarge', { efaCount: 32, enis: 64, ipv4PerEni: 50, localNvmeGiB: 30400 }),
  cached('m8i.2xlarge', { nestedVirtualization: true }),
  cached('m6i.2xlarge', { nitroEnclaves: true }),
];

function typesFor(nodeClass: EC2NodeClass) {
  const context: InstanceTypeContext = {
    region: 'us-east-1',
    nodeClass,
    family: 'AL2023',
    unavailable: new Set(),
  };
  return new Map(toInstanceTypes(CATALOG, context).map((t) => [t.name, t]));
}

const EFA_INTERFACES = [
  { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
  { networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' },
  { networkCardIndex: 1, deviceIndex: 0, interfaceType: 'efa-only' },
];

describe('parseEC2NodeClass: the launch-shaping fields', () => {
  it('reads every field of a Karpenter v1 manifest that sets them', () => {
    const fields = {
      instanceStorePolicy: 'RAID0',
      placementGroupSelector: { name: 'train' },
      networkInterfaces: EFA_INTERFACES,
      ipPrefixCount: 2,
      cpuOptions: { nestedVirtualization: 'enabled' },
      enclaveOptions: { enabled: true },
      context: 'c-0123',
    };
    const parsed = parseEC2NodeClass(manifest(fields));
    expect(parsed.spec).toMatchObject(fields);
    expect(parsed.unsupportedFields).toBeUndefined();
    expect(validateNodeClass(parsed)).toEqual([]);
  });

  it('names the spec fields it does not read, and the class is not valid while one is set', () => {
    const parsed = parseEC2NodeClass(manifest({ futureSetting: { enabled: true } }));
    expect(parsed.unsupportedFields).toEqual(['futureSetting']);
    expect(parsed.spec).not.toHaveProperty('futureSetting');
    expect(validateNodeClass(parsed)).toEqual([
      'spec.futureSetting is not supported by Flotilla; remove it (nodes would be launched without it)',
    ]);
  });

  it('reads connectionTracking as a supported field, so the class stays valid', () => {
    const tracking = { tcpEstablishedTimeout: 600, udpStreamTimeout: 120, udpTimeout: 30 };
    const parsed = parseEC2NodeClass(manifest({ connectionTracking: tracking }));
    expect(parsed.spec.connectionTracking).toEqual(tracking);
    expect(parsed.unsupportedFields).toBeUndefined();
    expect(validateNodeClass(parsed)).toEqual([]);
  });

  it.each<[string, Record<string, number>, RegExp]>([
    ['no timeout', {}, /at least one of tcpEstablishedTimeout/],
    ['a TCP timeout under 60 s', { tcpEstablishedTimeout: 59 }, /tcpEstablishedTimeout/],
    ['a UDP stream timeout over 180 s', { udpStreamTimeout: 181 }, /udpStreamTimeout/],
    ['a UDP timeout under 30 s', { udpTimeout: 29 }, /udpTimeout/],
  ])('refuses connectionTracking with %s, as the CRD does', (_, tracking, problem) => {
    expect(() => parseEC2NodeClass(manifest({ connectionTracking: tracking }))).toThrow(problem);
  });

  it('refuses enclaveOptions without enabled, as the CRD does', () => {
    expect(() => parseEC2NodeClass(manifest({ enclaveOptions: {} }))).toThrow(/enclaveOptions\.enabled/);
  });

  it.each<[string, unknown, string]>([
    [
      'no primary interface',
      [{ networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' }],
      "spec.networkInterfaces must include the primary interface (networkCardIndex 0, deviceIndex 0, interfaceType 'interface')",
    ],
    [
      'a card and device twice',
      [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
      ],
      'spec.networkInterfaces lists card 0 device 0 twice',
    ],
    [
      'two efa-only interfaces on one card',
      [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: 'efa-only' },
        { networkCardIndex: 1, deviceIndex: 1, interfaceType: 'efa-only' },
      ],
      'spec.networkInterfaces has more than one efa-only interface on card 1',
    ],
  ])(
    'reports network interfaces with %s (the CRD rule, for objects that skipped it)',
    (_, interfaces, problem) => {
      expect(validateNodeClass(parseEC2NodeClass(manifest({ networkInterfaces: interfaces })))).toEqual([
        problem,
      ]);
    },
  );

  it('reports a placement group selector with both or neither of name and id', () => {
    for (const selector of [{}, { name: 'train', id: 'pg-0abc' }]) {
      expect(validateNodeClass(parseEC2NodeClass(manifest({ placementGroupSelector: selector })))).toEqual([
        'spec.placementGroupSelector must set exactly one of name and id',
      ]);
    }
  });
});

describe('instance types under the launch-shaping fields', () => {
  it('RAID0 makes the instance store the ephemeral storage of types that have one; others keep the root volume', () => {
    const plain = typesFor(resolvedClass());
    const raid = typesFor(resolvedClass({ instanceStorePolicy: 'RAID0' }));
    expect(plain.get('m5d.2xlarge')?.capacity['ephemeral-storage']).toBe(20 * GiB);
    expect(raid.get('m5d.2xlarge')?.capacity['ephemeral-storage']).toBe(300 * GB);
    expect(raid.get('p5.48xlarge')?.capacity['ephemeral-storage']).toBe(30400 * GB);
    expect(raid.get('m5.2xlarge')?.capacity['ephemeral-storage']).toBe(20 * GiB);
    // The eviction threshold (10% of nodefs) follows the larger disk.
    expect(raid.get('m5d.2xlarge')?.overhead.evictionThreshold['ephemeral-storage']).toBe(30 * GB);
  });

  it('advertises vpc.amazonaws.com/efa: every EFA of a type without networkInterfaces, the efa-only ones with them', () => {
    const plain = typesFor(resolvedClass());
    expect(plain.get('c5n.18xlarge')?.capacity['vpc.amazonaws.com/efa']).toBe(1);
    expect(plain.get('p5.48xlarge')?.capacity['vpc.amazonaws.com/efa']).toBe(32);
    expect(plain.get('m5.2xlarge')?.capacity['vpc.amazonaws.com/efa']).toBeUndefined();

    const efa = typesFor(resolvedClass({ networkInterfaces: EFA_INTERFACES }));
    // Two efa-only interfaces: only types with at least two EFA interfaces are offered.
    expect([...efa.keys()]).toEqual(['p5.48xlarge']);
    expect(efa.get('p5.48xlarge')?.capacity['vpc.amazonaws.com/efa']).toBe(2);
    // The efa-only interface on card 0 takes an ENI from pod addresses: 63 × 49 + 2.
    expect(efa.get('p5.48xlarge')?.capacity['pods']).toBe(63 * 49 + 2);
    expect(plain.get('p5.48xlarge')?.capacity['pods']).toBe(64 * 49 + 2);
  });

  it('offers only types that support nested virtualization when cpuOptions enables it', () => {
    expect([...typesFor(resolvedClass({ cpuOptions: { nestedVirtualization: 'enabled' } })).keys()]).toEqual([
      'm8i.2xlarge',
    ]);
    expect(typesFor(resolvedClass({ cpuOptions: { nestedVirtualization: 'disabled' } })).size).toBe(
      CATALOG.length,
    );
  });

  it('offers only types EC2 reports Nitro Enclaves support for when enclaveOptions enables them', () => {
    expect([...typesFor(resolvedClass({ enclaveOptions: { enabled: true } })).keys()]).toEqual([
      'm6i.2xlarge',
    ]);
    expect(typesFor(resolvedClass({ enclaveOptions: { enabled: false } })).size).toBe(CATALOG.length);
  });

  it('offers only types on the Nitro hypervisor when connectionTracking is set', () => {
    const hypervisor = (name: string, value?: string) =>
      cached(name, {
        labels: {
          'kubernetes.io/arch': 'amd64',
          'node.kubernetes.io/instance-type': name,
          ...(value === undefined ? {} : { 'karpenter.k8s.aws/instance-hypervisor': value }),
        },
      });
    const catalog = [
      hypervisor('m5.2xlarge', 'nitro'),
      hypervisor('m4.2xlarge', 'xen'),
      hypervisor('m5.metal'),
    ];
    const typesOf = (nodeClass: EC2NodeClass) =>
      toInstanceTypes(catalog, {
        region: 'us-east-1',
        nodeClass,
        family: 'AL2023',
        unavailable: new Set(),
      }).map((t) => t.name);
    expect(typesOf(resolvedClass({ connectionTracking: { udpTimeout: 60 } }))).toEqual(['m5.2xlarge']);
    expect(typesOf(resolvedClass())).toEqual(['m5.2xlarge', 'm4.2xlarge', 'm5.metal']);
  });

  it.each([
    ['supported', true],
    ['unsupported', false],
    [undefined, undefined],
  ] as const)('reads NitroEnclavesSupport %s from DescribeInstanceTypes', (support, nitroEnclaves) => {
    const type = toCachedInstanceType(
      {
        InstanceType: 'm6i.2xlarge',
        ProcessorInfo: { SupportedArchitectures: ['x86_64'] },
        VCpuInfo: { DefaultVCpus: 8 },
        MemoryInfo: { SizeInMiB: 32768 },
        ...(support === undefined ? {} : { NitroEnclavesSupport: support }),
      },
      new Set(['us-east-1a']),
      new Map(),
      { onDemand: new Map([['m6i.2xlarge', 0.384]]), spot: new Map() },
      0,
    );
    expect(type?.nitroEnclaves).toBe(nitroEnclaves);
  });
});

describe('launchTemplateData under the launch-shaping fields', () => {
  const input = (nodeClass: EC2NodeClass) => ({
    nodeClass,
    family: 'AL2023' as const,
    imageId: 'ami-1',
    userData: '#!/bin/bash',
    tags: { 'karpenter.sh/nodepool': 'hpc' },
  });

  it('is unchanged for a class that sets none of them (the template name stays)', () => {
    const data = launchTemplateData(input(resolvedClass()));
    expect(data.SecurityGroupIds).toEqual(['sg-1', 'sg-2']);
    expect(data).not.toHaveProperty('NetworkInterfaces');
    expect(data).not.toHaveProperty('Placement');
    expect(data).not.toHaveProperty('CpuOptions');
  });

  it('attaches the listed interfaces per card and device, the primary one with the prefixes and public IP choice', () => {
    const data = launchTemplateData(
      input(
        resolvedClass({
          networkInterfaces: EFA_INTERFACES,
          ipPrefixCount: 2,
          associatePublicIPAddress: false,
        }),
      ),
    );
    expect(data).not.toHaveProperty('SecurityGroupIds');
    expect(data.NetworkInterfaces).toEqual([
      {
        NetworkCardIndex: 0,
        DeviceIndex: 0,
        InterfaceType: 'interface',
        DeleteOnTermination: true,
        AssociatePublicIpAddress: false,
        Ipv4PrefixCount: 2,
        Groups: ['sg-1', 'sg-2'],
      },
      {
        NetworkCardIndex: 0,
        DeviceIndex: 1,
        InterfaceType: 'efa-only',
        DeleteOnTermination: true,
        Groups: ['sg-1', 'sg-2'],
      },
      {
        NetworkCardIndex: 1,
        DeviceIndex: 0,
        InterfaceType: 'efa-only',
        DeleteOnTermination: true,
        Groups: ['sg-1', 'sg-2'],
      },
    ]);
  });

  it('gives IP prefixes alone a primary interface, and places into the resolved group with the CPU options', () => {
    const data = launchTemplateData(
      input(
        resolvedClass({ ipPrefixCount: 1, cpuOptions: { nestedVirtualization: 'enabled' } }, 'pg-0123abcd'),
      ),
    );
    expect(data.NetworkInterfaces).toEqual([
      { DeviceIndex: 0, Ipv4PrefixCount: 1, Groups: ['sg-1', 'sg-2'] },
    ]);
    expect(data.Placement).toEqual({ GroupId: 'pg-0123abcd' });
    expect(data.CpuOptions).toEqual({ NestedVirtualization: 'enabled' });
  });

  it('asks for Nitro Enclaves as the class says, in a template of its own', () => {
    const name = (spec: Record<string, unknown>) => {
      const data = launchTemplateData(input(resolvedClass(spec)));
      return { data, name: launchTemplateName('c', data, input(resolvedClass(spec)).tags) };
    };
    const unset = name({});
    const enabled = name({ enclaveOptions: { enabled: true } });
    const disabled = name({ enclaveOptions: { enabled: false } });
    expect(unset.data).not.toHaveProperty('EnclaveOptions');
    expect(enabled.data.EnclaveOptions).toEqual({ Enabled: true });
    expect(disabled.data.EnclaveOptions).toEqual({ Enabled: false });
    expect(new Set([unset.name, enabled.name, disabled.name]).size).toBe(3);
  });
});

describe('launchTemplateData under connectionTracking', () => {
  const input = (nodeClass: EC2NodeClass) => ({
    nodeClass,
    family: 'AL2023' as const,
    imageId: 'ami-1',
    userData: '#!/bin/bash',
    tags: {},
  });

  it('puts the timeouts on a primary interface of their own, in a template of its own', () => {
    const tracked = resolvedClass({ connectionTracking: { tcpEstablishedTimeout: 600, udpTimeout: 30 } });
    const data = launchTemplateData(input(tracked));
    expect(data).not.toHaveProperty('SecurityGroupIds');
    expect(data.NetworkInterfaces).toEqual([
      {
        DeviceIndex: 0,
        ConnectionTrackingSpecification: { TcpEstablishedTimeout: 600, UdpTimeout: 30 },
        Groups: ['sg-1', 'sg-2'],
      },
    ]);
    const plain = launchTemplateData(input(resolvedClass()));
    expect(launchTemplateName('c', data, {})).not.toBe(launchTemplateName('c', plain, {}));
  });

  it('puts them on every listed interface but the efa-only ones', () => {
    const data = launchTemplateData(
      input(
        resolvedClass({ networkInterfaces: EFA_INTERFACES, connectionTracking: { udpStreamTimeout: 90 } }),
      ),
    );
    expect(data.NetworkInterfaces?.map((n) => [n.InterfaceType, n.ConnectionTrackingSpecification])).toEqual([
      ['interface', { UdpStreamTimeout: 90 }],
      ['efa-only', undefined],
      ['efa-only', undefined],
    ]);
  });

  it('is part of the EC2NodeClass hash', () => {
    const before = nodeClassHash(resolvedClass());
    expect(nodeClassHash(resolvedClass({ connectionTracking: { udpTimeout: 30 } }))).not.toBe(before);
    expect(nodeClassHash(resolvedClass({ connectionTracking: { udpTimeout: 30 } }))).not.toBe(
      nodeClassHash(resolvedClass({ connectionTracking: { udpTimeout: 60 } })),
    );
  });
});

describe('IP prefixes on an IPv6 cluster', () => {
  const input = (nodeClass: EC2NodeClass, ipFamily: IpFamily) => ({
    nodeClass,
    family: 'AL2023' as const,
    imageId: 'ami-1',
    userData: '#!/bin/bash',
    tags: {},
    ipFamily,
  });

  it('asks for IPv6 prefixes and a primary IPv6 address on the primary interface instead of IPv4 prefixes', () => {
    const data = launchTemplateData(input(resolvedClass({ ipPrefixCount: 3 }), 'ipv6'));
    expect(data.NetworkInterfaces).toEqual([
      {
        DeviceIndex: 0,
        Ipv6PrefixCount: 3,
        PrimaryIpv6: true,
        Ipv6AddressCount: 1,
        Groups: ['sg-1', 'sg-2'],
      },
    ]);
    const efa = launchTemplateData(
      input(resolvedClass({ ipPrefixCount: 2, networkInterfaces: EFA_INTERFACES }), 'ipv6'),
    );
    expect(efa.NetworkInterfaces?.[0]).toMatchObject({ Ipv6PrefixCount: 2, PrimaryIpv6: true });
    expect(efa.NetworkInterfaces?.[0]).not.toHaveProperty('Ipv4PrefixCount');
    expect(efa.NetworkInterfaces?.slice(1).every((n) => n.Ipv6PrefixCount === undefined)).toBe(true);
    // Without prefixes or interfaces an IPv6 cluster's template is the plain one.
    expect(launchTemplateData(input(resolvedClass(), 'ipv6'))).not.toHaveProperty('NetworkInterfaces');
  });

  it.each<[string, ClusterInfo, KubeletSpec | undefined, IpFamily]>([
    ['EKS says ipv6', { ...CLUSTER, ipFamily: 'ipv6' }, undefined, 'ipv6'],
    [
      'EKS says ipv4, whatever the DNS address',
      { ...CLUSTER, ipFamily: 'ipv4' },
      { clusterDNS: ['fd00::a'] },
      'ipv4',
    ],
    ['an IPv6 service CIDR', { ...CLUSTER, serviceCidr: 'fd4b:19::/108' }, undefined, 'ipv6'],
    ['an IPv6 cluster DNS address', CLUSTER, { clusterDNS: ['fd4b:19::a'] }, 'ipv6'],
    ['an IPv4 service CIDR', { ...CLUSTER, serviceCidr: '172.20.0.0/16' }, undefined, 'ipv4'],
    ['nothing known', CLUSTER, undefined, 'ipv4'],
  ])('takes the IP family from %s', (_, cluster, kubelet, family) => {
    expect(clusterIpFamily(cluster, kubelet)).toBe(family);
  });

  it('has AL2 bootstrap.sh join an IPv6 cluster with --ip-family ipv6', () => {
    const common = { nodeClassName: 'hpc', labels: {}, taints: [], startupTaints: [] };
    const ipv6 = renderUserData({ ...common, family: 'AL2', cluster: { ...CLUSTER, ipFamily: 'ipv6' } });
    expect(ipv6).toContain('--ip-family ipv6');
    expect(renderUserData({ ...common, family: 'AL2', cluster: CLUSTER })).not.toContain('--ip-family');
  });
});

describe('user data under instanceStorePolicy: RAID0', () => {
  const common = {
    cluster: { name: 'c', endpoint: 'https://api.example.com', caBundle: 'Q0E=' },
    nodeClassName: 'hpc',
    labels: {},
    taints: [],
    startupTaints: [],
  };

  it('asks nodeadm to stripe the instance store (AL2023), and leaves it out without the policy', () => {
    const raid = renderUserData({ ...common, family: 'AL2023', instanceStorePolicy: 'RAID0' });
    const nodeConfig = parseAllDocuments(
      raid.split('# Flotilla generated NodeConfig\n')[1]?.split('\n--//')[0] ?? '',
    )[0]?.toJS() as {
      spec: { instance?: unknown };
    };
    expect(nodeConfig.spec.instance).toEqual({ localStorage: { strategy: 'RAID0' } });
    expect(renderUserData({ ...common, family: 'AL2023' })).not.toContain('localStorage');
  });

  it('has Bottlerocket bind its kubelet and containerd directories to the striped store', () => {
    const toml = renderUserData({ ...common, family: 'Bottlerocket', instanceStorePolicy: 'RAID0' });
    const settings = parseToml(toml)['settings'] as Record<string, Record<string, unknown>>;
    const mount = settings['bootstrap-commands']?.['000-mount-instance-storage'] as {
      commands: string[][];
      essential: boolean;
    };
    expect(mount.commands[0]).toEqual(['apiclient', 'ephemeral-storage', 'init']);
    expect(mount.commands[1]?.slice(0, 3)).toEqual(['apiclient', 'ephemeral-storage', 'bind']);
    expect(mount.commands[1]).toContain('/var/lib/kubelet');
    expect(mount.essential).toBe(true);
  });
});

describe('nodeClassHash and the launch-shaping fields', () => {
  it('keeps the hash of a class that sets none of them, and changes with each that shapes the instance', () => {
    const base = nodeClassHash(resolvedClass());
    // The hash this class had before enclaveOptions was read: a field added later leaves it alone.
    expect(base).toBe('8262480681033384618');
    expect(nodeClassHash(resolvedClass({ ipPrefixCount: 4 }))).toBe(base);
    expect(nodeClassHash(resolvedClass({ placementGroupSelector: { name: 'train' } }))).toBe(base);
    const changed = [
      { instanceStorePolicy: 'RAID0' },
      { networkInterfaces: EFA_INTERFACES },
      { cpuOptions: { nestedVirtualization: 'enabled' } },
      { context: 'c-1' },
      { enclaveOptions: { enabled: true } },
      { enclaveOptions: { enabled: false } },
    ].map((spec) => nodeClassHash(resolvedClass(spec)));
    expect(new Set([base, ...changed]).size).toBe(7);
  });
});
