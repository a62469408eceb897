/**
 * Names of the environment variables Flotilla's Lambdas read. The CDK construct
 * (`infra/flotilla-cluster.ts`) sets them and the runtime config parser reads them, so a name is
 * spelled once, here. Values are plain strings; the config parser validates them at cold start.
 *
 * Behaviour users tune lives in NodePool and EC2NodeClass specs, not here: these variables tell a
 * Lambda where its cluster, state and queues are, and carry the few controller-wide settings
 * Karpenter too takes as controller settings rather than from its resources.
 */
export const EnvVar = {
  /** EKS cluster name, e.g. `prod-eu`; also the value of the `eks:eks-cluster-name` tag. */
  clusterName: 'FLOTILLA_CLUSTER_NAME',
  /**
   * `live` (the default) or `shadow`: a shadow stack decides beside the cluster's autoscaler and
   * logs what it would do (every line `shadow: true`); it writes nothing to the cluster or EC2.
   */
  mode: 'FLOTILLA_MODE',
  /** Name of the DynamoDB state table (key schema `STATE_TABLE` in shared/apis/state-table.ts). */
  stateTable: 'FLOTILLA_STATE_TABLE',
  /** URL of the SQS queue the in-cluster shim sends pod events to (the provisioner consumes it). */
  podEventQueueUrl: 'FLOTILLA_POD_EVENT_QUEUE_URL',
  /** URL of the SQS queue EventBridge delivers EC2 interruption and AWS Health events to. */
  interruptionQueueUrl: 'FLOTILLA_INTERRUPTION_QUEUE_URL',
  /** URL of the SQS queue of delayed termination steps (cordon, evict, wait, terminate). */
  terminationQueueUrl: 'FLOTILLA_TERMINATION_QUEUE_URL',
  /** URL of the SQS queue of disruption passes between the disruption schedule's ticks. */
  disruptionQueueUrl: 'FLOTILLA_DISRUPTION_QUEUE_URL',
  /**
   * Seconds between disruption passes: whole minutes (the schedule's rate), or 10, 12, 15, 20 or
   * 30 (each schedule tick asks for the passes before the next one on the disruption queue).
   */
  disruptionIntervalSeconds: 'FLOTILLA_DISRUPTION_INTERVAL_SECONDS',
  /** Name of the IAM role nodes run with (for EC2NodeClass checks and access entries). */
  nodeRoleName: 'FLOTILLA_NODE_ROLE_NAME',
  /** Name of the instance profile of the node role (the default for `spec.instanceProfile`). */
  instanceProfileName: 'FLOTILLA_INSTANCE_PROFILE_NAME',
  /**
   * What the interruption Lambda does with EC2 Instance Rebalance Recommendations: `event` (record
   * a SpotRebalanceRecommendation Event only, as Karpenter) or `drain` (terminate the node like a
   * spot interruption).
   */
  rebalanceAction: 'FLOTILLA_REBALANCE_ACTION',
  /** Karpenter's MIN_VALUES_POLICY: `Strict` or `BestEffort` (shared/runtime/scheduling-policy.ts). */
  minValuesPolicy: 'FLOTILLA_MIN_VALUES_POLICY',
  /** Karpenter's PREFERENCE_POLICY: `Respect` or `Ignore` (shared/runtime/scheduling-policy.ts). */
  preferencePolicy: 'FLOTILLA_PREFERENCE_POLICY',
  /**
   * `true` to replace nodes unhealthy past their toleration (Karpenter's NodeRepair feature gate),
   * `false` (the default) to leave them; the garbage collector runs the repair pass.
   */
  nodeRepair: 'FLOTILLA_NODE_REPAIR',
  /**
   * `true` or `false`: whether consolidation may replace spot nodes by spot nodes (Karpenter's
   * `SpotToSpotConsolidation` feature gate; off, spot nodes are only deleted).
   */
  spotToSpotConsolidation: 'FLOTILLA_SPOT_TO_SPOT_CONSOLIDATION',
  /**
   * `true` or `false` (the default): Flotilla's repack consolidation (the stack's
   * `repackConsolidation`); off, disruption asks Karpenter's methods only, first that acts.
   */
  repackConsolidation: 'FLOTILLA_REPACK_CONSOLIDATION',
  /**
   * `LeastAllocated` (the default) or `MostAllocated`: the NodeResourcesFit scoring strategy of the
   * cluster's kube-scheduler (the stack's `kubeSchedulerScoring`), which disruption expects when it
   * replays where the pods a command moves will be bound.
   */
  kubeSchedulerScoring: 'FLOTILLA_KUBE_SCHEDULER_SCORING',
  /**
   * USD per hour, unset by default: the cluster's dollar limit (the stack's `maxCostPerHour`), what
   * every NodePool's NodeClaims may cost together; launches that would pass it are refused.
   */
  maxCostPerHour: 'FLOTILLA_MAX_COST_PER_HOUR',
  /**
   * `true` (the default) or `false`: Flotilla's runaway guard (the stack's `runawayGuard`); off,
   * no NodePool's launches pause, as Karpenter has no guard.
   */
  runawayGuard: 'FLOTILLA_RUNAWAY_GUARD',
  /**
   * `true` (the default) or `false`: Karpenter's `ReservedCapacity` feature gate. Off, EC2NodeClass
   * `capacityReservationSelectorTerms` are not resolved and no reserved offering is planned with.
   */
  reservedCapacity: 'FLOTILLA_RESERVED_CAPACITY',
  /**
   * `true` or `false` (the default): Karpenter's `NodeOverlay` feature gate. Off, NodeOverlays are
   * not read for planning and get no status.
   */
  nodeOverlay: 'FLOTILLA_NODE_OVERLAY',
  /**
   * `true` or `false` (the default): Karpenter's `StaticCapacity` feature gate. Off, NodePools with
   * `spec.replicas` are not launched for nor scaled down by the provisioner.
   */
  staticCapacity: 'FLOTILLA_STATIC_CAPACITY',
  /** Karpenter's BATCH_IDLE_DURATION in milliseconds (default 1000). */
  batchIdleMs: 'FLOTILLA_BATCH_IDLE_MS',
  /** Karpenter's BATCH_MAX_DURATION in milliseconds (default 10000). */
  batchMaxMs: 'FLOTILLA_BATCH_MAX_MS',
  /** Karpenter's VM_MEMORY_OVERHEAD_PERCENT, a fraction such as `0.075` (the default). */
  vmMemoryOverheadPercent: 'FLOTILLA_VM_MEMORY_OVERHEAD_PERCENT',
  /** Karpenter's RESERVED_ENIS: ENIs left out of the ENI-limited max pods (default 0). */
  reservedENIs: 'FLOTILLA_RESERVED_ENIS',
  /** Karpenter's ISOLATED_VPC: `true` to never call the Pricing API (default `false`). */
  isolatedVPC: 'FLOTILLA_ISOLATED_VPC',
  /** Karpenter's AMI_REFRESH_INTERVAL in seconds: each EC2NodeClass resolves at most this often (default 60). */
  amiRefreshSeconds: 'FLOTILLA_AMI_REFRESH_SECONDS',
  /**
   * Name of the stack's EventBridge bus: every decision a Lambda writes also goes there as an event
   * (source `flotilla`, detail type the decision's kind, detail its log line). Unset: logs only.
   */
  decisionBus: 'FLOTILLA_DECISION_BUS',
  /**
   * The stack's EventBridge Scheduler group: the provisioner arms there one wake-up per NodePool
   * whose schedules (`flotilla.io/schedules`) change what they hold next. Unset: no wake-ups (the
   * windows take effect at the pending-pods poll).
   */
  wakeUpGroup: 'FLOTILLA_WAKE_UP_GROUP',
  /** The role EventBridge Scheduler sends the wake-ups as (with `wakeUpGroup`). */
  wakeUpRoleArn: 'FLOTILLA_WAKE_UP_ROLE_ARN',
  /** ARN of the pod-event queue, where the wake-ups go (with `wakeUpGroup`). */
  podEventQueueArn: 'FLOTILLA_POD_EVENT_QUEUE_ARN',
  /** Minimum log level: `debug`, `info`, `warn` or `error`. */
  logLevel: 'FLOTILLA_LOG_LEVEL',
  /**
   * Name of the S3 bucket the shim publishes the cluster summary to (the object key is
   * `summaryObjectKey(cluster)` in shared/apis/cluster-summary.ts). Unset: Lambdas read the API
   * server directly.
   */
  summaryBucket: 'FLOTILLA_SUMMARY_BUCKET',
  /**
   * The stack's `clusterSize` as `<nodes>,<pods>`, e.g. `500,10000`: the cluster summary is
   * refused past limits made from it (summaryLimitsFor in shared/ports/summary.ts).
   */
  clusterSize: 'FLOTILLA_CLUSTER_SIZE',
  /**
   * A shadow stack's shadow-report Lambda: the log groups of the stack's Lambdas that decide (its
   * provisioner and disruption), comma-separated, whose lines it compares each day.
   */
  shadowLogGroups: 'FLOTILLA_SHADOW_LOG_GROUPS',
} as const;

