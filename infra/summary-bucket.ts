import { createHash } from 'node:crypto';
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { summaryChangesObjectKey } from '../shared/apis/summary-changes.ts';
import { summaryBucketName, summaryObjectKey } from '../shared/apis/summary-document.ts';
import { acknowledge } from './construct-kit.ts';
import type { StackMode } from './stack-mode.ts';

/** The cluster's part of the summary bucket's name: the first 12 lowercase hex digits of SHA-256(name). */
export function summaryClusterHash(clusterName: string): string {
  return createHash('sha256').update(clusterName).digest('hex').slice(0, 12);
}

/**
 * The summary bucket's name for a cluster in an account and region (either may be a CloudFormation
 * token): `flotilla-<account>-<region>-<clusterHash>`, fixed so that the shim's Deployment can name it
 * before the stack is deployed; a shadow stack's ends in `-shadow` (still under S3's 63 characters).
 */
export function summaryBucketNameFor(
  account: string,
  region: string,
  clusterName: string,
  mode: StackMode = 'live',
): string {
  const name = summaryBucketName(account, region, summaryClusterHash(clusterName));
  return mode === 'live' ? name : `${name}-shadow`;
}

export interface SummaryBucketProps {
  readonly clusterName: string;
  /** @default 'live' */
  readonly mode?: StackMode;
}

/**
 * The bucket the shim publishes the cluster summary to: one object per cluster
 * (`summaryObjectKey`), overwritten every few seconds, read by the Lambdas that read the cluster.
 * S3-managed encryption, no public access, TLS only, no versioning (each write replaces a cache that
 * is rebuilt from the cluster in seconds), ACLs disabled. Deleting the stack empties it first (CDK's
 * auto-delete custom resource, which denies new writes before it deletes the object), so the stack's
 * deletion does not fail on the shim's last write. Built into `scope` (see construct-kit.ts):
 * `SummaryBucket` (with its `Policy`, `AutoDeleteObjectsCustomResource`) and, once per stack, CDK's
 * `Custom::S3AutoDeleteObjectsCustomResourceProvider`.
 */
export class SummaryBucket {
  readonly bucket: s3.Bucket;
  /**
   * ARNs of the cluster's two summary objects (its whole document and the changes since it), the
   * objects the shim writes and the Lambdas read.
   */
  readonly objectArns: readonly string[];

  constructor(scope: Construct, props: SummaryBucketProps) {
    const stack = Stack.of(scope);
    this.bucket = new s3.Bucket(scope, 'SummaryBucket', {
      bucketName: summaryBucketNameFor(stack.account, stack.region, props.clusterName, props.mode),
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: false,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: true,
    });
    this.objectArns = [
      this.bucket.arnForObjects(summaryObjectKey(props.clusterName)),
      this.bucket.arnForObjects(summaryChangesObjectKey(props.clusterName)),
    ];
    acknowledge(
      this.bucket,
      ['AwsSolutions-S1'],
      'The bucket holds one object, a cache of the cluster that the shim overwrites every few seconds: access logs would record each of those writes and reads in another bucket and add nothing IAM does not already settle (only the shim role writes the object, only the Lambda roles read it); CloudTrail data events can be turned on when an audit needs them.',
    );
  }
}
