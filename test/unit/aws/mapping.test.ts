import { describe, expect, it } from 'vitest';
import { aliasParameters, amiQueries, nodeClassFamily } from '../../../shared/adapters/aws/ami.ts';
import { computeBackoffMs } from '../../../shared/adapters/aws/clients.ts';
import { chunkInstanceTypes } from '../../../shared/adapters/aws/dynamo-state.ts';
import { clientToken } from '../../../shared/adapters/aws/fleet-record.ts';
import {
  eniLimitedPods,
  labelsMatch,
  toCachedInstanceType,
} from '../../../shared/adapters/aws/instance-types.ts';
import { launchTags, MAX_INSTANCE_TYPES, selectCandidates } from '../../../shared/adapters/aws/launch.ts';
import { DEFAULT_METADATA_OPTIONS, parseEC2NodeClass } from '../../../shared/apis/index.ts';
import type { InstanceType, Offering } from '../../../shared/core/instance-type.ts';
import type { CachedInstanceType, LaunchRequest } from '../../../shared/ports/cloud.ts';

describe('computeBackoffMs (full jitter)', () => {
  it.each([
    [0, 100, 20_000, 0.5, 50],
    [1, 100, 20_000, 0.5, 100],
    [3, 100, 20_000, 0.99, 792],
    [10, 100, 20_000, 0.5, 10_000],
    [2, 500, 20_000, 0, 0],
  ])('retry %i base %i cap %i random %f → %i ms', (retry, base, cap, random, expected) => {
    expect(computeBackoffMs(retry, base, cap, () => random)).toBe(expected);
  });
});

describe('AMI selection', () => {
  it('defaults the owners of a name term to self and amazon, and keeps an explicit owner', () => {
    expect(amiQueries([{ name: 'my-ami-*' }])).toEqual([
      { Filters: [{ Name: 'name', Values: ['my-ami-*'] }], Owners: ['self', 'amazon'] },
    ]);
    expect(amiQueries([{ name: 'x', owner: '123456789012' }])[0]?.Owners).toEqual(['123456789012']);
    expect(amiQueries([{ tags: { team: 'a', any: '*' } }])).toEqual([
      {
        Filters: [
          { Name: 'tag:team', Values: ['a'] },
          { Name: 'tag-key', Values: ['any'] },
        ],
      },
    ]);
    expect(amiQueries([{ id: 'ami-123' }, { alias: 'al2023@latest' }])).toEqual([]);
  });

  it("uses Karpenter's public SSM parameter paths for aliases", () => {
    const al2023 = aliasParameters('al2023@latest', '1.34').map((p) => p.path);
    expect(al2023).toContain(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id',
    );
    expect(al2023).toContain(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/recommended/image_id',
    );
    expect(al2023).toContain(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/recommended/image_id',
    );
    expect(al2023).not.toContain(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/neuron/recommended/image_id',
    );
    expect(aliasParameters('al2023@v20250101', '1.33')[0]?.path).toBe(
      '/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20250101/image_id',
    );
    expect(aliasParameters('bottlerocket@latest', '1.34').map((p) => p.path)).toEqual([
      '/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id',
      '/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/latest/image_id',
      '/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id',
      '/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/latest/image_id',
    ]);
    expect(aliasParameters('bottlerocket@v1.20.3', '1.34')[0]?.path).toBe(
      '/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.20.3/image_id',
    );
    expect(aliasParameters('ubuntu@latest', '1.34')).toEqual([]);
    expect(nodeClassFamily({ amiSelectorTerms: [{ alias: 'bottlerocket@latest' }] })).toBe('Bottlerocket');
    expect(nodeClassFamily({ amiSelectorTerms: [{ id: 'ami-1' }], amiFamily: 'AL2023' })).toBe('AL2023');
  });
});

