import { Duration } from 'aws-cdk-lib';
import type { EnvVarKey } from '../shared/runtime/env.ts';
import { lineThrough, type MemoryModel } from './cluster-size.ts';
import type { FunctionDefinition } from './function-definition.ts';

export type {
  FunctionDefinition,
  Permission,
  QueueName,
  ScheduleName,
  Trigger,
} from './function-definition.ts';

const measured = (smallMiB: number, largeMiB: number): MemoryModel =>
  lineThrough(
    { nodes: 500, pods: 5_000, peakMiB: smallMiB },
    { nodes: 2_000, pods: 30_000, peakMiB: largeMiB },
  );
// Measured flat (236 and 228 MiB: its one NodeClaim list is small beside the runtime); it reads the
// objects the garbage collector reads, so it is given the garbage collector's growth.
const INTERRUPTION_MEMORY = measured(236, 236 + (384 - 233));
const TERMINATION_MEMORY = measured(304, 435);
/**
 * The line through 500 nodes / 5,000 pods and the highest peak measured at 5,000 nodes / 30,000
 * pods (BENCHMARKS.md, "At 5,000 nodes again"), for a function whose line through the two smaller
 * sizes fell short there; it passes above the peak measured at 2,000 nodes / 30,000 pods.
 */
const measuredTo5000 = (smallMiB: number, peakAt5000MiB: number): MemoryModel =>
  lineThrough(
    { nodes: 500, pods: 5_000, peakMiB: smallMiB },
    { nodes: 5_000, pods: 30_000, peakMiB: peakAt5000MiB },
  );
// 744 MiB at 2,000 nodes; 1,310 at 5,000 (a warm container that served six pods from the shim in a
// row, holding the NodeClaims it catches up with between runs: 70.6% of the 1,856 MB the line
// through 1,277 gave): the line through 500 nodes and 5,000 nodes.
const PROVISIONER_MEMORY = measuredTo5000(283, 1_310);
// Its peak is a pass that carries out consolidation commands (replacements created, candidates'
// pods listed), not the passes that only write conditions: 876 MiB at 2,000 nodes, 1,213 at 5,000
// (the first pass over a loaded cluster, which went on to consolidation).
const DISRUPTION_MEMORY = measuredTo5000(444, 1_213);
// 384 MiB at 2,000 nodes; 567 and 580 at 5,000 (75% of the 768 MB the line through the smaller
// sizes gave there).
const GARBAGE_COLLECTOR_MEMORY = measuredTo5000(233, 580);

/** The environment every Lambda gets. */
const baseEnv: readonly EnvVarKey[] = ['clusterName', 'stateTable', 'logLevel'];

// Every Lambda that reads the cluster (each row with `kubernetes`) also gets `summaryBucket`, `clusterSize` (the summary's limits) and
// `readSummary`: it reads the summary the shim publishes in one GetObject instead of listing the
// whole cluster.

/**
 * Refreshes the offering cache (instance types × zones × capacity types with prices) in the
 * state table.
 */
export const catalogFunction: FunctionDefinition = {
  name: 'catalog',
  entry: 'lambdas/catalog/handler.ts',
  description: 'Flotilla: refresh instance types, offerings and prices into the offering cache',
  triggers: [{ kind: 'schedule', schedule: 'catalogRefresh' }],
  // isolatedVPC: on-demand prices from the bundled table, never the Pricing API.
  env: [...baseEnv, 'isolatedVPC'],
  // The refresh also deletes launch templates no launch has used for an hour.
  permissions: ['describeCatalog', 'stateRead', 'stateWrite', 'cleanLaunchTemplates'],
  // DescribeInstanceTypes, offerings and a day of spot price history page through thousands of
  // records; a cold refresh takes well under a minute, the rest is headroom for throttling.
  timeout: Duration.minutes(5),
  memorySize: 1024,
  // A fresh install can launch as soon as the stack is up: no manual invoke, no hour's wait.
  invokeOnDeploy: true,
};

/**
 * Launches nodes for pending pods: batches them, solves, creates NodeClaims and launches them
 * through CreateFleet under the provisioner lease, then runs the NodeClaim lifecycle pass.
 * It finds the API server endpoint, CA and Kubernetes version with eks:DescribeCluster at cold
 * start (`ClusterAccessEnvVar` can set them instead).
 */
