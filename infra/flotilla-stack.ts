import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { FlotillaCluster, type FlotillaClusterProps } from './flotilla-cluster.ts';
import { NAME_PREFIX } from './stack-mode.ts';

/** The props of a FlotillaStack: a stack's own and its FlotillaCluster's (`mode` among them). */
export interface FlotillaStackProps extends StackProps, FlotillaClusterProps {}

/** One stack per EKS cluster and mode, holding one `FlotillaCluster`. */
export class FlotillaStack extends Stack {
  readonly flotilla: FlotillaCluster;

  constructor(scope: Construct, id: string, props: FlotillaStackProps) {
    super(scope, id, {
      description:
        props.mode === 'shadow'
          ? `Flotilla in shadow mode for EKS cluster ${props.clusterName}: decides beside the cluster's autoscaler and only logs`
          : `Flotilla node autoscaling for EKS cluster ${props.clusterName}`,
      ...props,
    });
    this.flotilla = new FlotillaCluster(this, 'Flotilla', props);
  }
}

/** The stack name of a cluster: `Flotilla-<clusterName>` (underscores, which stack names refuse, become '-'). */
export function stackNameFor(clusterName: string): string {
  return `${NAME_PREFIX.live.pascal}-${clusterName.replaceAll('_', '-')}`;
}

/** The stack name of a cluster's shadow stack, beside its live one: `FlotillaShadow-<clusterName>`. */
export function shadowStackNameFor(clusterName: string): string {
  return `${NAME_PREFIX.shadow.pascal}-${clusterName.replaceAll('_', '-')}`;
}
