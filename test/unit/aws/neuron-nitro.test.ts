import type { InstanceTypeInfo } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { toCachedInstanceType, toInstanceTypes } from '../../../shared/adapters/aws/instance-types.ts';
import { launchTemplateData } from '../../../shared/adapters/aws/launch-templates.ts';
import { requestsEnclaves } from '../../../shared/adapters/launch-plan.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import { computeAllocatable, solve } from '../../../shared/core/index.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { nodePool, pod } from '../core/builders.ts';

// NeuronCores and Nitro Enclaves as Karpenter v1.14 reads them from DescribeInstanceTypes: the
// `aws.amazon.com/neuroncore` resource (devices × cores per device), the
// `karpenter.k8s.aws/nitro-sandbox` label, and enclaves for a NodeClaim that asks for
// `eks.amazonaws.com/nitro-sandbox`.

const ZONE = 'us-east-1a';

function info(name: string, o: Partial<InstanceTypeInfo> = {}): InstanceTypeInfo {
  return {
    InstanceType: name as InstanceTypeInfo['InstanceType'],
    ProcessorInfo: { SupportedArchitectures: ['x86_64'], Manufacturer: 'Intel' },
    VCpuInfo: { DefaultVCpus: 32 },
    MemoryInfo: { SizeInMiB: 131072 },
    NetworkInfo: { MaximumNetworkInterfaces: 8, Ipv4AddressesPerInterface: 30 },
    ...o,
  };
}

const TRN1 = info('trn1.32xlarge', {
  NeuronInfo: {
    NeuronDevices: [{ Count: 16, Name: 'Trainium', CoreInfo: { Count: 2, Version: 2 } }],
  },
  NitroEnclavesSupport: 'unsupported',
});
const INF2 = info('inf2.8xlarge', {
  NeuronInfo: {
    NeuronDevices: [{ Count: 1, Name: 'Inferentia2', CoreInfo: { Count: 2, Version: 2 } }],
  },
  NitroEnclavesSupport: 'unsupported',
});
const M6I = info('m6i.8xlarge', { NitroEnclavesSupport: 'supported' });
const M5 = info('m5.8xlarge');

function cached(type: InstanceTypeInfo, price: number) {
  const out = toCachedInstanceType(
    type,
    new Set([ZONE]),
    new Map(),
    { onDemand: new Map([[type.InstanceType ?? '', price]]), spot: new Map() },
    0,
  );
  if (out === undefined) throw new Error(`no cached type for ${type.InstanceType}`);
  return out;
}

function nodeClass(): EC2NodeClass {
  const parsed = parseEC2NodeClass({
    metadata: { name: 'default' },
    spec: {
      subnetSelectorTerms: [{ id: 'subnet-a' }],
      securityGroupSelectorTerms: [{ id: 'sg-1' }],
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      role: 'nodes',
    },
  });
  return {
    ...parsed,
    status: {
      subnets: [{ id: 'subnet-a', zone: ZONE }],
      securityGroups: [{ id: 'sg-1' }],
      amis: [{ id: 'ami-1', requirements: [] }],
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }],
    },
  };
}

const TYPES = toInstanceTypes([cached(TRN1, 21.5), cached(INF2, 1.97), cached(M6I, 1.5), cached(M5, 1.5)], {
  region: 'us-east-1',
  nodeClass: nodeClass(),
  family: 'AL2023',
  unavailable: new Set(),
});
const byName = new Map(TYPES.map((t) => [t.name, t]));

describe('aws.amazon.com/neuroncore', () => {
  it('is the first Neuron device count times its cores, recorded from DescribeInstanceTypes', () => {
    expect(cached(TRN1, 1).neuronCores).toBe(32);
    expect(cached(INF2, 1).neuronCores).toBe(2);
    expect(cached(M5, 1)).not.toHaveProperty('neuronCores');
  });

  it('is in the capacity and allocatable of Neuron types only, next to aws.amazon.com/neuron', () => {
    const trn1 = byName.get('trn1.32xlarge');
    expect(trn1?.capacity['aws.amazon.com/neuroncore']).toBe(32);
    expect(trn1?.capacity['aws.amazon.com/neuron']).toBe(16);
    expect(trn1 === undefined ? undefined : computeAllocatable(trn1)['aws.amazon.com/neuroncore']).toBe(32);
    expect(byName.get('m5.8xlarge')?.capacity['aws.amazon.com/neuroncore']).toBeUndefined();
  });

  it.each([
    ['2', ['inf2.8xlarge', 'trn1.32xlarge']],
    ['24', ['trn1.32xlarge']],
    ['33', undefined],
  ])('plans a pod that requests %s NeuronCores onto the types that have enough of them', (cores, types) => {
    const result = solve({
      pods: [pod({ cpu: '1', requests: { 'aws.amazon.com/neuroncore': cores } })],
      nodePools: [nodePool()],
      instanceTypes: new Map([['default', TYPES]]),
      nowMs: 1_700_000_000_000,
    });
    expect(result.nodeClaims[0]?.instanceTypes.map((t) => t.name)).toEqual(types);
    expect(result.unschedulable.length).toBe(types === undefined ? 1 : 0);
  });
});

describe('karpenter.k8s.aws/nitro-sandbox', () => {
  it("labels a type with EC2's NitroEnclavesSupport, and leaves the label off where EC2 does not say", () => {
    expect(cached(M6I, 1).nitroEnclaves).toBe(true);
    expect(cached(TRN1, 1).nitroEnclaves).toBe(false);
    expect(byName.get('m6i.8xlarge')?.labels['karpenter.k8s.aws/nitro-sandbox']).toBe('true');
    expect(byName.get('inf2.8xlarge')?.labels['karpenter.k8s.aws/nitro-sandbox']).toBe('false');
    expect(byName.get('m5.8xlarge')?.labels).not.toHaveProperty('karpenter.k8s.aws/nitro-sandbox');
  });

  it('is a label pods select instance types by', () => {
    const result = solve({
      pods: [pod({ cpu: '1', nodeSelector: { 'karpenter.k8s.aws/nitro-sandbox': 'true' } })],
      nodePools: [nodePool()],
      instanceTypes: new Map([['default', TYPES]]),
      nowMs: 1_700_000_000_000,
    });
    expect(result.nodeClaims.map((c) => c.instanceTypes.map((t) => t.name))).toEqual([['m6i.8xlarge']]);
  });

  it('launches a NodeClaim that requests eks.amazonaws.com/nitro-sandbox with enclaves, in a template of its own', () => {
    expect(requestsEnclaves({ requests: { cpu: 1000, 'eks.amazonaws.com/nitro-sandbox': 1 } })).toBe(true);
    expect(requestsEnclaves({ requests: { cpu: 1000 } })).toBe(false);
    expect(requestsEnclaves({})).toBe(false);
    const input = {
      nodeClass: nodeClass(),
      family: 'AL2023' as const,
      imageId: 'ami-1',
      userData: '',
      tags: {},
    };
    expect(launchTemplateData({ ...input, enclaves: true }).EnclaveOptions).toEqual({ Enabled: true });
    expect(launchTemplateData(input)).not.toHaveProperty('EnclaveOptions');
  });
});