describe('parseEC2NodeClass', () => {
  const minimal = {
    metadata: { name: 'default' },
    spec: {
      subnetSelectorTerms: [{ tags: { a: 'b' } }],
      securityGroupSelectorTerms: [{ id: 'sg-1' }],
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      role: 'NodeRole',
      blockDeviceMappings: [
        { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '100Gi', volumeType: 'gp3' } },
      ],
    },
  };

  it('applies the IMDSv2 default and turns volume sizes into bytes', () => {
    const parsed = parseEC2NodeClass(minimal);
    expect(parsed.spec.metadataOptions).toEqual(DEFAULT_METADATA_OPTIONS);
    expect(parsed.spec.metadataOptions.httpTokens).toBe('required');
    expect(parsed.spec.blockDeviceMappings?.[0]?.ebs?.volumeSizeBytes).toBe(100 * 1024 ** 3);
  });

  it('lists every problem with its path', () => {
    expect(() => parseEC2NodeClass({ metadata: { name: 'bad' }, spec: { subnetSelectorTerms: [] } })).toThrow(
      /ec2NodeClass "bad": spec: .*spec\.subnetSelectorTerms.*spec\.securityGroupSelectorTerms/,
    );
  });
});

const offering = (
  zone: string,
  capacityType: Offering['capacityType'],
  price: number,
  available = true,
): Offering => ({
  zone,
  capacityType,
  priceUsdPerHour: price,
  available,
});

function type(name: string, offerings: Offering[], labels: Record<string, string> = {}): InstanceType {
  return {
    name,
    labels: { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': name, ...labels },
    capacity: { cpu: 2000, memory: 4 * 1024 ** 3, pods: 29 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings,
  };
}

function launch(instanceTypes: InstanceType[], capacityTypes = ['spot', 'on-demand']): LaunchRequest {
  return {
    nodeClaimName: 'general-x1',
    nodePoolName: 'general',
    nodeClass: {
      name: 'default',
      spec: {
        subnetSelectorTerms: [],
        securityGroupSelectorTerms: [],
        amiSelectorTerms: [],
        metadataOptions: DEFAULT_METADATA_OPTIONS,
        tags: { team: 'web' },
      },
      status: {
        subnets: [
          { id: 'subnet-a', zone: 'us-east-1a' },
          { id: 'subnet-b', zone: 'us-east-1b' },
        ],
        securityGroups: [],
        amis: [
          { id: 'ami-1', requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] },
        ],
        conditions: [],
      },
    },
    instanceTypes,
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: capacityTypes }],
    labels: {},
    taints: [],
    startupTaints: [],
  };
}

