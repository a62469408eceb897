import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../../shared/core/index.ts';
import type { CloudInstance, EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim, Condition } from '../../../../shared/ports/cluster.ts';
import {
  type ConditionInput,
  computeClaimChanges,
  driftOf,
  POD_SET_ANNOTATION,
  podSetDigest,
} from '../../../../shared/usecases/disruption/conditions.ts';
import {
  NODECLASS_HASH_ANNOTATION,
  NODECLASS_HASH_VERSION,
  NODECLASS_HASH_VERSION_ANNOTATION,
  NODEPOOL_HASH_VERSION,
  nodeClassHash,
  nodePoolHash,
} from '../../../../shared/usecases/state/new-nodeclaim.ts';
import { nodeClass } from '../provisioning/builders.ts';
import {
  boundPod,
  type ClaimOptions,
  clusterNode,
  condition,
  daemonPod,
  iso,
  MINUTE,
  nodeClaim,
  pool,
  READY_CONDITIONS,
  SECOND,
  T0,
} from './builders.ts';

const POOL = pool('default', { consolidateAfter: '30s' }, { templateAnnotations: { team: 'web' } });
const NOW = T0 + 60 * MINUTE;

/** A NodeClaim launched from POOL and `nodeClass` as they are now (so not drifted). */
function launched(o: ClaimOptions = {}): ClusterNodeClaim {
  return nodeClaim('c', {
    imageId: 'ami-1',
    ...o,
    labels: { 'topology.kubernetes.io/zone': 'us-east-1a', ...(o.labels ?? {}) },
    annotations: {
      'karpenter.sh/nodepool-hash': nodePoolHash(POOL),
      'karpenter.sh/nodepool-hash-version': NODEPOOL_HASH_VERSION,
      [NODECLASS_HASH_ANNOTATION]: nodeClassHash(nodeClass),
      [NODECLASS_HASH_VERSION_ANNOTATION]: NODECLASS_HASH_VERSION,
      ...(o.annotations ?? {}),
    },
  });
}

function instance(o: Partial<CloudInstance> = {}): CloudInstance {
  return {
    instanceId: 'i-c',
    providerId: 'aws:///us-east-1a/i-c',
    instanceType: 'm5.large',
    zone: 'us-east-1a',
    capacityType: 'on-demand',
    state: 'running',
    imageId: 'ami-1',
    subnetId: 'subnet-a',
    securityGroupIds: ['sg-1'],
    tags: {},
    ...o,
  };
}

function conditionInput(o: Partial<ConditionInput> = {}): ConditionInput {
  return {
    claim: launched(),
    node: undefined,
    pool: POOL,
    nodeClass,
    instance: instance(),
    nowMs: NOW,
    ...o,
  };
}

