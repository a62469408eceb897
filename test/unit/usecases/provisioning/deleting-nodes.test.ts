import { describe, expect, it } from 'vitest';
import { needsPlaceOffDeletingNode, type Pod, solve } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { type ClusterState, toSchedulingInput } from '../../../../shared/usecases/state/cluster-state.ts';
import { COMMAND_ANNOTATION } from '../../../../shared/usecases/state/command-record.ts';
import {
  isDeletingNode,
  nodeClaimLookup,
  takeDeletingNodePods,
} from '../../../../shared/usecases/state/deleting-nodes.ts';
import { selectNodePools } from '../../../../shared/usecases/state/eligibility.ts';
import { trueConditions } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode, launchedNodeLabels } from '../../../fixtures/nodes.ts';
import { pod } from '../../core/builders.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { DEFAULT_NODE_CLASS, readyNodeClass } from '../../memory/fixtures.ts';
import { nodePool as clusterNodePool } from './builders.ts';

// The provisioner's input when nodes are being deleted: the pods that need a place elsewhere are
// scheduled with the pending ones, and the capacity launched for them is found again later.

const GiB = 1024 ** 3;
const AT = new Date('2026-11-21T10:00:00Z');
const DISRUPTED = { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' } as const;
const providerOf = (name: string) => `aws:///us-east-1a/i-0${name.replace(/[^0-9a-f]/g, '')}abc`;

/** A NodeClaim of NodePool `default` for an m.xlarge; `node` when its Node has joined. */
function claim(
  name: string,
  o: { node?: string; deleting?: boolean; annotations?: Record<string, string> } = {},
): ClusterNodeClaim {
  const joined = o.node !== undefined;
  return readNodeClaim(name, {
    uid: `uid-${name}`,
    labels: { 'karpenter.sh/nodepool': 'default', 'node.kubernetes.io/instance-type': 'm.xlarge' },
    annotations: o.annotations ?? {},
    finalizers: ['karpenter.sh/termination'],
    requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m.xlarge'] }],
    requests: { cpu: 3000 },
    deleting: o.deleting === true,
    status: {
      ...(joined ? { providerId: providerOf(o.node ?? ''), nodeName: o.node } : {}),
      conditions: joined
        ? trueConditions(['Launched', 'Registered', 'Initialized'], '2026-01-01T00:00:00Z')
        : [],
    },
  });
}

/** An initialized m.xlarge of NodePool `default` running `pods`. */
function node(name: string, pods: readonly Pod[], extra: Partial<ClusterNode> = {}): ClusterNode {
  return clusterNode(name, {
    providerId: providerOf(name),
    nodePoolName: 'default',
    labels: launchedNodeLabels(name, { instanceType: 'm.xlarge' }),
    allocatable: { cpu: 3920, memory: 15 * GiB, pods: 58 },
    capacity: { cpu: 4000, memory: 16 * GiB, pods: 58 },
    pods,
    finalizers: ['karpenter.sh/termination'],
    ...extra,
  });
}

const web = (name: string, extra: Partial<Pod> = {}): Pod => ({
  ...pod({ name, cpu: '1', memory: '1Gi' }),
  ...extra,
});
/** The Deployment's three pods that fill node `old`, and what else runs there. */
const webPods = [web('web-1'), web('web-2'), web('web-3')];
const daemonPod = web('agent-x', {
  daemonSetName: 'agent',
  containers: [{ name: 'a', requests: { cpu: 100 } }],
});
const mirrorPod = web('static-x', { disruption: { mirror: true } });
const toleratingPod = web('tolerant', { tolerations: [{ key: DISRUPTED.key, operator: 'Exists' }] });

function state(
  nodes: readonly ClusterNode[],
  nodeClaims: readonly ClusterNodeClaim[],
  pending: readonly Pod[] = [],
) {
  const out: ClusterState = {
    pendingPods: pending,
    nodes,
    nodeClaims,
    nodePools: [clusterNodePool('default')],
    nodeClasses: [readyNodeClass(AT)],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  return out;
}

function plan(s: ClusterState, rescheduleDeletingNodes = true) {
  const types = new Map([[DEFAULT_NODE_CLASS.name, SMALL_TYPES]]);
  const input = toSchedulingInput(s, selectNodePools(s.nodePools, s.nodeClasses), types, {
    nowMs: AT.getTime(),
    rescheduleDeletingNodes,
  });
  return { input, result: solve(input.solve) };
}

const names = (pods: readonly { readonly name: string }[]) => pods.map((p) => p.name).sort();

describe('which pods of a deleting node need a place elsewhere', () => {
  it.each([
    ['a Deployment pod', web('w'), true],
    ['a DaemonSet pod', daemonPod, false],
    ['a mirror pod', mirrorPod, false],
    ['a pod tolerating karpenter.sh/disrupted', toleratingPod, false],
    ['a pod tolerating every taint', web('all', { tolerations: [{ operator: 'Exists' }] }), false],
    [
      'a pod tolerating another taint',
      web('other', { tolerations: [{ key: 'x', operator: 'Exists' }] }),
      true,
    ],
    ['a terminating pod (its successor is counted)', web('t', { disruption: { deletedAtMs: 1 } }), false],
    [
      'a terminating StatefulSet pod (recreated only once gone)',
      web('s', { disruption: { deletedAtMs: 1, statefulSet: true } }),
      true,
    ],
  ])('%s: %s', (_what, p, expected) => {
    expect(needsPlaceOffDeletingNode(p)).toBe(expected);
  });

  it('takes them off a node whose NodeClaim is deleting, and off a deleting Node, and leaves the rest', () => {
    const all = [...webPods, daemonPod, mirrorPod, toleratingPod];
    const nodes = [
      node('old', all),
      node('gone', [web('g-1')], { deleting: true }),
      node('kept', [web('k-1')]),
    ];
    const claims = [claim('c-old', { node: 'old', deleting: true }), claim('c-kept', { node: 'kept' })];
    const taken = takeDeletingNodePods(nodes, claims);
    expect(names(taken.pods)).toEqual(['g-1', 'web-1', 'web-2', 'web-3']);
    expect(taken.deletingNodes).toEqual(['old', 'gone']);
    expect(names(taken.nodes[0]?.pods ?? [])).toEqual(['agent-x', 'static-x', 'tolerant']);
    expect(taken.nodes[1]?.pods).toEqual([]);
    expect(taken.nodes[2]).toBe(nodes[2]);
  });

  it('does not count a node a disruption command tainted while its NodeClaim is not deleted', () => {
    const tainted = node('candidate', webPods, { taints: [DISRUPTED] });
    const claims = [claim('c-candidate', { node: 'candidate', annotations: { [COMMAND_ANNOTATION]: '{}' } })];
    expect(isDeletingNode(tainted, nodeClaimLookup(claims))).toBe(false);
    expect(takeDeletingNodePods([tainted], claims).pods).toEqual([]);
  });
});

describe('the provisioner plans for the pods of deleting nodes', () => {
  const old = node('old', [...webPods, daemonPod]);
  const deleting = claim('c-old', { node: 'old', deleting: true });

  it('launches a NodeClaim for them at once, without counting them on their node', () => {
    const { input, result } = plan(state([old], [deleting]));
    expect(names(input.deletingNodePods)).toEqual(['web-1', 'web-2', 'web-3']);
    expect(names(input.solve.pods)).toEqual(['web-1', 'web-2', 'web-3']);
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(1);
    expect(names(result.nodeClaims[0]?.pods ?? [])).toEqual(['web-1', 'web-2', 'web-3']);
  });

  it('puts them in room another node has before launching', () => {
    const roomy = node('roomy', []);
    const { result } = plan(state([old, roomy], [deleting, claim('c-roomy', { node: 'roomy' })]));
    expect(result.nodeClaims).toEqual([]);
    expect(result.placements.map((p) => (p.kind === 'existingNode' ? p.nodeName : p.kind))).toEqual([
      'roomy',
      'roomy',
      'roomy',
    ]);
  });

  it('plans them only when asked (disruption and plan read the pending pods alone)', () => {
    const { input } = plan(state([old], [deleting]), false);
    expect(input.solve.pods).toEqual([]);
    expect(input.deletingNodePods).toEqual([]);
  });

  it('launches nothing again while the drain waits: the NodeClaim in flight is their room', () => {
    const replacement = claim('c-replacement');
    const { result } = plan(state([old], [deleting, replacement]));
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toEqual([]);
    expect(
      new Set(result.placements.map((p) => (p.kind === 'inFlightNodeClaim' ? p.nodeClaimName : p.kind))),
    ).toEqual(new Set(['c-replacement']));
  });

  it('launches nothing again once they are evicted and their successors pending: they take the NodeClaim in flight', () => {
    const evicted = node('old', [
      ...webPods.map((p) => ({ ...p, disruption: { deletedAtMs: 1 } })),
      daemonPod,
    ]);
    const successors = [web('web-4'), web('web-5'), web('web-6')];
    const { input, result } = plan(state([evicted], [deleting, claim('c-replacement')], successors));
    expect(input.deletingNodePods).toEqual([]);
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toEqual([]);
    expect(result.placements.map((p) => (p.kind === 'inFlightNodeClaim' ? p.nodeClaimName : p.kind))).toEqual(
      ['c-replacement', 'c-replacement', 'c-replacement'],
    );
  });

  it('launches nothing for the candidates of a disruption command in flight: its replacement is already launched', () => {
    const candidate = node('candidate', webPods, { taints: [DISRUPTED] });
    const claims = [
      claim('c-candidate', { node: 'candidate', annotations: { [COMMAND_ANNOTATION]: '{}' } }),
      claim('c-disruption-replacement'),
    ];
    const { input, result } = plan(state([candidate], claims));
    expect(input.solve.pods).toEqual([]);
    expect(result.nodeClaims).toEqual([]);
    // Once the command deletes the candidate, its pods go to the replacement.
    const deleted = [{ ...claims[0], deleting: true } as ClusterNodeClaim, claims[1] as ClusterNodeClaim];
    const after = plan(state([candidate], deleted));
    expect(names(after.input.deletingNodePods)).toEqual(['web-1', 'web-2', 'web-3']);
    expect(after.result.nodeClaims).toEqual([]);
    expect(after.result.unschedulable).toEqual([]);
  });
});
