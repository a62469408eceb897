import { describe, expect, it } from 'vitest';
import type { CloudInstance } from '../../../../shared/ports/cloud.ts';
import { DEFAULT_NODEPOOL_DISRUPTION } from '../../../../shared/ports/cluster.ts';
import {
  expectedCapacityType,
  fallsBack,
  launchedLabels,
  launchedStatus,
  MAX_NOMINATED_PODS,
  MIN_VALUES_RELAXED_ANNOTATION,
  NODEPOOL_HASH_VERSION,
  NOMINATED_PODS_ANNOTATION,
  nodeClaimName,
  nodePoolHash,
  nominatedPodUids,
  toLaunchRequest,
  toNewNodeClaim,
} from '../../../../shared/usecases/state/new-nodeclaim.ts';
import { instanceType, nodeClass, nodePool, plan } from './builders.ts';

const decision = { nodePoolName: 'general', podUids: ['b', 'a', 'c'], leaseToken: 7, round: 0 };

describe('nodeClaimName', () => {
  it('is <nodePool>-<10 hex> and the same for the same decision, whatever the pod order', () => {
    const name = nodeClaimName(decision);
    expect(name).toMatch(/^general-[0-9a-f]{10}$/);
    expect(nodeClaimName({ ...decision, podUids: ['c', 'a', 'b'] })).toBe(name);
  });

  it.each([
    ['another pod set', { podUids: ['a', 'b'] }],
    ['another lease token', { leaseToken: 8 }],
    ['another round (a re-plan after ICE)', { round: 1 }],
    ['another NodePool', { nodePoolName: 'gpu' }],
  ])('changes with %s', (_what, change) => {
    expect(nodeClaimName({ ...decision, ...change })).not.toBe(nodeClaimName(decision));
  });

  it('keeps long NodePool names within the Kubernetes name limit', () => {
    expect(nodeClaimName({ ...decision, nodePoolName: 'p'.repeat(253) }).length).toBeLessThanOrEqual(253);
  });
});

describe('toNewNodeClaim', () => {
  it('maps a plan and its NodePool onto the v1 NodeClaim', () => {
    const pool = nodePool(
      'general',
      {},
      {
        templateAnnotations: { 'example.com/owner': 'web' },
        disruption: DEFAULT_NODEPOOL_DISRUPTION,
        terminationGracePeriod: '1h',
      },
    );
    expect(toNewNodeClaim('general-abc', plan(), pool)).toEqual({
      name: 'general-abc',
      nodePool: { name: 'general', uid: 'uid-pool-general' },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      labels: { team: 'web' },
      annotations: {
        'example.com/owner': 'web',
        [MIN_VALUES_RELAXED_ANNOTATION]: 'false',
        [NOMINATED_PODS_ANNOTATION]: 'u1',
      },
      nodePoolHash: { hash: nodePoolHash(pool), version: NODEPOOL_HASH_VERSION },
      requirements: plan().requirements,
      requests: { cpu: 1000, pods: 1 },
      taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
      startupTaints: [{ key: 'example.com/booting', effect: 'NoSchedule' }],
      expireAfter: '720h',
      terminationGracePeriod: '1h',
    });
  });

  it("says whether a claim's minValues were relaxed, as Karpenter does, and leaves out what the pool does not set", () => {
    const claim = toNewNodeClaim('x', plan({ minValuesRelaxed: true }), nodePool('general'));
    expect(claim.annotations).toEqual({
      [MIN_VALUES_RELAXED_ANNOTATION]: 'true',
      [NOMINATED_PODS_ANNOTATION]: 'u1',
    });
    expect(claim).not.toHaveProperty('terminationGracePeriod');
  });

  it('names the pods it was planned for, so later plans put them back onto it', () => {
    const pods = Array.from({ length: MAX_NOMINATED_PODS + 5 }, (_, i) => ({
      uid: `u${i}`,
      namespace: 'apps',
      name: `web-${i}`,
    }));
    const claim = toNewNodeClaim('x', plan({ pods }), nodePool('general'));
    expect(nominatedPodUids(claim.annotations)).toEqual(pods.slice(0, MAX_NOMINATED_PODS).map((p) => p.uid));
    expect(toNewNodeClaim('y', plan({ pods: [] }), nodePool('general')).annotations).toEqual({
      [MIN_VALUES_RELAXED_ANNOTATION]: 'false',
    });
    expect(nominatedPodUids({})).toEqual([]);
  });
});

describe('fallsBack', () => {
  const spotAndOnDemand = [
    { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['spot', 'on-demand'] },
  ];
  const typeWith = (spotAvailable: boolean) => {
    const t = instanceType('c6a.large', 2, 0.0765);
    return {
      ...t,
      offerings: t.offerings.map((o) => (o.capacityType === 'spot' ? { ...o, available: spotAvailable } : o)),
    };
  };
  const claim = plan({
    requirements: spotAndOnDemand,
    instanceTypes: [{ name: 'c6a.large', priceUsdPerHour: 0.03 }],
  });
  const byName = (spot: boolean) => new Map([['c6a.large', typeWith(spot)]]);

  it.each([
    ['planned for spot, spot now backed off', true, false, true],
    ['planned for spot, spot still there', true, true, false],
    ['planned on-demand already', false, false, false],
  ])('%s', (_what, plannedSpot, nowSpot, expected) => {
    expect(fallsBack(claim, byName(plannedSpot), byName(nowSpot))).toBe(expected);
  });
});

