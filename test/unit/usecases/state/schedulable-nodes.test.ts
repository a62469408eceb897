import { describe, expect, it } from 'vitest';
import { solve } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import {
  type ClusterState,
  toInFlightNodeClaims,
  toSchedulableNodes,
  toSchedulingInput,
} from '../../../../shared/usecases/state/cluster-state.ts';
import { selectNodePools } from '../../../../shared/usecases/state/eligibility.ts';
import { trueConditions } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode, launchedNodeLabels } from '../../../fixtures/nodes.ts';
import { nodePool, pod, solveInput } from '../../core/builders.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { DEFAULT_NODE_CLASS, readyNodeClass } from '../../memory/fixtures.ts';
import { nodePool as clusterNodePool } from '../provisioning/builders.ts';

const DEFAULT_NODE_CLASS_REF = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' } as const;

const GiB = 1024 ** 3;
const startupTaint = { key: 'example.com/agent-not-ready', effect: 'NoSchedule' } as const;
const providerId = 'aws:///us-east-1a/i-0123456789abcdef0';

/** NodeClaim `default-abcde` for an m.xlarge with a startup taint, these conditions True. */
function claim(conditions: readonly string[]): ClusterNodeClaim {
  return readNodeClaim('default-abcde', {
    uid: 'uid-claim',
    labels: { 'karpenter.sh/nodepool': 'default', 'node.kubernetes.io/instance-type': 'm.xlarge' },
    finalizers: ['karpenter.sh/termination'],
    requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m.xlarge'] }],
    requests: { cpu: 2000 },
    startupTaints: [startupTaint],
    status: {
      providerId,
      capacity: { cpu: 4000, memory: 16 * GiB, pods: 58 },
      allocatable: { cpu: 3920, memory: 15 * GiB, pods: 58 },
      conditions: trueConditions(conditions, '2026-01-01T00:00:00Z'),
    },
  });
}

/** The Node the kubelet has just created: labels and taints, no status yet. */
function joiningNode(extra: Partial<ClusterNode> = {}): ClusterNode {
  const name = 'ip-10-0-0-1.ec2.internal';
  return clusterNode(name, {
    uid: 'uid-node',
    providerId,
    nodePoolName: 'default',
    labels: launchedNodeLabels(name, { instanceType: 'm.xlarge' }),
    taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }, startupTaint],
    capacity: {},
    initialized: false,
    ready: false,
    ...extra,
  });
}

describe('nodes as the scheduler counts them', () => {
  it('gives a joining node its NodeClaim allocatable and taints until it registers', () => {
    const [node] = toSchedulableNodes([joiningNode()], [claim(['Launched'])]);
    expect(node?.allocatable).toEqual({ cpu: 3920, memory: 15 * GiB, pods: 58 });
    expect(node?.capacity).toEqual({ cpu: 4000, memory: 16 * GiB, pods: 58 });
    expect(node?.taints).toEqual([]);
  });

  it('keeps the Node taints once the claim is Registered, and initialized nodes unchanged but for the NodeClaim labels', () => {
    const registered = toSchedulableNodes(
      [joiningNode({ taints: [startupTaint] })],
      [claim(['Launched', 'Registered'])],
    );
    expect(registered[0]?.taints).toEqual([startupTaint]);
    expect(registered[0]?.allocatable['cpu']).toBe(3920);

    const ready = joiningNode({ initialized: true, ready: true, allocatable: { cpu: 3900 } });
    const initialized = claim(['Launched', 'Registered', 'Initialized']);
    expect(toSchedulableNodes([ready], [initialized])).toEqual([
      { ...ready, claimLabels: initialized.labels },
    ]);
    const deleted = { ...claim(['Launched', 'Registered', 'Initialized']), deleting: true };
    expect(toSchedulableNodes([joiningNode()], [deleted])[0]?.unschedulable).toBe(true);
    expect(toSchedulableNodes([ready], [deleted])[0]).toEqual({
      ...ready,
      unschedulable: true,
      claimLabels: deleted.labels,
    });
    const foreign = joiningNode({ providerId: 'aws:///us-east-1a/i-other', name: 'other' });
    expect(toSchedulableNodes([foreign], [claim(['Launched'])])).toEqual([foreign]);
  });

  it('takes nothing new onto a node with a pod that could not be read, Flotilla’s or not', () => {
    const unreadablePods = ['pod "apps/x": spec: missing'];
    const ready = joiningNode({ initialized: true, ready: true, allocatable: { cpu: 3900 }, unreadablePods });
    const [ours] = toSchedulableNodes([ready], [claim(['Launched', 'Registered', 'Initialized'])]);
    expect(ours?.unschedulable).toBe(true);
    const foreign = joiningNode({ providerId: 'aws:///us-east-1a/i-other', name: 'other', unreadablePods });
    expect(toSchedulableNodes([foreign], [])[0]).toEqual({ ...foreign, unschedulable: true });
    const plain = joiningNode({ initialized: true, ready: true, allocatable: { cpu: 3900 } });
    expect(
      toSchedulableNodes([plain], [claim(['Launched', 'Registered', 'Initialized'])])[0]?.unschedulable,
    ).toBe(undefined);
  });

  it('takes nothing new onto a node Flotilla initialized that is no longer Ready, but counts one coming up', () => {
    const lost = joiningNode({ initialized: true, ready: false, allocatable: { cpu: 3900 } });
    const initialized = claim(['Launched', 'Registered', 'Initialized']);
    expect(toSchedulableNodes([lost], [initialized])[0]?.unschedulable).toBe(true);
    // Registered, not initialized: its kubelet is still starting, and it is counted on.
    expect(toSchedulableNodes([joiningNode()], [claim(['Launched'])])[0]?.unschedulable).toBe(undefined);
  });

  it('plans no new NodeClaim for pods that fit a node whose kubelet has not reported status yet', () => {
    const claims = [claim(['Launched'])];
    const nodes = [joiningNode()];
    const pending = [
      pod({ name: 'a', cpu: '1', memory: '1Gi' }),
      pod({ name: 'b', cpu: '1', memory: '1Gi' }),
    ];
    const input = solveInput({
      pods: pending,
      types: SMALL_TYPES,
      nodePools: [nodePool({ startupTaints: [startupTaint] })],
      nodeClaims: toInFlightNodeClaims(claims, nodes),
    });

    // Counting the Node as the API server shows it launches more nodes for the same pods.
    expect(solve({ ...input, nodes }).nodeClaims.length).toBeGreaterThan(0);

    const result = solve({ ...input, nodes: toSchedulableNodes(nodes, claims) });
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toEqual([]);
    expect(result.placements.map((p) => (p.kind === 'existingNode' ? p.nodeName : p.kind))).toEqual([
      'ip-10-0-0-1.ec2.internal',
      'ip-10-0-0-1.ec2.internal',
    ]);
  });
});

