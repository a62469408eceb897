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
} as const;

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

export const CORPUS: { readonly [K in DecisionKind]: readonly CorpusEntry<K>[] } = {
  skip: [
    {
      decision: { kind: 'skip', reason: 'no provisionable pods', leaseToken: 3 },
      expected: {
        [series('pods_unbound_time_seconds')]: 0,
        [series('scheduler_queue_depth')]: 0,
        [series('scheduler_unschedulable_pods_count')]: 0,
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
      },
      expected: {
        [series('pods_unbound_time_seconds')]: 95.5,
        [series('scheduler_queue_depth')]: 12,
        [series('scheduler_unschedulable_pods_count')]: 3,
        [series('scheduler_scheduling_duration_seconds')]: 0.25,
      },
    },
  ],
  launch: [
    {
      decision: launch,
      expected: { [series('nodeclaims_created_total', { nodePool: 'default', reason: 'provisioning' })]: 1 },
    },
    {
      decision: { ...launch, reason: 'static', nodePool: 'fixed' },
      expected: { [series('nodeclaims_created_total', { nodePool: 'fixed', reason: 'static' })]: 1 },
    },
    { decision: { ...launch, reason: 'resumed' }, expected: {} },
    {
      decision: {
        ...launch,
        outcome: 'insufficientCapacity',
        offerings: ['spot:m6i.xlarge:us-east-1a'],
      },
      expected: {
        [series('nodeclaims_created_total', { nodePool: 'default', reason: 'provisioning' })]: 1,
        [series('cloudprovider_instance_launch_failures_total', {
          nodePool: 'default',
          reason: 'insufficientCapacity',
          capacityType: 'spot',
        })]: 1,
        [series('cloudprovider_errors_total', { reason: 'insufficientCapacity' })]: 1,
      },
    },
    {
      decision: { ...launch, outcome: 'failed', capacityType: 'on-demand', error: 'UnauthorizedOperation' },
      expected: {
        [series('nodeclaims_created_total', { nodePool: 'default', reason: 'provisioning' })]: 1,
        [series('cloudprovider_instance_launch_failures_total', {
          nodePool: 'default',
          reason: 'failed',
          capacityType: 'on-demand',
        })]: 1,
        [series('cloudprovider_errors_total', { reason: 'failed' })]: 1,
      },
    },
    {
      decision: { ...launch, outcome: 'fenced' },
      expected: {
        [series('cloudprovider_instance_launch_failures_total', {
          nodePool: 'default',
          reason: 'fenced',
          capacityType: 'spot',
        })]: 1,
      },
    },
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
      expected: { [series('nodepools_launch_backoff_started_total', { nodePool: 'gpu' })]: 1 },
    },
    {
      decision: { kind: 'launchBackoff', reason: 'expired', action: 'end', nodePool: 'gpu', failures: 0 },
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
      expected: { [series('nodes_created_total', { nodePool: 'default', zone: 'us-east-1b' })]: 1 },
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
      decision: { kind: 'delete', reason: 'launch_timeout', nodeClaim: 'a', nodePool: 'default' },
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
      },
      expected: {
        [series('interruption_received_messages_total', { reason: 'spotInterruption' })]: 1,
        [series('nodeclaims_disrupted_total', { nodePool: 'default', reason: 'spotInterruption' })]: 1,
      },
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
        [series('interruption_received_messages_total', { reason: 'rebalanceRecommendation' })]: 1,
      },
    },
  ],
  ignoreInterruption: [
    {
      decision: {
        kind: 'ignoreInterruption',
        reason: 'not acted on',
        interruption: 'unknown',
        eventId: 'e-3',
      },
      expected: { [series('interruption_received_messages_total', { reason: 'unknown' })]: 1 },
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
      expected: { [series('pods_drained_total', { nodePool: 'default', reason: 'SpotInterruption' })]: 4 },
    },
    {
      decision: {
        kind: 'drain',
        ...termination,
        action: 'evict',
        tier: 'critical',
        evicted: 0,
        blocked: 2,
        gone: 0,
        blockedPods: [],
      },
      expected: {},
    },
    {
      decision: { kind: 'drain', ...termination, reason: 'deleted', action: 'forceDelete', pods: pods(2) },
      expected: { [series('pods_drained_total', { nodePool: 'default', reason: 'deleted' })]: 2 },
    },
  ],
  terminate: [{ decision: { kind: 'terminate', ...termination, instanceId: 'i-0a' }, expected: {} }],
  finalizeNode: [
    {
      decision: { kind: 'finalizeNode', ...termination, node: 'n' },
      expected: { [series('nodes_terminated_total', { nodePool: 'default' })]: 1 },
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
      decision: { kind: 'finalizeNodeClaim', ...termination, capacityType: 'spot', zone: 'us-east-1a' },
      expected: {
        [series('nodeclaims_terminated_total', {
          nodePool: 'default',
          capacityType: 'spot',
          zone: 'us-east-1a',
        })]: 1,
      },
    },
    {
      decision: { kind: 'finalizeNodeClaim', ...termination, reason: 'deleted' },
      expected: {
        [series('nodeclaims_terminated_total', {
          nodePool: 'default',
          capacityType: 'unknown',
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
      expected: { [series('nodeclaims_disrupted_total', { nodePool: 'default', reason: 'repair' })]: 1 },
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
  disrupt: [
    {
      decision: disrupt,
      expected: {
        [series('voluntary_disruption_decisions_total', { nodePool: 'default', reason: 'Underutilized' })]: 1,
        // $0.384/h of candidates replaced by $0.096/h.
        [series('voluntary_disruption_savings', { reason: 'Underutilized' })]: 0.288,
        [series('nodeclaims_created_total', { nodePool: 'default', reason: 'disruption' })]: 1,
      },
    },
    {
      // The replace command's candidates deleted once its replacement is initialized: no new decision.
      decision: { ...disrupt, outcome: 'deleted' },
      expected: {
        [series('nodeclaims_disrupted_total', { nodePool: 'default', reason: 'Underutilized' })]: 1,
        [series('nodeclaims_disrupted_total', { nodePool: 'batch', reason: 'Underutilized' })]: 1,
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
      },
      expected: {
        [series('voluntary_disruption_decisions_total', { nodePool: 'default', reason: 'Empty' })]: 1,
        [series('voluntary_disruption_savings', { reason: 'Empty' })]: 0.384,
        [series('nodeclaims_disrupted_total', { nodePool: 'default', reason: 'Empty' })]: 2,
      },
    },
    { decision: { ...disrupt, outcome: 'abandoned', why: 'a candidate changed' }, expected: {} },
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
        [series('voluntary_disruption_eligible_nodes', { reason: 'Empty' })]: 1,
        [series('voluntary_disruption_eligible_nodes', { reason: 'Drifted' })]: 2,
        [series('voluntary_disruption_eligible_nodes', { reason: 'Underutilized' })]: 4,
        [series('voluntary_disruption_blocked_nodes', { reason: 'pdb' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'doNotDisruptPod' })]: 1,
        [series('voluntary_disruption_blocked_nodes', { reason: 'budget' })]: 2,
        [series('voluntary_disruption_blocked_nodes', { reason: 'notInitialized' })]: 1,
        [series('nodepools_allowed_disruptions', { nodePool: 'default', reason: 'Empty' })]: 1,
        [series('nodepools_allowed_disruptions', { nodePool: 'default', reason: 'Drifted' })]: 0,
        [series('nodepools_allowed_disruptions', { nodePool: 'default', reason: 'Underutilized' })]: 1,
        [series('nodepools_allowed_disruptions', { nodePool: 'batch', reason: 'Empty' })]: 3,
        [series('nodepools_allowed_disruptions', { nodePool: 'batch', reason: 'Drifted' })]: 3,
        [series('nodepools_allowed_disruptions', { nodePool: 'batch', reason: 'Underutilized' })]: 3,
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
        podStartupSeconds: [31.5, 42, 7.2],
        nodePools: {
          default: {
            nodes: 2,
            cpu: 8,
            memoryBytes: 34_359_738_368,
            limits: { cpu: 100, memory: 400_000_000_000 },
            pricePerHour: 0.384,
            idlePricePerHour: 0.096,
            cpuUtilization: 75,
            memoryUtilization: 40,
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
          },
        },
      },
      expected: {
        [series('pods_startup_duration_seconds')]: 80.7,
        [series('nodepools_usage', { nodePool: 'default', resourceType: 'cpu' })]: 8,
        [series('nodepools_usage', { nodePool: 'default', resourceType: 'memory' })]: 34_359_738_368,
        [series('nodepools_usage', { nodePool: 'default', resourceType: 'nodes' })]: 2,
        [series('nodepools_limit', { nodePool: 'default', resourceType: 'cpu' })]: 100,
        [series('nodepools_limit', { nodePool: 'default', resourceType: 'memory' })]: 400_000_000_000,
        [series('nodepools_cost_total', { nodePool: 'default' })]: 0.384,
        [series('nodepools_idle_cost', { nodePool: 'default' })]: 0.096,
        [series('nodepools_utilization_percent', { nodePool: 'default', resourceType: 'cpu' })]: 75,
        [series('nodepools_utilization_percent', { nodePool: 'default', resourceType: 'memory' })]: 40,
        [series('cluster_state_node_count', { nodePool: 'default' })]: 2,
        [series('nodepools_usage', { nodePool: 'empty', resourceType: 'cpu' })]: 0,
        [series('nodepools_usage', { nodePool: 'empty', resourceType: 'memory' })]: 0,
        [series('nodepools_usage', { nodePool: 'empty', resourceType: 'nodes' })]: 0,
        [series('nodepools_limit', { nodePool: 'empty', resourceType: 'nodes' })]: 5,
        [series('nodepools_cost_total', { nodePool: 'empty' })]: 0,
        [series('nodepools_idle_cost', { nodePool: 'empty' })]: 0,
        [series('nodepools_utilization_percent', { nodePool: 'empty', resourceType: 'cpu' })]: 0,
        [series('nodepools_utilization_percent', { nodePool: 'empty', resourceType: 'memory' })]: 0,
        [series('cluster_state_node_count', { nodePool: 'empty' })]: 0,
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