describe('nodePoolHash', () => {
  const base = () =>
    nodePool(
      'general',
      {
        labels: { team: 'web', tier: 'front' },
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
          { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
        ],
        taints: [
          { key: 'a', value: '1', effect: 'NoSchedule' },
          { key: 'b', effect: 'NoExecute' },
        ],
        weight: 10,
        limits: { cpu: 100_000 },
      },
      { templateAnnotations: { owner: 'web' }, terminationGracePeriod: '1h' },
    );

  it('is a decimal string that does not depend on the order of labels or taints', () => {
    const hash = nodePoolHash(base());
    expect(hash).toMatch(/^\d+$/);
    const reordered = base();
    const shuffled = nodePool(
      'general',
      {
        ...reordered.pool,
        labels: { tier: 'front', team: 'web' },
        requirements: [...reordered.pool.requirements]
          .reverse()
          .map((r) => ({ ...r, values: [...(r.values ?? [])].reverse() })),
        taints: [...(reordered.pool.taints ?? [])].reverse(),
      },
      { templateAnnotations: { owner: 'web' }, terminationGracePeriod: '1h' },
    );
    expect(nodePoolHash(shuffled)).toBe(hash);
  });

  it('changes with what nodes get, not with weight, limits or requirements', () => {
    const hash = nodePoolHash(base());
    const pool = base();
    expect(nodePoolHash({ ...pool, pool: { ...pool.pool, weight: 99, limits: { cpu: 1 } } })).toBe(hash);
    // Requirements drift through the NodeClaim's labels instead: widening one replaces nothing.
    expect(
      nodePoolHash({
        ...pool,
        pool: {
          ...pool.pool,
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64', 'arm64'] }],
        },
      }),
    ).toBe(hash);
    expect(
      nodePoolHash({ ...pool, pool: { ...pool.pool, labels: { team: 'api', tier: 'front' } } }),
    ).not.toBe(hash);
    expect(nodePoolHash({ ...pool, pool: { ...pool.pool, taints: [] } })).not.toBe(hash);
    expect(
      nodePoolHash({ ...pool, pool: { ...pool.pool, startupTaints: [{ key: 's', effect: 'NoSchedule' }] } }),
    ).not.toBe(hash);
    expect(nodePoolHash({ ...pool, expireAfter: 'Never' })).not.toBe(hash);
    expect(nodePoolHash({ ...pool, templateAnnotations: {} })).not.toBe(hash);
    expect(nodePoolHash({ ...pool, nodeClassRef: { ...pool.nodeClassRef, name: 'other' } })).not.toBe(hash);
  });
});

describe('toLaunchRequest', () => {
  it('passes the candidates cheapest first, with the pool and NodeClass labels kubelet registers', () => {
    const types = new Map(
      [instanceType('m5.large', 2, 0.096), instanceType('c5.large', 2, 0.085)].map((t) => [t.name, t]),
    );
    const request = toLaunchRequest('general-abc', plan(), nodeClass, types);
    expect(request.instanceTypes.map((t) => t.name)).toEqual(['c5.large', 'm5.large']);
    expect(request).toMatchObject({
      nodeClaimName: 'general-abc',
      nodePoolName: 'general',
      nodeClass,
      requirements: plan().requirements,
      labels: {
        team: 'web',
        'karpenter.sh/nodepool': 'general',
        'karpenter.k8s.aws/ec2nodeclass': 'default',
      },
      taints: plan().taints,
      startupTaints: plan().startupTaints,
    });
  });

  it('leaves out candidates the NodeClass does not offer', () => {
    const types = new Map([['m5.large', instanceType('m5.large', 2, 0.096)]]);
    expect(toLaunchRequest('x', plan(), nodeClass, types).instanceTypes.map((t) => t.name)).toEqual([
      'm5.large',
    ]);
  });
});

describe('expectedCapacityType', () => {
  const types = [instanceType('m5.large', 2, 0.096)];
  it.each([
    ['spot when allowed and offered', [], 'spot'],
    [
      'on-demand when the requirements say so',
      [{ key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] }],
      'on-demand',
    ],
    [
      'on-demand when spot is excluded',
      [{ key: 'karpenter.sh/capacity-type', operator: 'NotIn' as const, values: ['spot'] }],
      'on-demand',
    ],
  ])('%s', (_what, requirements, expected) => {
    expect(expectedCapacityType(requirements, types)).toBe(expected);
  });

  it('on-demand when no spot offering is available', () => {
    const noSpot = types.map((t) => ({
      ...t,
      offerings: t.offerings.filter((o) => o.capacityType !== 'spot'),
    }));
    expect(expectedCapacityType([], noSpot)).toBe('on-demand');
  });
});

describe('status after launch', () => {
  const instance: CloudInstance = {
    instanceId: 'i-1',
    providerId: 'aws:///us-east-1b/i-1',
    instanceType: 'm5.large',
    zone: 'us-east-1b',
    capacityType: 'spot',
    state: 'pending',
    imageId: 'ami-1',
    tags: {},
  };
  const type = instanceType('m5.large', 2, 0.096);

  it('records provider id, image, capacity, allocatable and Launched=True', () => {
    expect(launchedStatus(instance, type)).toEqual({
      providerId: 'aws:///us-east-1b/i-1',
      imageId: 'ami-1',
      capacity: type.capacity,
      allocatable: { ...type.capacity, cpu: 1920 },
      conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
    });
  });

  it('labels the claim with what the cloud resolved, user labels winning', () => {
    const patch = launchedLabels(instance, type, { 'karpenter.k8s.aws/instance-family': 'custom' });
    expect(patch.labels).toEqual({
      'node.kubernetes.io/instance-type': 'm5.large',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'topology.kubernetes.io/zone': 'us-east-1b',
      'karpenter.sh/capacity-type': 'spot',
    });
  });
});
