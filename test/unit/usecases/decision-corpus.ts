import type { MetricName } from '../../../shared/runtime/metrics.ts';
import type { Decision, DecisionKind } from '../../../shared/usecases/decisions/decision.ts';
import { seriesKey } from '../runtime/emf-rules.ts';

// Decisions of every kind, each with the metric series it yields and their figures (summed over the
// decision's values), as the catalog's metrics read them in CloudWatch. The cluster is `prod`.

export const CLUSTER = 'prod';

/** A series of `name` under the cluster and `dimensions`. */
export const series = (name: MetricName, dimensions: Record<string, string> = {}) =>
  seriesKey(name, { cluster: CLUSTER, ...dimensions });

export interface CorpusEntry<K extends DecisionKind = DecisionKind> {
  readonly decision: Extract<Decision, { kind: K }>;
  /** Series key → the sum of its values. */
  readonly expected: Readonly<Record<string, number>>;
}

const pods = (n: number) => Array.from({ length: n }, (_, i) => ({ namespace: 'apps', name: `web-${i}` }));

const launch = {
  kind: 'launch',
  reason: 'provisioning',
  outcome: 'launched',
  nodePool: 'default',
  nodeClaim: 'default-abc12',
  pods: pods(3),
  instanceTypes: ['m6i.xlarge', 'c6i.xlarge'],
  capacityType: 'spot',
  round: 0,
  leaseToken: 4,
  instanceId: 'i-0a',
  instanceType: 'm6i.xlarge',
  zone: 'us-east-1a',
  pricePerHour: 0.07,
  instanceTypeCpu: 4,
  instanceTypeMemoryBytes: 17_179_869_184,
} as const;

const PROVISIONER = { controller: 'provisioner' };
const OFFERING = { instance_type: 'm6i.xlarge', capacity_type: 'spot', zone: 'us-east-1a' };
/** The series a launched `launch` yields besides its creation: its offering and instance type. */
const launched = {
  [series('karpenter_cloudprovider_instance_type_offering_available', OFFERING)]: 1,
  [series('karpenter_cloudprovider_instance_type_offering_price_estimate', OFFERING)]: 0.07,
  [series('karpenter_cloudprovider_instance_type_cpu_cores', { instance_type: 'm6i.xlarge' })]: 4,
  [series('karpenter_cloudprovider_instance_type_memory_bytes', {
    instance_type: 'm6i.xlarge',
  })]: 17_179_869_184,
};
const created = (nodepool: string, reason = 'provisioned', relaxed = 'false') =>
  series('karpenter_nodeclaims_created_total', { nodepool, reason, min_values_relaxed: relaxed });
const disrupted = (reason: string, nodepool = 'default', capacity_type = 'unknown') =>
  series('karpenter_nodeclaims_disrupted_total', { reason, nodepool, capacity_type });

const candidate = (n: number, nodePool = 'default') => ({
  nodeClaim: `${nodePool}-c${n}`,
  node: `ip-10-0-0-${n}`,
  nodePool,
  instanceType: 'm6i.xlarge',
  capacityType: 'on-demand' as const,
  pricePerHour: 0.192,
});

const disrupt = {
  kind: 'disrupt',
  reason: 'Underutilized',
  method: 'multi-node',
  action: 'replace',
  outcome: 'started',
  commandId: 'cmd-1',
  candidates: [candidate(1), candidate(2, 'batch')],
  replacements: [
    { nodeClaim: 'default-r1', nodePool: 'default', instanceTypes: ['m6i.large'], pricePerHour: 0.096 },
  ],
  pricePerHourBefore: 0.384,
  pricePerHourAfter: 0.096,
} as const;

const pass = {
  kind: 'disruptionPass',
  reason: 'blocked',
  candidates: 6,
  empty: 1,
  drifted: 2,
  expired: 0,
  blocked: 3,
  budgetBlocked: ['default/Drifted'],
  commands: 0,
  failedValidations: 0,
  inFlight: 0,
  eligible: { Empty: 1, Drifted: 2, Underutilized: 4 },
  blockedBy: { pdb: 1, doNotDisruptPod: 1, budget: 2, notInitialized: 1 },
  allowed: {
    default: { Empty: 1, Drifted: 0, Underutilized: 1 },
    batch: { Empty: 3, Drifted: 3, Underutilized: 3 },
  },
} as const;

const termination = { reason: 'SpotInterruption', nodeClaim: 'default-abc12', nodePool: 'default' } as const;

const allowed = (nodepool: string, reason: string) =>
  series('karpenter_nodepools_allowed_disruptions', { nodepool, reason });
const consuming = (nodepool: string, reason: string) =>
  series('karpenter_nodepools_nodes_consuming_budgets', { nodepool, reason });
const usage = (nodepool: string, resource_type: string) =>
  series('karpenter_nodepools_usage', { nodepool, resource_type });
const limit = (nodepool: string, resource_type: string) =>
  series('karpenter_nodepools_limit', { nodepool, resource_type });
const nodes = (
  what: 'allocatable' | 'total_pod_requests' | 'total_daemon_requests' | 'system_overhead',
  nodepool: string,
  resource_type: string,
) => series(`karpenter_nodes_${what}`, { nodepool, resource_type });
const NONE = { cpu: 0, memoryBytes: 0 };
/** A NodePool without Nodes, as its observation sums them. */
const NO_NODES = { allocatable: NONE, podRequests: NONE, daemonRequests: NONE, systemOverhead: NONE };

