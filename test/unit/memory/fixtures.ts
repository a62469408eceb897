import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';

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