export const provisionerFunction: FunctionDefinition = {
  name: 'provisioner',
  entry: 'lambdas/provisioner/handler.ts',
  description: 'Flotilla: launch nodes for pending pods (NodeClaims and EC2 CreateFleet)',
  triggers: [
    {
      kind: 'queue',
      queue: 'podEvents',
      batchSize: 10,
      // No batching window: the provisioner batches pods itself (batchIdleDuration and
      // batchMaxDuration), and a window here would only add to the wait of every first pod.
      maxConcurrency: 2,
    },
    { kind: 'schedule', schedule: 'pendingPods' },
  ],
  // The pod-event queue also carries its own delayed follow-ups while new Nodes join; NodeClaims
  // whose node never came go to the termination queue, as termination terminates their instance.
  env: [
    ...baseEnv,
    'decisionBus',
    'summaryBucket',
    'clusterSize',
    'podEventQueueUrl',
    'terminationQueueUrl',
    // Its wake-ups: one EventBridge Scheduler schedule per NodePool whose schedules change next.
    'wakeUpGroup',
    'wakeUpRoleArn',
    'podEventQueueArn',
    'minValuesPolicy',
    'preferencePolicy',
    'maxCostPerHour',
    // Karpenter's gates and settings that change what it launches: reservations, overlays and
    // static pools; the batch window; instance capacity; how often classes resolve.
    'reservedCapacity',
    'nodeOverlay',
    'staticCapacity',
    'runawayGuard',
    'batchIdleMs',
    'batchMaxMs',
    'vmMemoryOverheadPercent',
    'reservedENIs',
    'amiRefreshSeconds',
  ],
  // resolveNodeClasses and manageInstanceProfiles: its controllers pass runs the EC2NodeClass
  // controller (classes that set spec.role get an instance profile, removed with the class).
  permissions: [
    'resolveNodeClasses',
    'describeCapacityReservations',
    'describeInstances',
    'launch',
    'manageInstanceProfiles',
    'stateRead',
    'stateWrite',
    'sendPodEvents',
    'sendTermination',
    'kubernetes',
    'publishDecisions',
    'readSummary',
    'armWakeUps',
  ],
  // Waiting for the lease (≤ 20 s), batching (batchMaxDuration: 10 s by default, at most 30 s)
  // plus launches; below the 2-minute lease TTL and the queue's visibility timeout.
  timeout: Duration.seconds(90),
  // Lambda gives CPU in proportion to memory, one whole vCPU from 1,769 MB. After Karpenter's 1 s
  // batch window, a pod's wait for its launch is CPU: reading the cluster and planning (0.5–1.5 s
  // of one core at 2,000 nodes, BENCHMARKS.md), which 1,088 MB (0.6 vCPU) would stretch by 1.6×.
  // At 0.7 s an idle run, the whole vCPU costs cents a month.
  memorySize: 1_769,
  memoryModel: PROVISIONER_MEMORY,
  // The DynamoDB lease already allows one decision at a time; this keeps a burst from fanning out.
  reservedConcurrency: 2,
};

/**
 * Acts on EC2 and AWS Health events from the interruption queue (spot interruption warnings,
 * rebalance recommendations, stopping/terminating state changes, scheduled changes,
 * capacity-reservation interruptions): deletes the NodeClaim, records Events, backs off the spot
 * offering and starts the drain on the termination queue.
 */
export const interruptionFunction: FunctionDefinition = {
  name: 'interruption',
  entry: 'lambdas/interruption/handler.ts',
  description: 'Flotilla: act on EC2 spot interruptions, rebalance, state changes and health events',
  triggers: [
    { kind: 'queue', queue: 'interruption', batchSize: 10, maxBatchingWindow: Duration.seconds(1) },
    { kind: 'schedule', schedule: 'instanceStatus' },
  ],
  env: [
    ...baseEnv,
    'decisionBus',
    'summaryBucket',
    'clusterSize',
    'terminationQueueUrl',
    'rebalanceAction',
    'podEventQueueUrl',
  ],
  // stateWrite: the ICE back-off of an interrupted spot offering; sendPodEvents: the provisioner is
  // told of each NodeClaim it deletes, so the replacements launch while the drain runs;
  // describeInstanceStatus: the instance status poll (failed checks, scheduled events).
  permissions: [
    'stateWrite',
    'sendTermination',
    'sendPodEvents',
    'kubernetes',
    'publishDecisions',
    'readSummary',
    'describeInstanceStatus',
  ],
  // Well inside the interruption queue's 1-minute visibility timeout.
  timeout: Duration.seconds(45),
  memoryModel: INTERRUPTION_MEMORY,
};

