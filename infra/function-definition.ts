import type { Duration } from 'aws-cdk-lib';
import type { EnvVarKey } from '../shared/runtime/env.ts';
import type { MemoryModel } from './cluster-size.ts';

// The shape of one row of FLOTILLA_FUNCTIONS (functions.ts): what triggers a Lambda, the
// permission bundles its role may get, and the row itself.

/** The EventBridge schedules of a cluster; each may drive one Lambda. */
export type ScheduleName =
  | 'pendingPods'
  | 'catalogRefresh'
  | 'garbageCollection'
  | 'disruption'
  /** EC2's instance status checks and scheduled events, polled by the interruption Lambda. */
  | 'instanceStatus'
  /** A shadow stack's daily comparison, just after midnight UTC. */
  | 'shadowReport';

/** The work queues of a cluster (each has its own dead-letter queue). */
export type QueueName = 'podEvents' | 'interruption' | 'termination' | 'disruptionPasses';

/** What invokes a Lambda. */
export type Trigger =
  | { readonly kind: 'schedule'; readonly schedule: ScheduleName }
  /**
   * The stack being deleted: a custom resource whose deletion invokes the Lambda, after every other
   * Lambda of the stack (and so its triggers) is gone (unless the stack's cleanUpOnDestroy is false).
   */
  | { readonly kind: 'stackDeleted' }
  /** EKS DeleteCluster of this cluster, as CloudTrail reports it to EventBridge. */
  | { readonly kind: 'clusterDeleted' }
  | {
      readonly kind: 'queue';
      readonly queue: QueueName;
      /** Messages per invocation. */
      readonly batchSize: number;
      /** How long SQS gathers a batch before invoking. */
      readonly maxBatchingWindow?: Duration;
      /** Concurrent invocations the event source mapping may run (2 to 1000). */
      readonly maxConcurrency?: number;
    };

/**
 * Permission bundles a Lambda's role can get; each grants only actions the code that needs it
 * calls. The EC2 bundles are managed policies of the stack, built whether or not a Lambda uses them:
 * - `describeInstances`: ec2:DescribeInstances in this region.
 * - `describeInstanceStatus`: ec2:DescribeInstanceStatus in this region (node repair's impaired
 *   instances, the interruption Lambda's instance status poll).
 * - `describeCapacityReservations`: ec2:DescribeCapacityReservations in this region (EC2NodeClass
 *   capacity reservations and what each can still take).
 * - `resolveNodeClasses`: DescribeSubnets, DescribeSecurityGroups, DescribeImages in this region and
 *   ssm:GetParameter on AWS's public parameters under /aws/service/.
 * - `describeCatalog`: DescribeInstanceTypes, DescribeInstanceTypeOfferings,
 *   DescribeAvailabilityZones, DescribeSpotPriceHistory in this region, pricing:GetProducts (not
 *   with `isolatedVPC`).
 * - `launch`: DescribeLaunchTemplates and DescribeSubnets; CreateFleet/RunInstances/
 *   CreateLaunchTemplate only with this cluster's ownership tags in the request, CreateTags at
 *   creation or of the last-use tag on owned templates, iam:PassRole of the node role to EC2 only.
 * - `cleanLaunchTemplates`: DescribeLaunchTemplates, DescribeTags, and DeleteLaunchTemplate on
 *   templates owned by this cluster.
 * - `manageInstanceProfiles`: create, tag, change and delete instance profiles carrying this
 *   cluster's tags (for EC2NodeClasses with `spec.role`), read any.
 * - `terminate`: TerminateInstances on instances owned by this cluster only.
 * - `stateRead` / `stateWrite`: GetItem and Query / PutItem, UpdateItem and BatchWriteItem on the
 *   state table.
 * - `readSummary`: s3:GetObject on this cluster's two summary objects
 *   (`clusters/<cluster>/summary.json.gz` and `summary-changes.json.gz` beside it) in the summary
 *   bucket, only in this account; nothing else in the bucket, no listing.
 * - `sendTermination`: send requests to the termination queue.
 * - `sendPodEvents`: send to the pod-event queue (the provisioner's delayed follow-ups to itself).
 * - `sendDisruptionPasses`: send to the disruption queue (the disruption Lambda's passes between
 *   its schedule's ticks, to itself).
 * - `kubernetes`: eks:DescribeCluster on this cluster and an EKS access entry mapping the role to
 *   the controller group (RBAC in the cluster-side manifests).
 * - `publishDecisions`: events:PutEvents on the stack's decision bus (each decision also as an
 *   event there, see `decisionBus`).
 * - `readOwnStack`: cloudformation:DescribeStacks on this stack only (the clean-up tells the stack's
 *   deletion from an update that removes its custom resource).
 * - `readAlarms`: cloudwatch:DescribeAlarms on this account's alarms in this region (the alarms a
 *   NodePool names in `flotilla.io/rollout-alarms` hold its drift and expiration replacements).
 * - `armWakeUps`: create, update and delete schedules in the stack's EventBridge Scheduler group
 *   (list them), and pass the stack's wake-up role to EventBridge Scheduler only: one one-time
 *   schedule per NodePool whose `flotilla.io/schedules` change what they hold next.
 * - `readShadowLines`: logs:FilterLogEvents on the log groups of the stack's own deciding Lambdas
 *   (`SHADOW_LINE_SOURCES`), whose names the Lambda gets in `shadowLogGroups` (a shadow stack's
 *   shadow-report; lambda-functions.ts grants it, as only it knows the groups).
 */
