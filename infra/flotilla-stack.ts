import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { FlotillaCluster, type FlotillaClusterProps } from './flotilla-cluster.ts';

export interface FlotillaStackProps extends StackProps, FlotillaClusterProps {}

/** One stack per EKS cluster, holding one `FlotillaCluster`. */
export class FlotillaStack extends Stack {
  readonly flotilla: FlotillaCluster;

  constructor(scope: Construct, id: string, props: FlotillaStackProps) {
    super(scope, id, {
      description: `Flotilla node autoscaling for EKS cluster ${props.clusterName}`,
      ...props,
    });
    this.flotilla = new FlotillaCluster(this, 'Flotilla', props);
  }
}

/** The stack name of a cluster: `Flotilla-<clusterName>` (underscores, which stack names refuse, become '-'). */
export function stackNameFor(clusterName: string): string {
  return `Flotilla-${clusterName.replaceAll('_', '-')}`;
}