/**
 * Terminates NodeClaims being deleted: taints and drains the Node (Eviction API, Karpenter's tiers,
 * PDBs, terminationGracePeriod), waits for volume attachments, terminates the instance and
 * removes the finalizers. Work that must wait continues through delayed messages on the
 * termination queue; the garbage-collection schedule also sweeps every terminating NodeClaim
 * (deleted with kubectl, by a lifecycle timeout, or whose message chain was lost).
 */
export const terminationFunction: FunctionDefinition = {
  name: 'termination',
  entry: 'lambdas/termination/handler.ts',
  description: 'Flotilla: drain and terminate nodes of deleted NodeClaims',
  triggers: [
    { kind: 'queue', queue: 'termination', batchSize: 10 },
    { kind: 'schedule', schedule: 'garbageCollection' },
  ],
  env: [...baseEnv, 'decisionBus', 'summaryBucket', 'clusterSize', 'terminationQueueUrl'],
  permissions: [
    'describeInstances',
    'terminate',
    'sendTermination',
    'kubernetes',
    'publishDecisions',
    'readSummary',
  ],
  // One minute of drain passes per invocation plus headroom; inside the 5-minute visibility timeout.
  timeout: Duration.minutes(2),
  memoryModel: TERMINATION_MEMORY,
};

/**
 * Removes and replaces nodes on the disruption schedule, as Karpenter's disruption controller:
 * keeps the NodeClaims' `Drifted` and `Consolidatable` conditions, deletes NodeClaims past
 * `expireAfter`, and starts one command at a time (emptiness, then drift) within the NodePools'
 * budgets. Replacements are NodeClaims the provisioner launches (asked through its queue); the
 * candidates are deleted once they have initialized, and the termination queue drains them.
 */
export const disruptionFunction: FunctionDefinition = {
  name: 'disruption',
  entry: 'lambdas/disruption/handler.ts',
  description: 'Flotilla: remove empty, drifted and expired nodes within disruption budgets',
  // The schedule fires once a minute at most; with a shorter disruptionInterval each tick asks for
  // the passes before the next one on the disruption queue (sendDisruptionPasses), one at a time.
  triggers: [
    { kind: 'schedule', schedule: 'disruption' },
    { kind: 'queue', queue: 'disruptionPasses', batchSize: 1 },
  ],
  env: [
    ...baseEnv,
    'decisionBus',
    'summaryBucket',
    'clusterSize',
    'podEventQueueUrl',
    'terminationQueueUrl',
    'disruptionQueueUrl',
    'disruptionIntervalSeconds',
    'minValuesPolicy',
    'preferencePolicy',
    'maxCostPerHour',
    'spotToSpotConsolidation',
    'repackConsolidation',
    'kubeSchedulerScoring',
    'runawayGuard',
    // Its simulations plan with the instance types the provisioner would launch.
    'reservedCapacity',
    'nodeOverlay',
    'vmMemoryOverheadPercent',
    'reservedENIs',
  ],
  // describeInstances: subnet and security-group drift; stateRead: the offering cache (prices and
  // instance types for the replacement simulation); stateWrite: the disruption lease.
  permissions: [
    'describeCapacityReservations',
    'describeInstances',
    'stateRead',
    'stateWrite',
    'sendPodEvents',
    'sendTermination',
    'sendDisruptionPasses',
    'kubernetes',
    'publishDecisions',
    'readSummary',
    'readAlarms',
  ],
  // A pass waits 15 s to validate a command and may start several; it plans its work in half this
  // time (it starts none that could not be done by then), the rest kept for slow calls, and renews
  // its 45 s lease as it goes (a pass that dies keeps the next ones out for 45 s at most).
  timeout: Duration.minutes(2),
  memoryModel: DISRUPTION_MEMORY,
};