describe('selectCandidates', () => {
  const cheap = type('t3.medium', [
    offering('us-east-1a', 'on-demand', 0.04),
    offering('us-east-1a', 'spot', 0.015),
  ]);
  const dear = type('m5.large', [
    offering('us-east-1b', 'on-demand', 0.096),
    offering('us-east-1b', 'spot', 0.01),
  ]);

  it('prefers spot when allowed and orders by the cheapest offering', () => {
    const result = selectCandidates(launch([cheap, dear]), new Set(), new Map());
    expect(result?.capacityType).toBe('spot');
    expect(result?.candidates.map((c) => c.type.name)).toEqual(['m5.large', 't3.medium']);
  });

  it('falls back to on-demand when spot is not allowed or backed off everywhere', () => {
    expect(selectCandidates(launch([cheap, dear], ['on-demand']), new Set(), new Map())?.capacityType).toBe(
      'on-demand',
    );
    const backedOff = new Set(['spot:t3.medium:us-east-1a', 'spot:m5.large:us-east-1b']);
    const result = selectCandidates(launch([cheap, dear]), backedOff, new Map());
    expect(result?.capacityType).toBe('on-demand');
    expect(result?.candidates.map((c) => c.type.name)).toEqual(['t3.medium', 'm5.large']);
  });

  it('takes reserved capacity first when present', () => {
    const reserved = type('c5.large', [
      offering('us-east-1a', 'reserved', 0.00001),
      offering('us-east-1a', 'on-demand', 0.085),
    ]);
    expect(
      selectCandidates(launch([cheap, reserved], ['reserved', 'spot', 'on-demand']), new Set(), new Map()),
    ).toMatchObject({
      capacityType: 'reserved',
      candidates: [{ type: { name: 'c5.large' } }],
    });
  });

  it('ignores zones without a subnet, types without an AMI, and GPU types while ordinary ones fit', () => {
    const elsewhere = type('c6i.large', [offering('us-east-1d', 'spot', 0.001)]);
    const arm = type('m6g.large', [offering('us-east-1a', 'spot', 0.001)], { 'kubernetes.io/arch': 'arm64' });
    const gpu = type('g4dn.xlarge', [offering('us-east-1a', 'spot', 0.001)], {
      'karpenter.k8s.aws/instance-gpu-count': '1',
    });
    expect(
      selectCandidates(launch([elsewhere, arm, gpu, cheap]), new Set(), new Map())?.candidates.map(
        (c) => c.type.name,
      ),
    ).toEqual(['t3.medium']);
    expect(selectCandidates(launch([gpu]), new Set(), new Map())?.candidates.map((c) => c.type.name)).toEqual(
      ['g4dn.xlarge'],
    );
    expect(selectCandidates(launch([elsewhere]), new Set(), new Map())).toBeUndefined();
  });

  it(`keeps at most the ${MAX_INSTANCE_TYPES} cheapest types`, () => {
    const many = Array.from({ length: 100 }, (_, i) =>
      type(`x${i}.large`, [offering('us-east-1a', 'spot', 1 + i)]),
    );
    const result = selectCandidates(launch(many.reverse()), new Set(), new Map());
    expect(result?.candidates).toHaveLength(60);
    expect(result?.candidates[0]?.type.name).toBe('x0.large');
    expect(result?.candidates.at(-1)?.type.name).toBe('x59.large');
  });
});

describe('launch tags and client token', () => {
  it('tags like Karpenter, NodeClass tags included', () => {
    expect(launchTags(launch([]), 'prod')).toEqual({
      team: 'web',
      'kubernetes.io/cluster/prod': 'owned',
      'eks:eks-cluster-name': 'prod',
      'karpenter.sh/nodepool': 'general',
      'karpenter.k8s.aws/ec2nodeclass': 'default',
      'karpenter.sh/nodeclaim': 'general-x1',
      Name: 'general/general-x1',
    });
  });

  it('derives the client token from the NodeClaim name and the request, within 64 characters', () => {
    const fleet = (capacity: number) => ({
      Type: 'instant' as const,
      LaunchTemplateConfigs: [],
      TargetCapacitySpecification: { TotalTargetCapacity: capacity },
    });
    expect(clientToken('n'.repeat(80), fleet(1)).length).toBeLessThanOrEqual(64);
    const same = clientToken('claim', fleet(1));
    expect(same).toMatch(/^claim-[0-9a-f]{12}$/);
    expect(clientToken('claim', fleet(1))).toBe(same);
    expect(clientToken('claim', fleet(2))).not.toBe(same);
  });
});

