import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import { FlotillaError } from '../../core/errors.ts';
import { call } from './errors.ts';
import type { IpFamily } from './user-data.ts';

/** How to reach a cluster's API server and what user data needs to know about it. */
export interface ClusterAccess {
  /** The API server's https URL. */
  readonly endpoint: string;
  /** The cluster CA bundle, base64 PEM as EKS returns it. */
  readonly caData: string;
  /** The Kubernetes minor, e.g. `1.34` (AMI aliases resolve per version). */
  readonly kubernetesVersion: string;
  /** The service CIDR (IPv4, or IPv6 on an IPv6 cluster), when EKS reports one. */
  readonly serviceCidr?: string;
  /** The cluster's IP family, when EKS reports it. */
  readonly ipFamily?: IpFamily;
}

/** The cluster is not active (or lacks an endpoint or CA), so Flotilla cannot talk to it yet. */
export class ClusterNotReachableError extends FlotillaError {
  readonly code = 'ClusterNotReachable';
}

/**
 * Discovers the API server endpoint, CA, Kubernetes version and service CIDR of an EKS cluster
 * with eks:DescribeCluster, so the stack needs only the cluster's name.
 * @throws ClusterNotReachableError when the cluster is not ACTIVE or lacks an endpoint or CA;
 *   CloudApiError for other AWS errors (an unknown cluster among them).
 */
export async function describeClusterAccess(eks: EKSClient, clusterName: string): Promise<ClusterAccess> {
  const result = await call(
    'eks:DescribeCluster',
    () => eks.send(new DescribeClusterCommand({ name: clusterName })),
    `check that EKS cluster "${clusterName}" exists in this region`,
  );
  const cluster = result.cluster;
  const endpoint = cluster?.endpoint;
  const caData = cluster?.certificateAuthority?.data;
  const version = cluster?.version;
  if (cluster?.status !== 'ACTIVE' || !endpoint || !caData || !version) {
    throw new ClusterNotReachableError(
      `EKS cluster "${clusterName}" is ${cluster?.status ?? 'unknown'}${endpoint ? '' : ' without an endpoint'}${caData ? '' : ' without a CA'}; Flotilla starts once it is ACTIVE`,
    );
  }
  const network = cluster.kubernetesNetworkConfig;
  const ipFamily = network?.ipFamily === 'ipv6' ? 'ipv6' : network?.ipFamily === 'ipv4' ? 'ipv4' : undefined;
  const serviceCidr = ipFamily === 'ipv6' ? network?.serviceIpv6Cidr : network?.serviceIpv4Cidr;
  return {
    endpoint,
    caData,
    kubernetesVersion: version,
    ...(serviceCidr ? { serviceCidr } : {}),
    ...(ipFamily === undefined ? {} : { ipFamily }),
  };
}