export const CORPUS: { readonly [K in DecisionKind]: readonly CorpusEntry<K>[] } = {
  skip: [
    {
      decision: { kind: 'skip', reason: 'no provisionable pods', leaseToken: 3 },
      expected: {
        [series('karpenter_pods_unbound_time_seconds')]: 0,
        [series('karpenter_scheduler_queue_depth', PROVISIONER)]: 0,
        [series('karpenter_scheduler_unschedulable_pods_count', PROVISIONER)]: 0,
      },
    },
    {
      // Pending pods that could not be read: Karpenter's ignored pods.
      decision: { kind: 'skip', reason: 'no provisionable pods', leaseToken: 3, ignoredPods: 2 },
      expected: {
        [series('karpenter_pods_unbound_time_seconds')]: 0,
        [series('karpenter_scheduler_queue_depth', PROVISIONER)]: 0,
        [series('karpenter_scheduler_unschedulable_pods_count', PROVISIONER)]: 0,
        [series('karpenter_scheduler_ignored_pods_count')]: 2,
      },
    },
    { decision: { kind: 'skip', reason: 'lease held', lease: 'provisioner', waitedMs: 0 }, expected: {} },
  ],
  batch: [
    {
      decision: {
        kind: 'batch',
        reason: 'idle',
        pods: pods(2),
        durationMs: 1000,
        batchIdleMs: 1000,
        batchMaxMs: 10_000,
      },
      expected: {},
    },
  ],
  plan: [
    {
      decision: {
        kind: 'plan',
        reason: 'planned',
        queued: 12,
        placed: 9,
        unschedulable: 3,
        rounds: 1,
        nodeClaims: 2,
        planMs: 250,
        oldestPendingSeconds: 95.5,
        ignoredPods: 1,
      },
      expected: {
        [series('karpenter_pods_unbound_time_seconds')]: 95.5,
        [series('karpenter_scheduler_queue_depth', PROVISIONER)]: 12,
        [series('karpenter_scheduler_unschedulable_pods_count', PROVISIONER)]: 3,
        [series('karpenter_scheduler_scheduling_duration_seconds', PROVISIONER)]: 0.25,
        [series('karpenter_scheduler_ignored_pods_count')]: 1,
      },
    },
  ],
  launch: [
    { decision: launch, expected: { [created('default')]: 1, ...launched } },
    {
      // A static NodePool's replica is `provisioned` too, as Karpenter's static provisioning says.
      decision: { ...launch, reason: 'static', nodePool: 'fixed' },
      expected: { [created('fixed')]: 1, ...launched },
    },
    {
      decision: { ...launch, minValuesRelaxed: true },
      expected: { [created('default', 'provisioned', 'true')]: 1, ...launched },
    },
    { decision: { ...launch, reason: 'resumed' }, expected: launched },
    {
      decision: {
        ...launch,
        outcome: 'insufficientCapacity',
        offerings: ['spot:m6i.xlarge:us-east-1a', 'spot:c6i.xlarge:us-east-1b'],
      },
      expected: {
        [created('default')]: 1,
        [series('karpenter_cloudprovider_instance_launch_failures_total', {
          nodepool: 'default',
          reason: 'InsufficientCapacityError',
          capacity_type: 'spot',
        })]: 1,
        [series('karpenter_cloudprovider_errors_total', {
          method: 'Create',
          error: 'InsufficientCapacityError',
        })]: 1,
        // The NodeClaim is removed, as Karpenter deletes it.
        [disrupted('insufficient_capacity', 'default', 'spot')]: 1,
        [series('karpenter_cloudprovider_instance_type_offering_available', OFFERING)]: 0,
        [series('karpenter_cloudprovider_instance_type_offering_available', {
          instance_type: 'c6i.xlarge',
          capacity_type: 'spot',
          zone: 'us-east-1b',
        })]: 0,
      },
    },
    {
      decision: { ...launch, outcome: 'failed', capacityType: 'on-demand', error: 'request timed out' },
      expected: {
        [created('default')]: 1,
        [series('karpenter_cloudprovider_errors_total', { method: 'Create', error: 'none' })]: 1,
      },
    },
    {
      decision: {
        ...launch,
        outcome: 'failed',
        capacityType: 'on-demand',
        error: 'EC2 refused',
        errorCode: 'UnauthorizedOperation',
      },
      expected: {
        [created('default')]: 1,
        [series('karpenter_cloudprovider_instance_launch_failures_total', {
          nodepool: 'default',
          reason: 'UnauthorizedOperation',
          capacity_type: 'on-demand',
        })]: 1,
        [series('karpenter_cloudprovider_errors_total', { method: 'Create', error: 'none' })]: 1,
      },
    },
    {
      decision: {
        ...launch,
        outcome: 'failed',
        error: 'ec2NodeClass default is not ready',
        failureReason: 'NodeClassNotReady',
      },
      expected: {
        [created('default')]: 1,
        [series('karpenter_cloudprovider_errors_total', {
          method: 'Create',
          error: 'NodeClassNotReadyError',
        })]: 1,
        [disrupted('nodeclass_not_ready', 'default', 'spot')]: 1,
      },
    },
    // No launch was sent: the lease was lost first.
    { decision: { ...launch, outcome: 'fenced' }, expected: {} },
  ],
  unschedulable: [
    { decision: { kind: 'unschedulable', reason: 'no NodePool matches', pods: pods(3) }, expected: {} },
  ],
  followUp: [
    {
      decision: {
        kind: 'followUp',
        reason: 'nodeClaims not initialized yet',
        nodeClaims: ['a'],
        nodeClaimCount: 1,
        delaySeconds: 30,
      },
      expected: {},
    },
  ],
  schedulePasses: [
    {
      decision: {
        kind: 'schedulePasses',
        reason: 'every 20s',
        intervalSeconds: 20,
        tickAt: '2026-03-01T12:00:00.000Z',
        dueAt: ['2026-03-01T12:00:20.000Z'],
      },
      expected: {},
    },
  ],
  launchBackoff: [
    {
      decision: {
        kind: 'launchBackoff',
        reason: 'launchFailed',
        action: 'start',
        nodePool: 'gpu',
        failures: 3,
      },
      expected: { [series('nodepools_launch_backoff_started_total', { nodepool: 'gpu' })]: 1 },
    },
    {
      decision: { kind: 'launchBackoff', reason: 'expired', action: 'end', nodePool: 'gpu', failures: 0 },
      expected: {},
    },
  ],
  cleanUp: [
    {
      decision: {
        kind: 'cleanUp',
        reason: 'stackDeleted',
        action: 'planned',
        cluster: 'prod',
        instances: ['i-0123'],
        instanceCount: 1,
        launchTemplates: ['flotilla-prod-abc'],
        launchTemplateCount: 1,
      },
      expected: {},
    },
  ],
  rolloutHold: [
    {
      decision: {
        kind: 'rolloutHold',
        reason: 'AlarmFiring',
        action: 'start',
        nodePool: 'web',
        alarms: ['web-5xx'],
        detail: 'drift and expiration replacements wait: alarm(s) web-5xx in ALARM',
      },
      expected: {},
    },
  ],
  register: [
    {
      decision: {
        kind: 'register',
        reason: 'node joined',
        nodeClaim: 'default-abc12',
        nodePool: 'default',
        node: 'ip-10-0-0-1',
        unregisteredTaintMissing: false,
        taintsAdded: 0,
        zone: 'us-east-1b',
      },
      expected: { [series('karpenter_nodes_created_total', { nodepool: 'default', zone: 'us-east-1b' })]: 1 },
    },
  ],
  initialize: [
    {
      decision: { kind: 'initialize', reason: 'node ready', nodeClaim: 'a', nodePool: 'default', node: 'n' },
      expected: {},
    },
  ],
  wait: [
    {
      decision: {
        kind: 'wait',
        reason: 'NodeNotFound',
        nodeClaim: 'a',
        nodePool: 'default',
        condition: 'Registered',
        status: 'Unknown',
        detail: 'Node not registered with cluster',
      },
      expected: {},
    },
  ],
  delete: [
    {
      // Karpenter's liveness timeouts count as disruptions.
      decision: { kind: 'delete', reason: 'launch_timeout', nodeClaim: 'a', nodePool: 'default' },
      expected: { [disrupted('launch_timeout')]: 1 },
    },
    {
      decision: {
        kind: 'delete',
        reason: 'registration_timeout',
        nodeClaim: 'a',
        nodePool: 'default',
        capacityType: 'spot',
      },
      expected: { [disrupted('registration_timeout', 'default', 'spot')]: 1 },
    },
    {
      decision: { kind: 'delete', reason: 'node deleted', nodeClaim: 'a', nodePool: 'default', node: 'n' },
      expected: {},
    },
  ],
  resolveNodeClass: [
    {
      decision: {
        kind: 'resolveNodeClass',
        reason: 'ready',
        nodeClass: 'default',
        changed: true,
        retrying: [],
        subnets: 3,
        securityGroups: 1,
        amis: ['ami-1'],
      },
      expected: {},
    },
  ],
  waitForNodeClaims: [
    {
      decision: {
        kind: 'waitForNodeClaims',
        reason: 'NodeClaims still use it',
        nodeClass: 'default',
        nodeClaims: ['a'],
        nodeClaimCount: 1,
      },
      expected: {},
    },
  ],
  finalizeNodeClass: [
    {
      decision: {
        kind: 'finalizeNodeClass',
        reason: 'no NodeClaim uses it',
        nodeClass: 'default',
        instanceProfileReleased: true,
      },
      expected: {},
    },
  ],
  reservationEnd: [
    {
      decision: {
        kind: 'reservationEnd',
        reason: 'capacity reservation ended',
        action: 'relabelOnDemand',
        nodeClaim: 'default-abc',
        nodePool: 'default',
        capacityReservationId: 'cr-0a1b2c3d4e5f60001',
        reservationState: 'expired',
        nodes: ['ip-10-0-0-1.ec2.internal'],
      },
      expected: {},
    },
  ],
  updateNodePool: [
    {
      decision: {
        kind: 'updateNodePool',
        reason: 'status changed',
        nodePool: 'default',
        conditions: ['Ready=True'],
      },
      expected: {},
    },
  ],
  rejectNodePool: [
    { decision: { kind: 'rejectNodePool', reason: 'spec.limits: bad', nodePool: 'x' }, expected: {} },
  ],
  updateNodeOverlay: [
    {
      decision: {
        kind: 'updateNodeOverlay',
        reason: 'Conflict',
        nodeOverlay: 'savings',
        validationSucceeded: 'False',
        detail: 'conflict with another overlay',
      },
      expected: {},
    },
  ],
  handleInterruption: [
    {
      decision: {
        kind: 'handleInterruption',
        reason: 'SpotInterrupted',
        action: 'cordonAndDrain',
        interruption: 'spotInterruption',
        eventId: 'e-1',
        instanceId: 'i-0a',
        nodeClaim: 'default-abc12',
        nodePool: 'default',
        capacityType: 'spot',
        unavailableOffering: 'spot:m6i.xlarge:us-east-1a',
        queuedSeconds: 4.5,
      },
      expected: {
        [series('karpenter_interruption_received_messages_total', { message_type: 'spot_interrupted' })]: 1,
        [series('karpenter_interruption_message_queue_duration_seconds')]: 4.5,
        [disrupted('spot_interrupted', 'default', 'spot')]: 1,
        [series('karpenter_cloudprovider_instance_type_offering_available', OFFERING)]: 0,
      },
    },
    {
      // The second instance of one message: the message was counted with the first.
      decision: {
        kind: 'handleInterruption',
        reason: 'InstanceUnhealthy',
        action: 'cordonAndDrain',
        interruption: 'scheduledChange',
        eventId: 'e-4',
        instanceId: 'i-0d',
        nodeClaim: 'default-d',
        nodePool: 'default',
        laterInstance: true,
      },
      expected: { [disrupted('scheduled_change')]: 1 },
    },
    {
      decision: {
        kind: 'handleInterruption',
        reason: 'RebalanceRecommendation',
        action: 'event',
        interruption: 'rebalanceRecommendation',
        eventId: 'e-2',
        instanceId: 'i-0b',
        nodeClaim: 'default-x',
        nodePool: 'default',
      },
      expected: {
        [series('karpenter_interruption_received_messages_total', {
          message_type: 'rebalance_recommendation',
        })]: 1,
      },
    },
    {
      // The instance status poll: no queue message, an unhealthy instance of its category.
      decision: {
        kind: 'handleInterruption',
        reason: 'InstanceUnhealthy',
        action: 'forcefulTermination',
        interruption: 'systemStatus',
        eventId: 'status:i-0e:systemStatus',
        instanceId: 'i-0e',
        nodeClaim: 'default-e',
        nodePool: 'default',
        capacityType: 'on-demand',
      },
      expected: {
        [series('karpenter_interruption_instance_status_unhealthy_total', { category: 'SystemStatus' })]: 1,
        [disrupted('system_status', 'default', 'on-demand')]: 1,
      },
    },
    {
      decision: {
        kind: 'handleInterruption',
        reason: 'nodeClaim is already terminating',
        action: 'alreadyDeleting',
        interruption: 'instanceStatus',
        eventId: 'status:i-0f:instanceStatus',
        instanceId: 'i-0f',
        nodeClaim: 'default-f',
        nodePool: 'default',
      },
      expected: {},
    },
  ],
  ignoreInterruption: [
    {
      decision: {
        kind: 'ignoreInterruption',
        reason: 'not acted on',
        interruption: 'noop',
        eventId: 'e-3',
        queuedSeconds: 1.2,
      },
      expected: {
        [series('karpenter_interruption_received_messages_total', { message_type: 'no_op' })]: 1,
        [series('karpenter_interruption_message_queue_duration_seconds')]: 1.2,
      },
    },
  ],
  deadline: [
    { decision: { kind: 'deadline', ...termination, deadline: '2026-03-01T13:00:00Z' }, expected: {} },
  ],
  deleteNode: [{ decision: { kind: 'deleteNode', ...termination, node: 'n' }, expected: {} }],
  taint: [
    {
      decision: { kind: 'taint', ...termination, node: 'n', taint: 'karpenter.sh/disrupted:NoSchedule' },
      expected: {},
    },
  ],
  drain: [
    {
      decision: {
        kind: 'drain',
        ...termination,
        action: 'evict',
        tier: 'default',
        evicted: 4,
        blocked: 1,
        gone: 0,
        blockedPods: ['apps/db-0'],
      },
      expected: {
        [series('karpenter_pods_drained_total', { reason: 'SpotInterruption' })]: 4,
        [series('karpenter_pods_eviction_requests_total', { code: '200' })]: 4,
        [series('karpenter_pods_eviction_requests_total', { code: '429' })]: 1,
      },
    },
    {
      decision: {
        kind: 'drain',
        ...termination,
        reason: 'deleted',
        action: 'evict',
        tier: 'critical',
        evicted: 1,
        blocked: 2,
        gone: 3,
        blockedPods: [],
      },
      expected: {
        // A NodeClaim without a DisruptionReason, as Karpenter names it.
        [series('karpenter_pods_drained_total', { reason: 'Forceful Termination' })]: 1,
        [series('karpenter_pods_eviction_requests_total', { code: '200' })]: 1,
        [series('karpenter_pods_eviction_requests_total', { code: '429' })]: 2,
        [series('karpenter_pods_eviction_requests_total', { code: '404' })]: 3,
      },
    },
    {
      // Pods deleted past the deadline are not evicted: Karpenter counts no drained pod for them.
      decision: { kind: 'drain', ...termination, reason: 'deleted', action: 'forceDelete', pods: pods(2) },
      expected: {},
    },
  ],
  terminate: [{ decision: { kind: 'terminate', ...termination, instanceId: 'i-0a' }, expected: {} }],
  finalizeNode: [
    {
      decision: { kind: 'finalizeNode', ...termination, node: 'n' },
      expected: { [series('karpenter_nodes_terminated_total', { nodepool: 'default', zone: 'unknown' })]: 1 },
    },
    {
      decision: {
        kind: 'finalizeNode',
        ...termination,
        node: 'n',
        zone: 'us-east-1c',
        terminationSeconds: 42.5,
        lifetimeSeconds: 86_400,
        drained: true,
      },
      expected: {
        [series('karpenter_nodes_terminated_total', { nodepool: 'default', zone: 'us-east-1c' })]: 1,
        [series('karpenter_nodes_drained_total', { nodepool: 'default' })]: 1,
        [series('karpenter_nodes_termination_duration_seconds', { nodepool: 'default' })]: 42.5,
        [series('karpenter_nodes_lifetime_duration_seconds', { nodepool: 'default' })]: 86_400,
        [series('operator_node_termination_duration_seconds')]: 42.5,
      },
    },
    {
      decision: {
        kind: 'finalizeNode',
        reason: 'node deleted without a NodeClaim; its instance is gone',
        node: 'n',
      },
      expected: {},
    },
  ],
  finalizeNodeClaim: [
    {
      decision: {
        kind: 'finalizeNodeClaim',
        ...termination,
        capacityType: 'spot',
        zone: 'us-east-1a',
        terminationSeconds: 95,
        instanceTerminationSeconds: 30.5,
      },
      expected: {
        [series('karpenter_nodeclaims_terminated_total', {
          nodepool: 'default',
          capacity_type: 'spot',
          zone: 'us-east-1a',
        })]: 1,
        [series('karpenter_nodeclaims_termination_duration_seconds', { nodepool: 'default' })]: 95,
        [series('karpenter_nodeclaims_instance_termination_duration_seconds', { nodepool: 'default' })]: 30.5,
        [series('operator_nodeclaim_termination_duration_seconds')]: 95,
      },
    },
    {
      decision: { kind: 'finalizeNodeClaim', ...termination, reason: 'deleted' },
      expected: {
        [series('karpenter_nodeclaims_terminated_total', {
          nodepool: 'default',
          capacity_type: 'unknown',
          zone: 'unknown',
        })]: 1,
      },
    },
  ],
  continue: [
    {
      decision: {
        kind: 'continue',
        reason: 'pods still draining',
        nodeClaim: 'a',
        waitingOn: 'drain',
        afterSeconds: 10,
        queued: true,
      },
      expected: {},
    },
  ],
  collect: [
    {
      decision: {
        kind: 'collect',
        reason: 'orphaned instance',
        action: 'terminateInstance',
        instanceId: 'i-0c',
        instanceState: 'running',
      },
      expected: {},
    },
    {
      decision: {
        kind: 'collect',
        reason: 'instance gone',
        action: 'deleteNodeClaim',
        instanceId: 'i-0c',
        instanceState: 'not found',
        nodeClaim: 'default-g',
        nodePool: 'default',
        capacityType: 'spot',
      },
      expected: { [disrupted('garbage_collected', 'default', 'spot')]: 1 },
    },
  ],
  staticCapacity: [
    {
      decision: {
        kind: 'staticCapacity',
        reason: 'short of replicas',
        action: 'launch',
        nodePool: 'fixed',
        replicas: 3,
        current: 2,
        count: 1,
        leaseToken: 4,
      },
      expected: {},
    },
  ],
  repair: [
    {
      decision: {
        kind: 'repair',
        reason: 'Ready=False',
        action: 'replace',
        nodePool: 'default',
        node: 'n',
        nodeClaim: 'a',
        unhealthyNodes: 1,
        poolNodes: 10,
        threshold: 2,
      },
      expected: {
        [disrupted('unhealthy')]: 1,
        [series('karpenter_nodeclaims_unhealthy_disrupted_total', {
          condition: 'unknown',
          nodepool: 'default',
          capacity_type: 'unknown',
          image_id: 'unknown',
        })]: 1,
      },
    },
    {
      decision: {
        kind: 'repair',
        reason: 'condition AcceleratedHardwareReady=False for longer than 10m',
        action: 'replace',
        nodePool: 'gpu',
        node: 'n',
        nodeClaim: 'a',
        cause: 'AcceleratedHardwareReady=False',
        conditionType: 'AcceleratedHardwareReady',
        capacityType: 'on-demand',
        imageId: 'ami-0abc',
        unhealthyNodes: 1,
        poolNodes: 10,
        threshold: 2,
      },
      expected: {
        [disrupted('unhealthy', 'gpu', 'on-demand')]: 1,
        [series('karpenter_nodeclaims_unhealthy_disrupted_total', {
          condition: 'accelerated_hardware_ready',
          nodepool: 'gpu',
          capacity_type: 'on-demand',
          image_id: 'ami-0abc',
        })]: 1,
      },
    },
    {
      decision: {
        kind: 'repair',
        reason: 'more than 20% unhealthy',
        action: 'block',
        nodePool: 'default',
        unhealthyNodes: 3,
        poolNodes: 10,
        threshold: 2,
        held: 1,
      },
      expected: {},
    },
  ],
  consistency: [
    {
      decision: {
        kind: 'consistency',
        reason: 'ConsistencyCheckFailed',
        nodeClaim: 'a',
        nodePool: 'default',
        node: 'n',
        issues: ['expected 16Gi of resource memory, but found 8Gi (50.0% of expected)'],
      },
      expected: {},
    },
  ],
  disrupt: [
    {
      decision: disrupt,
      expected: {
        [series('karpenter_voluntary_disruption_decisions_total', {
          decision: 'replace',
          reason: 'underutilized',
          consolidation_type: 'multi',
        })]: 1,
        // Once for each NodePool of the candidates.
        [series('karpenter_voluntary_disruption_decisions_by_nodepool_total', {
          nodepool: 'default',
          reason: 'underutilized',
        })]: 1,
        [series('karpenter_voluntary_disruption_decisions_by_nodepool_total', {
          nodepool: 'batch',
          reason: 'underutilized',
        })]: 1,
        // $0.384/h of candidates replaced by $0.096/h.
        [series('voluntary_disruption_savings', { reason: 'underutilized' })]: 0.288,
        [created('default', 'underutilized')]: 1,
      },
    },
    {
      // The replace command's candidates deleted once its replacement is initialized: no new decision.
      decision: { ...disrupt, outcome: 'deleted' },
      expected: {
        [disrupted('underutilized', 'default', 'on-demand')]: 1,
        [disrupted('underutilized', 'batch', 'on-demand')]: 1,
      },
    },
    {
      decision: {
        ...disrupt,
        reason: 'Empty',
        method: 'emptiness',
        action: 'delete',
        outcome: 'deleted',
        candidates: [candidate(3), candidate(4)],
        replacements: [],
        pricePerHourAfter: 0,
        failedValidations: 1,
      },
      expected: {
        [series('karpenter_voluntary_disruption_decisions_total', {
          decision: 'delete',
          reason: 'empty',
          consolidation_type: 'empty',
        })]: 1,
        [series('karpenter_voluntary_disruption_decisions_by_nodepool_total', {
          nodepool: 'default',
          reason: 'empty',
        })]: 1,
        [series('voluntary_disruption_savings', { reason: 'empty' })]: 0.384,
        [disrupted('empty', 'default', 'on-demand')]: 2,
        // A third candidate dropped at validation.
        [series('karpenter_voluntary_disruption_failed_validations_total', {
          consolidation_type: 'empty',
        })]: 1,
      },
    },
    {
      decision: {
        ...disrupt,
        reason: 'Drifted',
        method: 'drift',
        outcome: 'abandoned',
        why: 'a candidate changed',
        failedValidations: 2,
      },
      expected: {
        [series('karpenter_voluntary_disruption_failed_validations_total', {
          consolidation_type: 'none',
        })]: 2,
      },
    },
    {
      decision: { ...disrupt, outcome: 'failed', why: 'replacement default-r1 did not initialize in time' },
      expected: {
        // Karpenter writes the decision as the consolidation type here.
        [series('karpenter_voluntary_disruption_queue_failures_total', {
          decision: 'replace',
          reason: 'underutilized',
          consolidation_type: 'replace',
        })]: 1,
      },
    },
  ],
  drifted: [
    {
      decision: {
        kind: 'drifted',
        reason: 'NodePoolDrifted',
        nodeClaim: 'a',
        nodePool: 'default',
        detail: 'hash',
      },
      expected: {},
    },
  ],
  adopted: [
    {
      decision: {
        kind: 'adopted',
        reason: 'hash versions Flotilla does not compare',
        nodeClaim: 'a',
        nodePool: 'default',
        previous: 'nodepool=v3 ec2nodeclass=v6',
      },
      expected: {},
    },
  ],
  unconsolidatable: [
    {
      decision: {
        kind: 'unconsolidatable',
        reason: "can't replace with a cheaper node",
        nodeClaim: 'a',
        node: 'n',
        nodePool: 'default',
      },
      expected: {},
    },
  ],
  disruptionPass: [
    {
      decision: pass,
      expected: {
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'empty' })]: 1,
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'drifted' })]: 2,
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'underutilized' })]: 4,
        [series('voluntary_disruption_blocked_nodes', { reason: 'pdb' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'doNotDisruptPod' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'budget' })]: 2,
        [series('voluntary_disruption_blocked_nodes', { reason: 'notInitialized' })]: 1,
        // The budgets' reasons as Karpenter writes them here: as the NodePool's spec spells them.
        [allowed('default', 'Empty')]: 1,
        [allowed('default', 'Drifted')]: 0,
        [allowed('default', 'Underutilized')]: 1,
        [allowed('batch', 'Empty')]: 3,
        [allowed('batch', 'Drifted')]: 3,
        [allowed('batch', 'Underutilized')]: 3,
      },
    },
    {
      decision: {
        ...pass,
        allowed: {},
        disrupting: { default: 2 },
        consolidationMoves: [
          { nodePool: 'default', policy: 'Balanced', decision: 'rejected', count: 3, scores: [0.2, 0.3] },
          {
            nodePool: 'batch',
            policy: 'WhenEmptyOrUnderutilized',
            decision: 'approved',
            count: 1,
            scores: [],
          },
        ],
      },
      expected: {
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'empty' })]: 1,
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'drifted' })]: 2,
        [series('karpenter_voluntary_disruption_eligible_nodes', { reason: 'underutilized' })]: 4,
        [series('voluntary_disruption_blocked_nodes', { reason: 'pdb' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'doNotDisruptPod' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'budget' })]: 2,
        [series('voluntary_disruption_blocked_nodes', { reason: 'notInitialized' })]: 1,
        // Karpenter counts a NodePool's disrupting nodes against each reason's budget.
        [consuming('default', 'Empty')]: 2,
        [consuming('default', 'Drifted')]: 2,
        [consuming('default', 'Underutilized')]: 2,
        [series('karpenter_consolidation_moves_total', {
          decision: 'rejected',
          nodepool: 'default',
          policy: 'Balanced',
        })]: 3,
        [series('karpenter_consolidation_score', {
          decision: 'rejected',
          nodepool: 'default',
          policy: 'Balanced',
        })]: 0.5,
        [series('karpenter_consolidation_moves_total', {
          decision: 'approved',
          nodepool: 'batch',
          policy: 'WhenEmptyOrUnderutilized',
        })]: 1,
      },
    },
    {
      decision: { ...pass, reason: 'lease held', eligible: {}, blockedBy: {}, allowed: {} },
      expected: {},
    },
  ],
  observe: [
    {
      decision: {
        kind: 'observe',
        reason: 'disruption pass',
        since: '2026-03-01T11:59:00.000Z',
        clusterCostLimitPerHour: 40,
        podStartupSeconds: [31.5, 42, 7.2],
        nodePools: {
          default: {
            nodes: 2,
            cpu: 8,
            memoryBytes: 34_359_738_368,
            limits: { cpu: 100, memory: 400_000_000_000, 'nvidia.com/gpu': 4 },
            costLimitPerHour: 2.5,
            pricePerHour: 0.384,
            idlePricePerHour: 0.096,
            unpricedNodeClaims: 1,
            cpuUtilization: 75,
            memoryUtilization: 40,
            allocatable: { cpu: 7.8, memoryBytes: 30_000_000_000 },
            podRequests: { cpu: 5.85, memoryBytes: 12_000_000_000 },
            daemonRequests: { cpu: 0.4, memoryBytes: 1_000_000_000 },
            systemOverhead: { cpu: 0.2, memoryBytes: 4_359_738_368 },
            oldestNodeSeconds: 7200,
          },
          empty: {
            nodes: 0,
            cpu: 0,
            memoryBytes: 0,
            limits: { nodes: 5 },
            pricePerHour: 0,
            idlePricePerHour: 0,
            cpuUtilization: 0,
            memoryUtilization: 0,
            ...NO_NODES,
          },
        },
        conditions: {
          nodeClaim: [
            // The steady state of a NodeClaim's condition is no series; only its transitions count.
            {
              type: 'Ready',
              status: 'True',
              reason: 'Ready',
              objects: 2,
              longestSeconds: 7100,
              transitions: 1,
              steady: true,
            },
            {
              type: 'Consolidatable',
              status: 'True',
              reason: 'Consolidatable',
              objects: 1,
              longestSeconds: 300,
              transitions: 0,
            },
          ],
          node: [{ type: 'MemoryPressure', status: 'True', objects: 1, longestSeconds: 60, transitions: 1 }],
          nodePool: [
            { type: 'Ready', status: 'False', reason: '', objects: 1, longestSeconds: 30, transitions: 1 },
          ],
          ec2NodeClass: [
            {
              type: 'AMIsReady',
              status: 'False',
              reason: 'AMINotFound',
              objects: 1,
              longestSeconds: 900,
              transitions: 0,
            },
            {
              type: 'Ready',
              status: 'True',
              reason: 'Ready',
              objects: 2,
              longestSeconds: 86_400,
              transitions: 1,
              steady: true,
            },
          ],
        },
        terminating: { nodeClaimSeconds: 45, nodeSeconds: 40 },
      },
      expected: {
        [series('karpenter_pods_startup_duration_seconds')]: 80.7,
        [usage('default', 'cpu')]: 8,
        [usage('default', 'memory')]: 34_359_738_368,
        [usage('default', 'nodes')]: 2,
        [limit('default', 'cpu')]: 100,
        [limit('default', 'memory')]: 400_000_000_000,
        // Resource names as Karpenter writes them in labels.
        [limit('default', 'nvidia.com/gpu')]: 4,
        [series('karpenter_nodepools_cost_total', { nodepool: 'default' })]: 0.384,
        [series('nodepools_idle_cost', { nodepool: 'default' })]: 0.096,
        [series('nodepools_cost_limit', { nodepool: 'default' })]: 2.5,
        [series('karpenter_nodepools_cost_tracker_errors_total', { nodepool: 'default' })]: 1,
        [nodes('allocatable', 'default', 'cpu')]: 7.8,
        [nodes('allocatable', 'default', 'memory')]: 30_000_000_000,
        [nodes('total_pod_requests', 'default', 'cpu')]: 5.85,
        [nodes('total_pod_requests', 'default', 'memory')]: 12_000_000_000,
        [nodes('total_daemon_requests', 'default', 'cpu')]: 0.4,
        [nodes('total_daemon_requests', 'default', 'memory')]: 1_000_000_000,
        [nodes('system_overhead', 'default', 'cpu')]: 0.2,
        [nodes('system_overhead', 'default', 'memory')]: 4_359_738_368,
        [series('karpenter_nodes_current_lifetime_seconds', { nodepool: 'default' })]: 7200,
        [usage('empty', 'cpu')]: 0,
        [usage('empty', 'memory')]: 0,
        [usage('empty', 'nodes')]: 0,
        [limit('empty', 'nodes')]: 5,
        [series('karpenter_nodepools_cost_total', { nodepool: 'empty' })]: 0,
        [series('nodepools_idle_cost', { nodepool: 'empty' })]: 0,
        [nodes('allocatable', 'empty', 'cpu')]: 0,
        [nodes('allocatable', 'empty', 'memory')]: 0,
        [nodes('total_pod_requests', 'empty', 'cpu')]: 0,
        [nodes('total_pod_requests', 'empty', 'memory')]: 0,
        [nodes('total_daemon_requests', 'empty', 'cpu')]: 0,
        [nodes('total_daemon_requests', 'empty', 'memory')]: 0,
        [nodes('system_overhead', 'empty', 'cpu')]: 0,
        [nodes('system_overhead', 'empty', 'memory')]: 0,
        // Over every NodePool: 2 nodes; 5.85 of 7.8 cores and 12 of 30 GB requested.
        [series('karpenter_cluster_state_node_count')]: 2,
        [series('cluster_cost_limit')]: 40,
        [series('karpenter_cluster_utilization_percent', { resource_type: 'cpu' })]: 75,
        [series('karpenter_cluster_utilization_percent', { resource_type: 'memory' })]: 40,
        [series('operator_nodeclaim_status_condition_transitions_total', {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
        })]: 1,
        [series('operator_nodeclaim_status_condition_count', {
          type: 'Consolidatable',
          status: 'True',
          reason: 'Consolidatable',
        })]: 1,
        [series('operator_nodeclaim_status_condition_current_status_seconds', {
          type: 'Consolidatable',
          status: 'True',
          reason: 'Consolidatable',
        })]: 300,
        [series('operator_node_status_condition_count', { type: 'MemoryPressure', status: 'True' })]: 1,
        [series('operator_node_status_condition_current_status_seconds', {
          type: 'MemoryPressure',
          status: 'True',
        })]: 60,
        [series('operator_node_status_condition_transitions_total', {
          type: 'MemoryPressure',
          status: 'True',
        })]: 1,
        // An empty reason, as CloudWatch takes no empty value.
        [series('operator_nodepool_status_condition_count', {
          type: 'Ready',
          status: 'False',
          reason: 'none',
        })]: 1,
        [series('operator_nodepool_status_condition_current_status_seconds', {
          type: 'Ready',
          status: 'False',
          reason: 'none',
        })]: 30,
        [series('operator_nodepool_status_condition_transitions_total', {
          type: 'Ready',
          status: 'False',
          reason: 'none',
        })]: 1,
        [series('operator_ec2nodeclass_status_condition_count', {
          type: 'AMIsReady',
          status: 'False',
          reason: 'AMINotFound',
        })]: 1,
        [series('operator_ec2nodeclass_status_condition_current_status_seconds', {
          type: 'AMIsReady',
          status: 'False',
          reason: 'AMINotFound',
        })]: 900,
        [series('operator_ec2nodeclass_status_condition_transitions_total', {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
        })]: 1,
        [series('operator_nodeclaim_termination_current_time_seconds')]: 45,
        [series('operator_node_termination_current_time_seconds')]: 40,
      },
    },
  ],
  compare: [
    {
      decision: {
        kind: 'compare',
        reason: 'compared',
        day: '2026-03-01',
        from: '2026-03-01T00:00:30.000Z',
        to: '2026-03-01T23:59:30.000Z',
        hours: 23.9833,
        live: { pricePerHour: 1.2, dollars: 28.78, podWaitP50Seconds: 41, podWaitP90Seconds: 75 },
        flotilla: { pricePerHour: 0.9, dollars: 21.585, podWaitP50Seconds: 2 },
        savingsPerHour: {
          'cheaper launch': 0.1,
          'launch not made': 0,
          'replacement not made': 0,
          'extra launch': -0.05,
          disruption: 0.25,
        },
        differences: [],
        differenceCount: 0,
        lines: 2900,
        unreadableLines: 0,
      },
      expected: {
        [series('shadow_observed_hours')]: 23.9833,
        [series('shadow_cost_per_hour', { side: 'live' })]: 1.2,
        [series('shadow_cost_per_hour', { side: 'flotilla' })]: 0.9,
        [series('shadow_pod_wait_seconds', { side: 'live', quantile: 'p50' })]: 41,
        [series('shadow_pod_wait_seconds', { side: 'live', quantile: 'p90' })]: 75,
        [series('shadow_pod_wait_seconds', { side: 'flotilla', quantile: 'p50' })]: 2,
        [series('shadow_savings_per_hour', { reason: 'cheaper launch' })]: 0.1,
        [series('shadow_savings_per_hour', { reason: 'launch not made' })]: 0,
        [series('shadow_savings_per_hour', { reason: 'replacement not made' })]: 0,
        [series('shadow_savings_per_hour', { reason: 'extra launch' })]: -0.05,
        [series('shadow_savings_per_hour', { reason: 'disruption' })]: 0.25,
      },
    },
    {
      decision: {
        kind: 'compare',
        reason: 'no observation',
        day: '2026-03-02',
        hours: 0,
        lines: 12,
        unreadableLines: 1,
      },
      expected: { [series('shadow_observed_hours')]: 0 },
    },
  ],
};

/** Every entry of the corpus, in kind order. */
export const CORPUS_ENTRIES: readonly CorpusEntry[] = Object.values(CORPUS).flat() as readonly CorpusEntry[];