describe('instance types', () => {
  it('maps DescribeInstanceTypes to well-known labels, GPU data and zonal offerings', () => {
    const cached = toCachedInstanceType(
      {
        InstanceType: 'g5.xlarge',
        ProcessorInfo: {
          SupportedArchitectures: ['x86_64'],
          Manufacturer: 'AMD',
          SustainedClockSpeedInGhz: 3.3,
        },
        VCpuInfo: { DefaultVCpus: 4 },
        MemoryInfo: { SizeInMiB: 16384 },
        GpuInfo: {
          Gpus: [{ Name: 'A10G', Manufacturer: 'NVIDIA', Count: 1, MemoryInfo: { SizeInMiB: 24576 } }],
        },
        NetworkInfo: {
          MaximumNetworkInterfaces: 4,
          Ipv4AddressesPerInterface: 15,
          NetworkCards: [{ BaselineBandwidthInGbps: 2.5 }],
        },
        InstanceStorageInfo: { TotalSizeInGB: 250, NvmeSupport: 'required' },
        Hypervisor: 'nitro',
        SupportedUsageClasses: ['on-demand', 'spot'],
      },
      new Set(['us-east-1b', 'us-east-1a']),
      new Map([['us-east-1a', 'use1-az6']]),
      { onDemand: new Map([['g5.xlarge', 1.006]]), spot: new Map([['g5.xlarge:us-east-1a', 0.4]]) },
      0,
    );
    expect(cached?.labels).toMatchObject({
      'karpenter.k8s.aws/instance-category': 'g',
      'karpenter.k8s.aws/instance-generation': '5',
      'karpenter.k8s.aws/instance-gpu-name': 'a10g',
      'karpenter.k8s.aws/instance-gpu-manufacturer': 'nvidia',
      'karpenter.k8s.aws/instance-gpu-count': '1',
      'karpenter.k8s.aws/instance-gpu-memory': '24576',
      'karpenter.k8s.aws/instance-local-nvme': '250',
      'karpenter.k8s.aws/instance-network-bandwidth': '2500',
      'karpenter.k8s.aws/instance-cpu-manufacturer': 'amd',
      'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz': '3300',
    });
    expect(cached?.offerings).toEqual([
      { zone: 'us-east-1a', zoneId: 'use1-az6', capacityType: 'on-demand', priceUsdPerHour: 1.006 },
      { zone: 'us-east-1a', zoneId: 'use1-az6', capacityType: 'spot', priceUsdPerHour: 0.4 },
      { zone: 'us-east-1b', capacityType: 'on-demand', priceUsdPerHour: 1.006 },
      { zone: 'us-east-1b', capacityType: 'spot' },
    ]);
    expect(eniLimitedPods({ enis: 4, ipv4PerEni: 15 })).toBe(58);
  });

  it('matches labels against requirements', () => {
    const labels = { 'kubernetes.io/arch': 'amd64', 'karpenter.k8s.aws/instance-cpu': '4' };
    expect(labelsMatch(labels, [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }])).toBe(
      true,
    );
    expect(
      labelsMatch(labels, [{ key: 'karpenter.k8s.aws/instance-gpu-count', operator: 'DoesNotExist' }]),
    ).toBe(true);
    expect(labelsMatch(labels, [{ key: 'karpenter.k8s.aws/instance-gpu-count', operator: 'Exists' }])).toBe(
      false,
    );
    expect(
      labelsMatch(labels, [{ key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['2'] }]),
    ).toBe(true);
    expect(labelsMatch(labels, [{ key: 'kubernetes.io/arch', operator: 'NotIn', values: ['amd64'] }])).toBe(
      false,
    );
  });

  it('chunks the catalog so no item nears the DynamoDB item limit, and loses nothing', () => {
    const big = (i: number): CachedInstanceType => ({
      name: `t${i}.large`,
      arch: 'amd64',
      vcpu: 2,
      memoryMiB: 4096,
      labels: { padding: 'x'.repeat(5000) },
      gpu: { count: 0 },
      accelerator: { count: 0 },
      enis: 3,
      ipv4PerEni: 10,
      branchEnis: 0,
      efaCount: 0,
      bareMetal: false,
      localNvmeGiB: 0,
      offerings: [],
    });
    const types = Array.from({ length: 200 }, (_, i) => big(i));
    const chunks = chunkInstanceTypes(types, 100_000);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) expect(Buffer.byteLength(chunk)).toBeLessThanOrEqual(100_000);
    expect(chunks.flatMap((c) => JSON.parse(c) as CachedInstanceType[]).map((t) => t.name)).toEqual(
      types.map((t) => t.name),
    );
  });
});