/** A key of `EnvVar`, e.g. `'stateTable'`. */
export type EnvVarKey = keyof typeof EnvVar;

/** A variable name, e.g. `'FLOTILLA_STATE_TABLE'`. */
export type EnvVarName = (typeof EnvVar)[EnvVarKey];

/**
 * Optional overrides of how a Lambda reaches its EKS cluster's API server and what its nodes join
 * with. The stack leaves them unset: the Lambdas look the cluster up with eks:DescribeCluster.
 * Set them to reach a cluster without that call (or a non-EKS API server in tests).
 */
export const ClusterAccessEnvVar = {
  /** `https://…eks.amazonaws.com`, the API server (DescribeCluster `endpoint`). */
  clusterEndpoint: 'FLOTILLA_CLUSTER_ENDPOINT',
  /** Base64 PEM of the cluster CA (DescribeCluster `certificateAuthority.data`). */
  clusterCa: 'FLOTILLA_CLUSTER_CA',
  /** Kubernetes minor of the cluster, e.g. `1.34` (AMI aliases resolve per version). */
  kubernetesVersion: 'FLOTILLA_KUBERNETES_VERSION',
  /** Service CIDR nodes join with (nodeadm `cluster.cidr`), e.g. `172.20.0.0/16`. Optional. */
  serviceCidr: 'FLOTILLA_SERVICE_CIDR',
} as const;
