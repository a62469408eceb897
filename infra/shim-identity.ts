import { Stack } from 'aws-cdk-lib';
import * as eks from 'aws-cdk-lib/aws-eks';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface ShimIdentityProps {
  readonly clusterName: string;
  /** Namespace of the shim. */
  readonly namespace: string;
  /** ServiceAccount of the shim. */
  readonly serviceAccount: string;
  /** The pod-event queue, the one thing the shim may send to. */
  readonly podEventQueue: sqs.IQueue;
  /** ARNs of the cluster's summary objects, the only objects the shim may write (summary-bucket.ts). */
  readonly summaryObjectArns: readonly string[];
  /**
   * Associate the role with the ServiceAccount through EKS Pod Identity.
   * @default true
   */
  readonly podIdentity?: boolean;
}

/**
 * The shim's AWS identity: a role only the shim's ServiceAccount in this cluster can assume
 * (through EKS Pod Identity) and that may only send to the pod-event queue and write the cluster's
 * summary object. Built into `scope` (see construct-kit.ts): `ShimRole`, `ShimPodIdentity`.
 */
export class ShimIdentity {
  readonly role: iam.Role;

  constructor(scope: Construct, props: ShimIdentityProps) {
    const { clusterName, namespace, serviceAccount } = props;
    this.role = new iam.Role(scope, 'ShimRole', {
      description: `Flotilla ${clusterName} shim (${namespace}/${serviceAccount}): send pod events, publish the cluster summary`,
      // EKS Pod Identity tags each session with the pod's cluster, namespace and ServiceAccount:
      // only the shim's own association can assume the role, not any other in the account.
      assumedBy: new iam.ServicePrincipal('pods.eks.amazonaws.com').withSessionTags().withConditions({
        StringEquals: {
          'aws:SourceAccount': Stack.of(scope).account,
          'aws:RequestTag/eks-cluster-name': clusterName,
          'aws:RequestTag/kubernetes-namespace': namespace,
          'aws:RequestTag/kubernetes-service-account': serviceAccount,
        },
      }),
      inlinePolicies: {
        SendPodEvents: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              sid: 'AllowSendPodEvents',
              actions: ['sqs:SendMessage'],
              resources: [props.podEventQueue.queueArn],
            }),
          ],
        }),
        PublishClusterSummary: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              sid: 'AllowPublishClusterSummary',
              actions: ['s3:PutObject'],
              resources: [...props.summaryObjectArns],
              // The bucket's name is predictable: never write to a bucket of that name in another account.
              conditions: { StringEquals: { 'aws:ResourceAccount': Stack.of(scope).account } },
            }),
          ],
        }),
      },
    });
    if (props.podIdentity ?? true) {
      new eks.CfnPodIdentityAssociation(scope, 'ShimPodIdentity', {
        clusterName,
        namespace,
        serviceAccount,
        roleArn: this.role.roleArn,
      });
    }
  }
}