/**
 * Garbage collection, as Karpenter's collectors: terminates instances tagged for this cluster and a
 * NodePool that no NodeClaim accounts for (launched more than 30 s ago), and deletes NodeClaims
 * whose instance is gone (confirmed by id once the lookup window has passed), handing them to the
 * termination queue. Never touches an instance without Flotilla's tags. With `nodeRepair` on, it
 * then replaces nodes unhealthy past their toleration (shared/usecases/node-repair).
 */
export const garbageCollectorFunction: FunctionDefinition = {
  name: 'garbage-collector',
  entry: 'lambdas/garbage-collector/handler.ts',
  description: 'Flotilla: terminate orphaned instances and delete NodeClaims whose instance is gone',
  triggers: [{ kind: 'schedule', schedule: 'garbageCollection' }],
  env: [...baseEnv, 'decisionBus', 'summaryBucket', 'clusterSize', 'terminationQueueUrl', 'nodeRepair'],
  // describeInstanceStatus: node repair (nodeRepair) reads which instances EC2 reports impaired.
  permissions: [
    'describeInstances',
    'describeInstanceStatus',
    'terminate',
    'sendTermination',
    'kubernetes',
    'publishDecisions',
    'readSummary',
  ],
  timeout: Duration.minutes(1),
  memoryModel: GARBAGE_COLLECTOR_MEMORY,
};

/**
 * The clean-up when the cluster goes: when the stack is deleted (`cdk destroy`), or EKS deletes its
 * cluster, it terminates every instance and deletes every launch template Flotilla launched for
 * the cluster, found by their ownership tags, after a `cluster clean-up` line naming them. It reads
 * neither the cluster nor the summary (the cluster may be gone).
 */
export const cleanupFunction: FunctionDefinition = {
  name: 'cleanup',
  entry: 'lambdas/cleanup/handler.ts',
  description: 'Flotilla: terminate what it launched when the stack or the cluster is deleted',
  triggers: [{ kind: 'stackDeleted' }, { kind: 'clusterDeleted' }],
  env: ['clusterName', 'logLevel', 'decisionBus'],
  permissions: ['describeInstances', 'terminate', 'cleanLaunchTemplates', 'publishDecisions', 'readOwnStack'],
  // Listing and terminating a thousand instances a call, then deleting templates one by one.
  timeout: Duration.minutes(5),
  memorySize: 512,
  // It reads no cluster: outside the VPC it reaches EC2, CloudFormation and the S3 URL
  // CloudFormation takes its answer at, whatever endpoints a private cluster's VPC has.
  outsideVpc: true,
};

/**
 * A shadow stack's daily comparison (stack-mode.ts: only a shadow stack has it): just after
 * midnight UTC it reads the day before's lines of the stack's provisioner and disruption Lambdas
 * from CloudWatch Logs, compares them as `flotilla shadow report` does, and writes the day's
 * figures as metrics dated at the day's start. It reads neither the cluster nor EC2.
 */
export const shadowReportFunction: FunctionDefinition = {
  name: 'shadow-report',
  entry: 'lambdas/shadow-report/handler.ts',
  description: 'Flotilla: compare the shadow stack’s day with what the live autoscaler did',
  triggers: [{ kind: 'schedule', schedule: 'shadowReport' }],
  env: ['clusterName', 'logLevel'],
  permissions: ['readShadowLines'],
  // It reads two days (the day and the day before, for what that pairs): `npm run bench:shadow`
  // puts a busy 5,000-node cluster's at about 32 MB of lines, parsed and compared in under half a
  // second at 191 MiB peak (with the page texts held too, under half of 512 MB). The time is
  // CloudWatch's paging (up to 1 MB a page, filtered from every line of the groups), so it may take
  // Lambda's longest; a run that times out is tried twice more.
  timeout: Duration.minutes(15),
  memorySize: 512,
};

/**
 * The Lambdas of one cluster, one row each. Adding a Lambda is adding its row here once its
 * handler file exists: the construct derives its role, log group, failure queue, trigger, alarms
 * and log queries from the row.
 */
export const FLOTILLA_FUNCTIONS: readonly FunctionDefinition[] = [
  catalogFunction,
  provisionerFunction,
  interruptionFunction,
  terminationFunction,
  disruptionFunction,
  garbageCollectorFunction,
  cleanupFunction,
];
