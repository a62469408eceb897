import { EC2Client } from '@aws-sdk/client-ec2';
import { makeClusterResources } from '../../adapters/aws/cluster-resources.ts';
import type { ClusterResources } from '../../ports/cluster-resources.ts';
import { makeLogger } from '../../runtime/logger.ts';

// What `flotilla cleanup --dry-run` reads: the cluster's instances and launch templates in EC2, with
// the user's AWS credentials, read-only.

export function awsResources(clusterName: string, region: string): ClusterResources {
  const logger = makeLogger({}, { level: 'error', sink: () => {} });
  return makeClusterResources({ ec2: new EC2Client({ region, maxAttempts: 5 }), clusterName, logger });
}
