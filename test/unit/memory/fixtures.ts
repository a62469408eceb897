import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { computeNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';

export const CLUSTER = 'sim-cluster';

/** A parsed EC2NodeClass as the simulator holds it (defaults applied). */
export const DEFAULT_NODE_CLASS: EC2NodeClass = {
  name: 'default',
  generation: 1,
  spec: {
    subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': CLUSTER } }],
    securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': CLUSTER } }],
    amiSelectorTerms: [{ alias: 'al2023@latest' }],
    instanceProfile: 'KarpenterNodeInstanceProfile',
    tags: { team: 'platform' },
    metadataOptions: {
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 1,
      httpTokens: 'required',
    },
  },
};

/** DEFAULT_NODE_CLASS as the EC2NodeClass controller resolves it at `at`: one subnet, Ready. */
export function readyNodeClass(at: Date): EC2NodeClass {
  return {
    ...DEFAULT_NODE_CLASS,
    status: computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      {
        subnets: { kind: 'resolved', value: [{ id: 'subnet-a', zone: 'us-east-1a' }] },
        securityGroups: { kind: 'resolved', value: [{ id: 'sg-1' }] },
        amis: { kind: 'resolved', value: [{ id: 'ami-1', requirements: [] }] },
        instanceProfile: { kind: 'resolved', value: 'profile' },
      },
      at,
    ).status,
  };
}

/** An active On-Demand Capacity Reservation for one m5.large in us-east-1b. */
export const RESERVATION = {
  id: 'cr-0123456789abcdef0',
  availabilityZone: 'us-east-1b',
  instanceType: 'm5.large',
  instanceMatchCriteria: 'targeted' as const,
  ownerID: '123456789012',
  reservationType: 'default' as const,
  state: 'active' as const,
};