describe('driftOf', () => {
  const zoneB = pool(
    'default',
    {},
    {
      pool: {
        ...POOL.pool,
        requirements: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1b'] }],
      },
    },
  );
  const otherClass: EC2NodeClass = { ...nodeClass, spec: { ...nodeClass.spec, userData: 'echo changed' } };
  const gpuCount = 'karpenter.k8s.aws/instance-gpu-count';
  // The same spec, its image now kept for GPU types only, and a new one for the others.
  const imageForGpuOnly: EC2NodeClass = {
    ...nodeClass,
    status: {
      ...(nodeClass.status ?? { subnets: [], securityGroups: [], conditions: [] }),
      amis: [
        { id: 'ami-1', requirements: [{ key: gpuCount, operator: 'Exists' }] },
        { id: 'ami-2', requirements: [{ key: gpuCount, operator: 'DoesNotExist' }] },
      ],
    },
  };

  it.each<[string, Partial<ConditionInput>, string | undefined]>([
    ['a NodeClaim in sync with its NodePool and EC2NodeClass', {}, undefined],
    [
      'the NodePool template changed',
      { claim: launched({ annotations: { 'karpenter.sh/nodepool-hash': '12345' } }) },
      'NodePoolDrifted',
    ],
    [
      "a different hash of another version (Karpenter's own)",
      {
        claim: launched({
          annotations: { 'karpenter.sh/nodepool-hash': '12345', 'karpenter.sh/nodepool-hash-version': 'v3' },
        }),
      },
      undefined,
    ],
    [
      'a NodeClaim without a hash version',
      {
        claim: (() => {
          const c = launched({ annotations: { 'karpenter.sh/nodepool-hash': '12345' } });
          const { 'karpenter.sh/nodepool-hash-version': _, ...annotations } = c.annotations;
          return { ...c, annotations };
        })(),
      },
      undefined,
    ],
    [
      'a requirement its labels no longer satisfy',
      {
        pool: zoneB,
        claim: launched({ annotations: { 'karpenter.sh/nodepool-hash': nodePoolHash(zoneB) } }),
      },
      'RequirementsDrifted',
    ],
    ['the EC2NodeClass changed', { nodeClass: otherClass }, 'NodeClassDrift'],
    [
      'the EC2NodeClass hash of another version',
      {
        claim: launched({
          annotations: { [NODECLASS_HASH_ANNOTATION]: '1', [NODECLASS_HASH_VERSION_ANNOTATION]: 'v9' },
        }),
      },
      undefined,
    ],
    ['its image is no longer among the AMIs', { claim: launched({ imageId: 'ami-old' }) }, 'AMIDrift'],
    [
      'the image from EC2 when the NodeClaim has none',
      {
        claim: nodeClaim('c', { annotations: launched().annotations, labels: launched().labels }),
        instance: instance({ imageId: 'ami-old' }),
      },
      'AMIDrift',
    ],
    [
      "its image is now the EC2NodeClass's image for other instance types",
      {
        nodeClass: imageForGpuOnly,
        claim: launched({
          labels: { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': 'm5.large' },
        }),
      },
      'AMIDrift',
    ],
    [
      'its image is still the one for its instance type',
      {
        nodeClass: imageForGpuOnly,
        claim: launched({ labels: { 'kubernetes.io/arch': 'amd64', [gpuCount]: '1' } }),
      },
      undefined,
    ],
    [
      'its labels lack its instance type’s, so any AMI serves it',
      { nodeClass: imageForGpuOnly, claim: launched() },
      undefined,
    ],
    ['its subnet is no longer selected', { instance: instance({ subnetId: 'subnet-z' }) }, 'SubnetDrift'],
    [
      "its subnet is no longer selected, while EC2 reports another image than the NodeClaim's",
      { instance: instance({ subnetId: 'subnet-z', imageId: 'ami-elsewhere' }) },
      'SubnetDrift',
    ],
    [
      'its security groups differ',
      { instance: instance({ securityGroupIds: ['sg-1', 'sg-2'] }) },
      'SecurityGroupDrift',
    ],
    ['no instance listed: no cloud drift', { instance: undefined }, undefined],
    [
      'no EC2NodeClass: only the NodePool is judged',
      { nodeClass: undefined, claim: launched({ imageId: 'ami-old' }) },
      undefined,
    ],
    [
      'no NodePool: the EC2NodeClass is still judged',
      { pool: undefined, nodeClass: otherClass },
      'NodeClassDrift',
    ],
    [
      'NodePool drift comes before EC2NodeClass and cloud drift',
      {
        claim: launched({ imageId: 'ami-old', annotations: { 'karpenter.sh/nodepool-hash': '12345' } }),
        nodeClass: otherClass,
        instance: instance({ subnetId: 'subnet-z' }),
      },
      'NodePoolDrifted',
    ],
    [
      'EC2NodeClass drift comes before AMI drift',
      { claim: launched({ imageId: 'ami-old' }), nodeClass: otherClass },
      'NodeClassDrift',
    ],
  ])('%s: %s', (_, o, reason) => {
    expect(driftOf(conditionInput(o))?.reason).toBe(reason);
  });
});

describe('computeClaimChanges: Drifted', () => {
  const stale = { 'karpenter.sh/nodepool-hash': '12345' };
  const driftedCondition = (reason: string, atMs = T0): Condition =>
    condition('Drifted', 'True', atMs, reason);

  it('sets Drifted with reason NodePoolDrifted and reports the new drift', () => {
    const changes = computeClaimChanges(conditionInput({ claim: launched({ annotations: stale }) }));
    expect(changes.status?.conditions).toEqual([
      {
        type: 'Drifted',
        status: 'True',
        reason: 'NodePoolDrifted',
        message: expect.stringMatching(/NodePool template changed/),
      },
    ]);
    expect(changes.drifted?.reason).toBe('NodePoolDrifted');
    expect(changes.view.status.conditions.find((c) => c.type === 'Drifted')).toMatchObject({
      status: 'True',
      reason: 'NodePoolDrifted',
      lastTransitionTime: iso(NOW),
    });
  });

  it('writes nothing when Drifted already says the same', () => {
    const claim = launched({
      annotations: stale,
      conditions: [...READY_CONDITIONS, driftedCondition('NodePoolDrifted')],
    });
    const changes = computeClaimChanges(conditionInput({ claim }));
    expect(changes.status).toBeUndefined();
    expect(changes.drifted).toBeUndefined();
    expect(changes.view.status.conditions).toEqual(claim.status.conditions);
  });

  it('updates the reason of a claim already drifted, keeping its transition time, and reports no new drift', () => {
    const claim = launched({
      imageId: 'ami-old',
      conditions: [...READY_CONDITIONS, driftedCondition('NodePoolDrifted')],
    });
    const changes = computeClaimChanges(conditionInput({ claim }));
    expect(changes.status?.conditions).toMatchObject([
      { type: 'Drifted', status: 'True', reason: 'AMIDrift' },
    ]);
    expect(changes.drifted).toBeUndefined();
    expect(changes.view.status.conditions.find((c) => c.type === 'Drifted')?.lastTransitionTime).toBe(
      iso(T0),
    );
  });

  it('sets Drifted True over a Drifted False, with a new transition time', () => {
    const claim = launched({
      annotations: stale,
      conditions: [...READY_CONDITIONS, condition('Drifted', 'False', T0, 'NotDrifted')],
    });
    const changes = computeClaimChanges(conditionInput({ claim }));
    expect(changes.drifted?.reason).toBe('NodePoolDrifted');
    expect(changes.view.status.conditions.find((c) => c.type === 'Drifted')?.lastTransitionTime).toBe(
      iso(NOW),
    );
  });

  it('removes Drifted once the claim is no longer drifted', () => {
    const claim = launched({ conditions: [...READY_CONDITIONS, driftedCondition('NodePoolDrifted')] });
    const changes = computeClaimChanges(conditionInput({ claim }));
    expect(changes.status).toEqual({ removeConditions: ['Drifted'] });
    expect(changes.view.status.conditions.map((c) => c.type)).not.toContain('Drifted');
  });

  it.each([
    ['no Launched condition', [condition('Registered')]],
    ['Launched False', [condition('Launched', 'False')]],
  ])('never drifts a claim that has not launched (%s), and clears an old Drifted', (_, conditions) => {
    const fresh = computeClaimChanges(
      conditionInput({ claim: launched({ annotations: stale, conditions }) }),
    );
    expect(fresh.status).toBeUndefined();
    expect(fresh.drifted).toBeUndefined();
    const old = computeClaimChanges(
      conditionInput({
        claim: launched({
          annotations: stale,
          conditions: [...conditions, driftedCondition('NodePoolDrifted')],
        }),
      }),
    );
    expect(old.status).toEqual({ removeConditions: ['Drifted'] });
  });
});

describe('computeClaimChanges: hashes of another version (a NodeClaim Karpenter made)', () => {
  // As Karpenter v1.14 stamps its NodeClaims: its own hash functions, versions v3 and v6.
  const karpenters = {
    'karpenter.sh/nodepool-hash': '6821555240504101244',
    'karpenter.sh/nodepool-hash-version': 'v3',
    [NODECLASS_HASH_ANNOTATION]: '13117958216164493468',
    [NODECLASS_HASH_VERSION_ANNOTATION]: 'v6',
  };
  const ours = {
    'karpenter.sh/nodepool-hash': nodePoolHash(POOL),
    'karpenter.sh/nodepool-hash-version': NODEPOOL_HASH_VERSION,
    [NODECLASS_HASH_ANNOTATION]: nodeClassHash(nodeClass),
    [NODECLASS_HASH_VERSION_ANNOTATION]: NODECLASS_HASH_VERSION,
  };

  it('re-stamps a launched claim with Flotilla hashes of its NodePool and EC2NodeClass as they are now, without drifting it', () => {
    const changes = computeClaimChanges(conditionInput({ claim: launched({ annotations: karpenters }) }));
    expect(changes.metadata).toEqual({ annotations: ours });
    expect(changes.adopted).toEqual({ previous: 'nodepool=v3 ec2nodeclass=v6' });
    expect(changes.status).toBeUndefined();
    expect(changes.drifted).toBeUndefined();
    expect(changes.view.annotations).toMatchObject(ours);
    // The next pass sees its own hashes: nothing to write; a template change made after it drifts it.
    const next = computeClaimChanges(conditionInput({ claim: changes.view }));
    expect(next.metadata).toBeUndefined();
    expect(next.adopted).toBeUndefined();
    const changed = pool('default', { consolidateAfter: '30s' }, { templateAnnotations: { team: 'api' } });
    expect(computeClaimChanges(conditionInput({ claim: changes.view, pool: changed })).drifted?.reason).toBe(
      'NodePoolDrifted',
    );
  });

  it('stamps a claim that carries no hash at all, and only the hash whose version differs', () => {
    const none = launched({
      annotations: {
        'karpenter.sh/nodepool-hash': '',
        'karpenter.sh/nodepool-hash-version': '',
        [NODECLASS_HASH_ANNOTATION]: nodeClassHash(nodeClass),
      },
    });
    // launched() stamps Flotilla's versions; take the NodePool's away.
    const { 'karpenter.sh/nodepool-hash-version': _v, ...annotations } = none.annotations;
    const changes = computeClaimChanges(conditionInput({ claim: { ...none, annotations } }));
    expect(changes.metadata?.annotations).toEqual({
      'karpenter.sh/nodepool-hash': nodePoolHash(POOL),
      'karpenter.sh/nodepool-hash-version': NODEPOOL_HASH_VERSION,
    });
    expect(changes.adopted?.previous).toBe(`nodepool=none ec2nodeclass=${NODECLASS_HASH_VERSION}`);
  });

  it('leaves a drifted claim and one not launched with the hashes they have', () => {
    const drifted = computeClaimChanges(
      conditionInput({ claim: launched({ annotations: karpenters, imageId: 'ami-old' }) }),
    );
    expect(drifted.drifted?.reason).toBe('AMIDrift');
    expect(drifted.metadata).toBeUndefined();
    const notLaunched = computeClaimChanges(
      conditionInput({ claim: launched({ annotations: karpenters, conditions: [condition('Registered')] }) }),
    );
    expect(notLaunched.metadata).toBeUndefined();
  });

  it('writes the pod-set digest in the same metadata patch as the hashes', () => {
    const node = clusterNode('c', { pods: [boundPod('p1')] });
    const changes = computeClaimChanges(
      conditionInput({ claim: launched({ annotations: karpenters }), node }),
    );
    expect(changes.metadata?.annotations).toEqual({ ...ours, [POD_SET_ANNOTATION]: podSetDigest(node) });
  });
});

describe('computeClaimChanges: Consolidatable and pod events', () => {
  const emptySeen = { [POD_SET_ANNOTATION]: 'empty' };
  const init = (atMs: number) => [
    condition('Launched', 'True', atMs),
    condition('Registered', 'True', atMs),
    condition('Initialized', 'True', atMs),
  ];

  it.each<[string, ClaimOptions, number, boolean]>([
    ['initialized 29s ago, consolidateAfter 30s', { conditions: init(NOW - 29 * SECOND) }, NOW, false],
    ['initialized exactly 30s ago', { conditions: init(NOW - 30 * SECOND) }, NOW, true],
    [
      'initialized long ago, a pod event 10s ago',
      { conditions: init(T0), lastPodEventMs: NOW - 10 * SECOND },
      NOW,
      false,
    ],
    [
      'initialized long ago, a pod event 30s ago',
      { conditions: init(T0), lastPodEventMs: NOW - 30 * SECOND },
      NOW,
      true,
    ],
    ['not initialized', { conditions: [condition('Launched', 'True', T0)] }, NOW, false],
    [
      'Initialized False',
      { conditions: [condition('Launched'), condition('Initialized', 'False')] },
      NOW,
      false,
    ],
  ])('%s: Consolidatable %s', (_, o, nowMs, expected) => {
    const claim = launched({ ...o, annotations: emptySeen });
    const changes = computeClaimChanges(conditionInput({ claim, node: clusterNode('node-c'), nowMs }));
    const set = (changes.status?.conditions ?? []).some(
      (c) => c.type === 'Consolidatable' && c.status === 'True',
    );
    expect(set).toBe(expected);
    expect(changes.view.status.conditions.some((c) => c.type === 'Consolidatable')).toBe(expected);
  });

  it('writes nothing for a claim that is already Consolidatable', () => {
    const claim = launched({
      annotations: emptySeen,
      conditions: [...READY_CONDITIONS, condition('Consolidatable')],
    });
    const changes = computeClaimChanges(conditionInput({ claim, node: clusterNode('node-c') }));
    expect(changes).toEqual({ view: claim });
  });

  it('removes Consolidatable when pods arrive, and moves lastPodEventTime', () => {
    const claim = launched({
      annotations: emptySeen,
      conditions: [...READY_CONDITIONS, condition('Consolidatable')],
    });
    const node = clusterNode('node-c', { pods: [boundPod('web')] });
    const changes = computeClaimChanges(conditionInput({ claim, node }));
    expect(changes.status).toEqual({ removeConditions: ['Consolidatable'], lastPodEventTime: iso(NOW) });
    expect(changes.metadata).toEqual({ annotations: { [POD_SET_ANNOTATION]: podSetDigest(node) } });
    expect(changes.view.status.lastPodEventMs).toBe(NOW);
    expect(changes.view.annotations[POD_SET_ANNOTATION]).toBe(podSetDigest(node));
  });

  it('removes Consolidatable when the Node is gone', () => {
    const claim = launched({
      annotations: emptySeen,
      conditions: [...READY_CONDITIONS, condition('Consolidatable')],
    });
    const changes = computeClaimChanges(conditionInput({ claim, node: undefined }));
    expect(changes.status).toEqual({ removeConditions: ['Consolidatable'] });
    expect(changes.metadata).toBeUndefined();
  });

  it.each([
    ['Never', 'Never', undefined],
    [
      'an unparsable value, reported',
      'whenever',
      'consolidateAfter "whenever" is neither a duration nor Never',
    ],
  ])('consolidateAfter %s: never Consolidatable', (_, consolidateAfter, problem) => {
    const claim = launched({
      annotations: emptySeen,
      conditions: [...READY_CONDITIONS, condition('Consolidatable')],
    });
    const changes = computeClaimChanges(
      conditionInput({ claim, node: clusterNode('node-c'), pool: pool('default', { consolidateAfter }) }),
    );
    expect(changes.status?.removeConditions).toEqual(['Consolidatable']);
    expect(changes.problem).toBe(problem);
  });

  it('reports a minimum savings annotation that cannot be read', () => {
    const claim = launched({ annotations: emptySeen, conditions: READY_CONDITIONS });
    const annotations = { 'flotilla.io/consolidation-min-savings': 'some' };
    const changes = computeClaimChanges(
      conditionInput({ claim, node: clusterNode('node-c'), pool: pool('default', {}, { annotations }) }),
    );
    expect(changes.problem).toMatch(/consolidation-min-savings "some" is neither a percentage/);
  });

  it('the first look at an empty node records the pod set but sets no lastPodEventTime', () => {
    const claim = launched({ conditions: init(NOW - 10 * MINUTE) });
    const changes = computeClaimChanges(
      conditionInput({ claim, node: clusterNode('node-c', { pods: [daemonPod('agent')] }) }),
    );
    expect(changes.metadata).toEqual({ annotations: { [POD_SET_ANNOTATION]: 'empty' } });
    expect(changes.status?.lastPodEventTime).toBeUndefined();
    expect(changes.view.status.lastPodEventMs).toBeUndefined();
    // Initialized 10 minutes ago with no pod event: consolidateAfter has passed.
    expect(changes.status?.conditions).toMatchObject([{ type: 'Consolidatable', status: 'True' }]);
  });

  it('the first look at a node with pods counts as a pod event', () => {
    const claim = launched({ conditions: init(NOW - 10 * MINUTE) });
    const node = clusterNode('node-c', { pods: [boundPod('web')] });
    const changes = computeClaimChanges(conditionInput({ claim, node }));
    expect(changes.status).toEqual({ lastPodEventTime: iso(NOW) });
    expect(changes.metadata).toEqual({ annotations: { [POD_SET_ANNOTATION]: podSetDigest(node) } });
    expect(changes.view.status.lastPodEventMs).toBe(NOW);
  });

  it('the first look at a node with pods keeps the lastPodEventTime another controller kept (Karpenter)', () => {
    // Karpenter's NodeClaim: no pod-set digest of Flotilla's, its own lastPodEventTime 10 minutes ago.
    const claim = launched({ conditions: init(T0), lastPodEventMs: NOW - 10 * MINUTE });
    const node = clusterNode('node-c', { pods: [boundPod('web')] });
    const changes = computeClaimChanges(conditionInput({ claim, node }));
    expect(changes.metadata).toEqual({ annotations: { [POD_SET_ANNOTATION]: podSetDigest(node) } });
    expect(changes.status?.lastPodEventTime).toBeUndefined();
    expect(changes.view.status.lastPodEventMs).toBe(NOW - 10 * MINUTE);
    // consolidateAfter (30s) has passed since Karpenter's last pod event.
    expect(changes.status?.conditions).toMatchObject([{ type: 'Consolidatable', status: 'True' }]);
  });

  it('the node emptying is a pod event too', () => {
    const before = clusterNode('node-c', { pods: [boundPod('web')] });
    const claim = launched({
      conditions: init(T0),
      annotations: { [POD_SET_ANNOTATION]: podSetDigest(before) },
      lastPodEventMs: T0,
    });
    const changes = computeClaimChanges(conditionInput({ claim, node: clusterNode('node-c') }));
    expect(changes.status).toEqual({ lastPodEventTime: iso(NOW) });
    expect(changes.metadata).toEqual({ annotations: { [POD_SET_ANNOTATION]: 'empty' } });
  });

  it('an unchanged pod set writes nothing and keeps lastPodEventTime', () => {
    const node = clusterNode('node-c', { pods: [boundPod('web')] });
    const claim = launched({
      conditions: init(T0),
      annotations: { [POD_SET_ANNOTATION]: podSetDigest(node) },
      lastPodEventMs: NOW - 5 * SECOND,
    });
    const changes = computeClaimChanges(conditionInput({ claim, node }));
    expect(changes).toEqual({ view: claim });
  });

  it('a DaemonSet pod coming or going is not a pod event', () => {
    const claim = launched({ conditions: init(T0), annotations: emptySeen, lastPodEventMs: T0 });
    const changes = computeClaimChanges(
      conditionInput({
        claim,
        node: clusterNode('node-c', { pods: [daemonPod('agent')] }),
        nowMs: T0 + 10 * SECOND,
      }),
    );
    expect(changes.metadata).toBeUndefined();
    expect(changes.status).toBeUndefined();
  });
});

describe('podSetDigest', () => {
  const node = (pods: readonly Pod[]): ClusterNode => clusterNode('n', { pods });
  const a = boundPod('a');
  const b = boundPod('b');

  it.each([
    ['no pods', node([])],
    ['only DaemonSet and mirror pods', node([daemonPod('agent'), boundPod('etcd', { mirror: true })])],
  ])('is "empty" for %s', (_, n) => {
    expect(podSetDigest(n)).toBe('empty');
  });

  it('is 16 hex characters, independent of pod order and of DaemonSet pods', () => {
    const digest = podSetDigest(node([a, b]));
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(podSetDigest(node([b, daemonPod('agent'), a]))).toBe(digest);
  });

  it('changes when a reschedulable pod comes, goes or is replaced', () => {
    const digest = podSetDigest(node([a, b]));
    expect(podSetDigest(node([a]))).not.toBe(digest);
    expect(podSetDigest(node([a, b, boundPod('c')]))).not.toBe(digest);
    expect(podSetDigest(node([a, { ...b, uid: 'uid-b-2' }]))).not.toBe(digest);
  });
});