export type Permission =
  | 'describeInstances'
  | 'describeInstanceStatus'
  | 'describeCapacityReservations'
  | 'resolveNodeClasses'
  | 'describeCatalog'
  | 'launch'
  | 'cleanLaunchTemplates'
  | 'manageInstanceProfiles'
  | 'terminate'
  | 'stateRead'
  | 'stateWrite'
  | 'readSummary'
  | 'sendTermination'
  | 'sendPodEvents'
  | 'sendDisruptionPasses'
  | 'kubernetes'
  | 'publishDecisions'
  | 'readAlarms'
  | 'armWakeUps'
  | 'readOwnStack'
  | 'readShadowLines';

/** One Flotilla Lambda: one row of `FLOTILLA_FUNCTIONS`. */
export interface FunctionDefinition {
  /** Short kebab-case name, used in construct ids, outputs and log group queries. */
  readonly name: string;
  /** Handler file relative to the repository root, e.g. `lambdas/catalog/handler.ts`. */
  readonly entry: string;
  readonly description: string;
  /** What invokes it; the provisioner, for one, has both a queue and a schedule. */
  readonly triggers: readonly Trigger[];
  /** Environment variables the Lambda gets (the values come from the stack). */
  readonly env: readonly EnvVarKey[];
  readonly permissions: readonly Permission[];
  /** @default Duration.seconds(60) */
  readonly timeout?: Duration;
  /** The least memory it gets, in MB. @default 512 */
  readonly memorySize?: number;
  /**
   * Runs outside the stack's VPC even when the others run in it: it talks to no private endpoint,
   * and must reach the AWS APIs it calls (and CloudFormation's answer URL) without one.
   */
  readonly outsideVpc?: true;
  /**
   * How its peak memory grows with the cluster (measured with `npm run bench:scale`): the stack
   * gives it enough for `clusterSize` with 30% headroom. @default none (`memorySize` whatever the size)
   */
  readonly memoryModel?: MemoryModel;
  /**
   * Invoke the function once when a deployment creates or changes it (asynchronously: a failure
   * does not fail the deployment, and the schedule tries again). @default false
   */
  readonly invokeOnDeploy?: boolean;
  /**
   * Reserved concurrency. Only where it helps: it also takes capacity away from the account's
   * unreserved pool, and accounts with the minimum concurrency limit cannot reserve any.
   * @default none
   */
  readonly reservedConcurrency?: number;
}

// The peak memory (RSS, MiB) of each Lambda that reads the cluster, as `npm run bench:scale`
// measured it on the API server at 500 nodes / 5,000 pods and 2,000 nodes / 30,000 pods with the
// shim's cluster summary in use, the highest of its steps and runs (BENCHMARKS.md, "Reading the
// cluster"). The stack gives each the line through the two for `clusterSize`, with 30% headroom.