describe('the scheduling input built from cluster state', () => {
  const AT = new Date('2026-11-21T10:00:00Z');
  const readyClass = readyNodeClass(AT);
  const state: ClusterState = {
    pendingPods: [pod({ name: 'web', cpu: '1' })],
    nodes: [joiningNode()],
    nodeClaims: [
      claim(['Launched']),
      { ...claim(['Launched']), name: 'default-fghij', status: { conditions: [] } },
    ],
    nodePools: [
      clusterNodePool('default'),
      clusterNodePool(
        'gpu',
        { nodeClassName: 'missing' },
        { nodeClassRef: { ...DEFAULT_NODE_CLASS_REF, name: 'missing' } },
      ),
    ],
    nodeClasses: [readyClass],
    daemonSets: [],
    namespaceLabels: new Map(),
  };

  it('offers only eligible NodePools, counts joining nodes with their claims, and the rest in flight', () => {
    const types = new Map([[DEFAULT_NODE_CLASS.name, SMALL_TYPES]]);
    const input = toSchedulingInput(state, selectNodePools(state.nodePools, state.nodeClasses), types, {
      nowMs: AT.getTime(),
    });
    expect(input.solve.nodePools.map((p) => p.name)).toEqual(['default']);
    expect([...input.nodeClasses.keys()]).toEqual([DEFAULT_NODE_CLASS.name]);
    expect(input.selection.skipped).toEqual([
      { nodePool: 'gpu', reason: expect.stringContaining('EC2NodeClass') },
    ]);
    expect(input.solve.nodes?.[0]?.allocatable).toEqual(claim([]).status.allocatable);
    expect(input.solve.nodeClaims?.map((c) => c.name)).toEqual(['default-fghij']);
    expect(input.solve.pods).toBe(state.pendingPods);
    expect(input.solve.nowMs).toBe(AT.getTime());
  });

  it('gives nodes their CSI attach limits and the scheduler the drivers of claims', () => {
    const types = new Map([[DEFAULT_NODE_CLASS.name, SMALL_TYPES]]);
    const nodeName = state.nodes[0]?.name ?? '';
    const claimDrivers = new Map([['default/data', 'ebs.csi.aws.com']]);
    const withLimits: ClusterState = {
      ...state,
      volumeLimits: { nodes: new Map([[nodeName, { 'ebs.csi.aws.com': 25 }]]), claimDrivers },
    };
    const input = toSchedulingInput(withLimits, selectNodePools(state.nodePools, state.nodeClasses), types, {
      nowMs: AT.getTime(),
    });
    expect(input.solve.nodes?.[0]?.volumeLimits).toEqual({ 'ebs.csi.aws.com': 25 });
    expect(input.solve.claimDrivers).toBe(claimDrivers);
  });
});
