import type { InstanceType, NodeClaimPlan, Pod } from '../../../../shared/core/index.ts';
import type { EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import type { ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import { clusterNodePool, pod as fixturePod } from '../../../fixtures/builders.ts';

// Builders of the domain values the provisioning plan maps (instance types, pods, NodePools, plans).

const GiB = 1024 ** 3;

export function instanceType(
  name: string,
  cpus: number,
  price: number,
  zones = ['us-east-1a'],
): InstanceType {
  return {
    name,
    labels: {
      'node.kubernetes.io/instance-type': name,
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'karpenter.k8s.aws/instance-family': name.split('.')[0] ?? name,
    },
    capacity: { cpu: cpus * 1000, memory: cpus * 4 * GiB, pods: 29 },
    overhead: { kubeReserved: { cpu: 80 }, systemReserved: {}, evictionThreshold: {} },
    offerings: [
      ...zones.map((zone) => ({
        zone,
        capacityType: 'on-demand' as const,
        priceUsdPerHour: price,
        available: true,
      })),
      ...zones.map((zone) => ({
        zone,
        capacityType: 'spot' as const,
        priceUsdPerHour: price / 3,
        available: true,
      })),
    ],
  };
}

/** A pending pod asking `cpuMillis` CPU and 256 MiB. */
export function pod(name: string, cpuMillis: number, extra: Partial<Pod> = {}): Pod {
  return fixturePod(name, {
    containers: [{ name: 'app', requests: { cpu: cpuMillis, memory: 256 * 1024 ** 2 } }],
    ...extra,
  });
}

export const nodeClass: EC2NodeClass = {
  name: 'default',
  spec: {
    subnetSelectorTerms: [{ tags: { discovery: 'x' } }],
    securityGroupSelectorTerms: [{ tags: { discovery: 'x' } }],
    amiSelectorTerms: [{ alias: 'al2023@latest' }],
    metadataOptions: {
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 1,
      httpTokens: 'required',
    },
  },
  status: {
    subnets: [{ id: 'subnet-a', zone: 'us-east-1a' }],
    securityGroups: [{ id: 'sg-1' }],
    amis: [{ id: 'ami-1', requirements: [] }],
    conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }],
  },
};

/** A NodePool `name`, `extra` merged into its scheduling view and `more` replacing fields. */
export function nodePool(
  name: string,
  extra: Partial<ClusterNodePool['pool']> = {},
  more: Partial<ClusterNodePool> = {},
): ClusterNodePool {
  return clusterNodePool(name, { ...more, pool: { ...extra, ...more.pool } });
}

export function plan(extra: Partial<NodeClaimPlan> = {}): NodeClaimPlan {
  return {
    name: 'solver-name',
    nodePoolName: 'general',
    nodeClassName: 'default',
    labels: { team: 'web' },
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
      { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['c5.large', 'm5.large'] },
    ],
    taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'example.com/booting', effect: 'NoSchedule' }],
    pods: [{ uid: 'u1', namespace: 'apps', name: 'web-1' }],
    requests: { cpu: 1000, pods: 1 },
    instanceTypes: [
      { name: 'c5.large', priceUsdPerHour: 0.085 },
      { name: 'm5.large', priceUsdPerHour: 0.096 },
    ],
    minValuesRelaxed: false,
    ...extra,
  };
}
