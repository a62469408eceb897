import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { makeLimiter, retryOnConflict } from '../../../shared/adapters/kube/call.ts';
import { ClusterConflictError, ClusterNotFoundError } from '../../../shared/adapters/kube/errors.ts';
import {
  convertNodeClaims,
  groupPodsByNode,
  makeVolumeIndex,
  mergeConditions,
  toClusterNodeClaim,
  toClusterNodePool,
  toNodeClaimManifest,
  toPod,
  toQuantityString,
  toVolumeTopology,
  withPods,
} from '../../../shared/apis/index.ts';
import { computePodRequests, ValidationError } from '../../../shared/core/index.ts';
import { toInFlightNodeClaims } from '../../../shared/usecases/state/cluster-state.ts';
import { NOMINATED_PODS_ANNOTATION } from '../../../shared/usecases/state/new-nodeclaim.ts';

function pod(spec: Partial<NonNullable<V1Pod['spec']>>, name = 'web'): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { containers: [{ name: 'app', resources: { requests: { cpu: '250m' } } }], ...spec },
  };
}

describe('toPod', () => {
  it('parses quantities once, into integers', () => {
    const p = toPod(
      pod({
        containers: [
          { name: 'app', resources: { requests: { cpu: '1.5', memory: '1Gi', 'nvidia.com/gpu': '1' } } },
        ],
        overhead: { cpu: '100m' },
      }),
    );
    expect(p.containers[0]?.requests).toEqual({ cpu: 1500, memory: 2 ** 30, 'nvidia.com/gpu': 1 });
    expect(p.overhead).toEqual({ cpu: 100 });
  });

  it('reads pod-level spec.resources.requests, which kube-scheduler counts instead of the containers', () => {
    const p = toPod(
      pod({
        containers: [{ name: 'app', resources: { requests: { cpu: '250m', memory: '64Mi' } } }],
        resources: { requests: { cpu: '2' }, limits: { cpu: '4' } },
        overhead: { cpu: '100m' },
      }),
    );
    expect(p.podRequests).toEqual({ cpu: 2000 });
    expect(computePodRequests(p)).toEqual({ cpu: 2100, memory: 64 * 2 ** 20, pods: 1 });
  });

  it.each([
    [{ tolerations: 'all' }, 'spec.tolerations', 'must be a list, not the string "all"'],
    [{ containers: [null] }, 'spec.containers[0]', 'must be an object, not null'],
    [
      { resources: { requests: { cpu: true } } },
      'spec.resources.requests.cpu',
      'must be a quantity, not boolean true',
    ],
    [{ nodeSelector: { zone: 1 } }, 'spec.nodeSelector.zone', 'must be a string, not number 1'],
  ] as const)('names the field and what is wrong with a wrongly typed one (%#)', (spec, field, problem) => {
    try {
      toPod(pod(spec as unknown as Partial<NonNullable<V1Pod['spec']>>));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
      expect((error as ValidationError).message).toBe(`pod "default/web": ${field}: ${problem}`);
    }
  });

  it.each([
    [
      { containers: [{ name: 'app', resources: { requests: { cpu: 'lots' } } }] },
      'spec.containers[0].resources.requests.cpu',
    ],
    [{ tolerations: [{ key: 'a', effect: 'Sometimes' }] }, 'spec.tolerations[0].effect'],
    [
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'Near' }] }],
            },
          },
        },
      },
      'spec.affinity.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator',
    ],
    [
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'spec.unschedulable', operator: 'In', values: ['n'] }] },
              ],
            },
          },
        },
      },
      'spec.affinity.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key',
    ],
  ] as const)('rejects a malformed pod naming the field (%#)', (spec, field) => {
    try {
      toPod(pod(spec as unknown as Partial<NonNullable<V1Pod['spec']>>));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).object).toBe('pod "default/web"');
      expect((error as ValidationError).field).toBe(field);
    }
  });
});

describe('toPod with matchFields', () => {
  it('reads the node-name pin the DaemonSet controller sets, beside matchExpressions', () => {
    const converted = toPod(
      pod({
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }],
                  matchFields: [{ key: 'metadata.name', operator: 'In', values: ['ip-10-0-0-1'] }],
                },
              ],
            },
          },
        },
      }),
    );
    expect(converted.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [
        {
          matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }],
          matchFields: [{ key: 'metadata.name', operator: 'In', values: ['ip-10-0-0-1'] }],
        },
      ],
    });
  });
});

describe('groupPodsByNode', () => {
  it('keeps where a pod that cannot be read is bound, so its node is not taken for empty', () => {
    const bound = [
      pod({ nodeName: 'node-a' }, 'ok'),
      pod(
        { nodeName: 'node-a', containers: [{ name: 'app', resources: { requests: { cpu: 'lots' } } }] },
        'bad',
      ),
      pod({ nodeName: 'node-b' }, 'other'),
    ];
    const byNode = groupPodsByNode(bound, (p) => toPod(p));
    expect([...byNode.pods.entries()].map(([n, ps]) => [n, ps.map((p) => p.name)])).toEqual([
      ['node-a', ['ok']],
      ['node-b', ['other']],
    ]);
    expect([...byNode.unreadable.entries()]).toEqual([
      [
        'node-a',
        [
          'pod "default/bad": spec.containers[0].resources.requests.cpu: "lots" is not a Kubernetes quantity (examples: "500m", "2Gi", "1.5", "1e3")',
        ],
      ],
    ]);
    const node = { name: 'node-a', pods: [] } as unknown as Parameters<typeof withPods>[0];
    expect(withPods(node, byNode)).toMatchObject({
      pods: [expect.objectContaining({ name: 'ok' })],
      unreadablePods: [expect.stringContaining('pod "default/bad"')],
    });
    expect(withPods({ ...node, name: 'node-b' }, byNode).unreadablePods).toBeUndefined();
  });
});

describe('toVolumeTopology', () => {
  const index = makeVolumeIndex(
    [
      { metadata: { namespace: 'default', name: 'bound' }, spec: { volumeName: 'pv-1' } },
      { metadata: { namespace: 'default', name: 'wffc' }, spec: { storageClassName: 'zonal' } },
      { metadata: { namespace: 'default', name: 'plain' }, spec: { storageClassName: 'anywhere' } },
    ],
    [
      {
        metadata: { name: 'pv-1' },
        spec: {
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2a'] },
                    { key: 'kubernetes.io/hostname', operator: 'In', values: ['old'] },
                  ],
                },
              ],
            },
          },
        },
      },
    ],
    [
      {
        metadata: { name: 'zonal' },
        provisioner: 'ebs.csi.aws.com',
        allowedTopologies: [
          { matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['us-west-2b'] }] },
        ],
      },
      { metadata: { name: 'anywhere' }, provisioner: 'ebs.csi.aws.com' },
    ],
  );

  it('resolves bound PVs, unbound claims and ephemeral volumes', () => {
    const topology = toVolumeTopology(
      pod({
        volumes: [
          { name: 'a', persistentVolumeClaim: { claimName: 'bound' } },
          { name: 'b', persistentVolumeClaim: { claimName: 'wffc' } },
          { name: 'c', persistentVolumeClaim: { claimName: 'plain' } },
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'zonal' } } } },
          { name: 'tmp', emptyDir: {} },
        ],
      }),
      index,
    );
    expect(topology).toEqual([
      {
        claimName: 'bound',
        terms: [[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2a'] }]],
      },
      {
        claimName: 'wffc',
        terms: [[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2b'] }]],
      },
      {
        claimName: 'web-scratch',
        terms: [[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2b'] }]],
      },
    ]);
  });

  it('rejects a pod whose claim does not exist', () => {
    expect(() =>
      toVolumeTopology(pod({ volumes: [{ name: 'a', persistentVolumeClaim: { claimName: 'x' } }] }), index),
    ).toThrow('persistentVolumeClaim "x" does not exist');
  });

  it('keeps every term of a PV and of allowedTopologies (ORed), and drops a volume with a term for any node', () => {
    const zone = (v: string) => ({
      key: 'topology.kubernetes.io/zone',
      operator: 'In' as const,
      values: [v],
    });
    const multi = makeVolumeIndex(
      [
        { metadata: { namespace: 'default', name: 'two-terms' }, spec: { volumeName: 'pv-2' } },
        { metadata: { namespace: 'default', name: 'local' }, spec: { volumeName: 'pv-local' } },
        { metadata: { namespace: 'default', name: 'two-topologies' }, spec: { storageClassName: 'two' } },
      ],
      [
        {
          metadata: { name: 'pv-2' },
          spec: {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  { matchExpressions: [zone('us-west-2a')] },
                  { matchExpressions: [zone('us-west-2c')] },
                ],
              },
            },
          },
        },
        {
          metadata: { name: 'pv-local' },
          spec: {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  { matchExpressions: [zone('us-west-2a')] },
                  { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] },
                ],
              },
            },
          },
        },
      ],
      [
        {
          metadata: { name: 'two' },
          provisioner: 'ebs.csi.aws.com',
          allowedTopologies: [
            { matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['us-west-2b'] }] },
            { matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['us-west-2c'] }] },
          ],
        },
      ],
    );
    const topology = toVolumeTopology(
      pod({
        volumes: [
          { name: 'a', persistentVolumeClaim: { claimName: 'two-terms' } },
          { name: 'b', persistentVolumeClaim: { claimName: 'local' } },
          { name: 'c', persistentVolumeClaim: { claimName: 'two-topologies' } },
        ],
      }),
      multi,
    );
    expect(topology).toEqual([
      { claimName: 'two-terms', terms: [[zone('us-west-2a')], [zone('us-west-2c')]] },
      { claimName: 'two-topologies', terms: [[zone('us-west-2b')], [zone('us-west-2c')]] },
    ]);
  });
});

const poolObject = {
  metadata: { name: 'default', uid: 'u1' },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5', 'c5'], minValues: 2 },
        ],
      },
    },
  },
};

describe('NodePool and NodeClaim parsing', () => {
  it('applies defaults and keeps minValues', () => {
    const np = toClusterNodePool(poolObject);
    expect(np.expireAfter).toBe('720h');
    expect(np.ready).toBe(false);
    expect(np.pool.requirements[0]?.minValues).toBe(2);
  });

  it('reads spec.disruption, with the CRD defaults for what a client left out', () => {
    expect(toClusterNodePool(poolObject).disruption).toEqual({
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '10%' }],
    });
    const disruption = {
      consolidationPolicy: 'WhenEmpty',
      consolidateAfter: '5m',
      budgets: [
        { nodes: '0', schedule: '0 9 * * mon-fri', duration: '8h', reasons: ['Drifted', 'Underutilized'] },
        { nodes: '3' },
      ],
    };
    expect(toClusterNodePool({ ...poolObject, spec: { ...poolObject.spec, disruption } }).disruption).toEqual(
      disruption,
    );
    // Flotilla's flotilla.io/budget-time-zone: the budgets with a schedule are read in that zone.
    const zoned = toClusterNodePool({
      ...poolObject,
      metadata: {
        ...poolObject.metadata,
        annotations: { 'flotilla.io/budget-time-zone': ' Europe/Berlin ' },
      },
      spec: { ...poolObject.spec, disruption },
    }).disruption.budgets;
    expect(zoned).toEqual([{ ...disruption.budgets[0], timeZone: 'Europe/Berlin' }, { nodes: '3' }]);
    // An empty zone is a zone that does not read (the budget then holds), never UTC in silence.
    const blank = toClusterNodePool({
      ...poolObject,
      metadata: { ...poolObject.metadata, annotations: { 'flotilla.io/budget-time-zone': ' ' } },
      spec: { ...poolObject.spec, disruption },
    }).disruption.budgets;
    expect(blank[0]).toMatchObject({ timeZone: '' });
    // Karpenter v1.15 no longer requires consolidateAfter: a disruption block without it means 0s.
    expect(
      toClusterNodePool({
        ...poolObject,
        spec: {
          ...poolObject.spec,
          disruption: { consolidationPolicy: 'WhenEmpty', budgets: [{ nodes: '1' }] },
        },
      }).disruption,
    ).toEqual({ consolidationPolicy: 'WhenEmpty', consolidateAfter: '0s', budgets: [{ nodes: '1' }] });
    expect(() =>
      toClusterNodePool({
        ...poolObject,
        spec: { ...poolObject.spec, disruption: { consolidationPolicy: 'Sometimes' } },
      }),
    ).toThrow(/nodePool "default": spec.disruption.consolidationPolicy/);
  });

  it('names the NodePool and field of a malformed limit', () => {
    expect(() =>
      toClusterNodePool({ ...poolObject, spec: { ...poolObject.spec, limits: { cpu: 'many' } } }),
    ).toThrow(/nodePool "default": spec.limits.cpu/);
  });

  it('reads spec.replicas of a static NodePool, and refuses what the CRD refuses on one', () => {
    const limits = { nodes: '5' };
    const fixed = { ...poolObject, spec: { ...poolObject.spec, replicas: 3, limits } };
    expect(toClusterNodePool(fixed).pool).toMatchObject({ replicas: 3, limits: { nodes: 5 } });
    expect(toClusterNodePool(poolObject).pool.replicas).toBeUndefined();
    expect(() => toClusterNodePool({ ...fixed, spec: { ...fixed.spec, weight: 10 } })).toThrow(
      /nodePool "default": spec.weight: 'weight' is not supported on static NodePools/,
    );
    expect(() => toClusterNodePool({ ...fixed, spec: { ...fixed.spec, limits: { cpu: '10' } } })).toThrow(
      /spec.limits: only 'limits.nodes' is supported on static NodePools \(found cpu\)/,
    );
    expect(() => toClusterNodePool({ ...fixed, spec: { ...fixed.spec, replicas: -1 } })).toThrow(
      /nodePool "default": spec.replicas/,
    );
  });

  it('round-trips a NodeClaim through its manifest', () => {
    const manifest = toNodeClaimManifest({
      name: 'default-abc',
      nodePool: { name: 'default', uid: 'u1' },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'nc' },
      labels: {},
      annotations: {},
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
      requests: { cpu: 500, memory: 3 * 2 ** 20 + 1 },
      taints: [],
      startupTaints: [],
    });
    const claim = toClusterNodeClaim({
      ...manifest,
      metadata: { ...(manifest['metadata'] as object), uid: 'c1' },
    });
    expect(claim.labels).toEqual({
      'karpenter.sh/nodepool': 'default',
      'karpenter.k8s.aws/ec2nodeclass': 'nc',
    });
    expect(claim.requests).toEqual({ cpu: 500, memory: 3 * 2 ** 20 + 1 });
    expect(toInFlightNodeClaims([claim], [])[0]?.instanceTypeNames).toEqual(['m5.large']);
    expect(toInFlightNodeClaims([{ ...claim, deleting: true }], [])).toEqual([]);
    expect(toInFlightNodeClaims([claim], [])[0]).not.toHaveProperty('nominatedPodUids');
    const nominated = { ...claim, annotations: { [NOMINATED_PODS_ANNOTATION]: 'p1,p2' } };
    expect(toInFlightNodeClaims([nominated], [])[0]?.nominatedPodUids).toEqual(['p1', 'p2']);
  });
});

describe('a standalone NodeClaim (no karpenter.sh/nodepool label)', () => {
  const standalone = (nodeClassRef: Record<string, string>) => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'by-hand', uid: 'u-by-hand', labels: { team: 'a' } },
    spec: {
      nodeClassRef,
      requirements: [{ key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] }],
      resources: { requests: { cpu: '3' } },
    },
  });

  it('is read with no NodePool when its class is an EC2NodeClass', () => {
    const claim = toClusterNodeClaim(
      standalone({ group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' }),
    );
    expect(claim).not.toHaveProperty('nodePoolName');
    expect(claim).toMatchObject({ name: 'by-hand', labels: { team: 'a' }, requests: { cpu: 3000 } });
    expect(toInFlightNodeClaims([claim], [])[0]).not.toHaveProperty('nodePoolName');
  });

  it('is unreadable, naming the requirement, when the scheduler cannot read a requirement the CRD lets through', () => {
    const read = convertNodeClaims(
      [
        {
          ...standalone({ group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' }),
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [{ key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['+5'] }],
          },
        },
      ],
      toClusterNodeClaim,
    );
    expect(read.items).toEqual([]);
    expect(read.problems[0]?.field).toBe('spec.requirements[0]');
  });

  it("is left to its own provider when its class is another provider's", () => {
    const read = convertNodeClaims(
      [standalone({ group: 'karpenter.azure.com', kind: 'AKSNodeClass', name: 'default' })],
      toClusterNodeClaim,
    );
    expect(read.items).toEqual([]);
    expect(read.unreadable).toEqual([
      expect.objectContaining({
        name: 'by-hand',
        standalone: true,
        problem: expect.stringContaining('AKSNodeClass'),
      }),
    ]);
  });
});

describe('mergeConditions', () => {
  it('keeps lastTransitionTime while the status holds and moves it on a change', () => {
    const t0 = new Date('2026-01-01T00:00:00.500Z');
    const t1 = new Date('2026-01-01T00:05:00Z');
    const first = mergeConditions(
      [],
      [{ type: 'Launched', status: 'Unknown', reason: 'Launching', message: '' }],
      t0,
    );
    expect(first[0]?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    const same = mergeConditions(
      first,
      [{ type: 'Launched', status: 'Unknown', reason: 'Still', message: 'm' }],
      t1,
    );
    expect(same[0]).toMatchObject({
      reason: 'Still',
      message: 'm',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
    const changed = mergeConditions(
      same,
      [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
      t1,
    );
    expect(changed[0]?.lastTransitionTime).toBe('2026-01-01T00:05:00Z');
  });
});

describe('helpers', () => {
  it.each([
    ['cpu', 1500, '1500m'],
    ['cpu', 2000, '2'],
    ['memory', 2 ** 31, '2Gi'],
    ['memory', 1536 * 2 ** 20, '1536Mi'],
    ['memory', 1001, '1001'],
    ['pods', 110, '110'],
  ])('formats %s %d as %s', (name, amount, text) => {
    expect(toQuantityString(name, amount)).toBe(text);
  });

  it('bounds concurrency', async () => {
    const limiter = makeLimiter(2);
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        limiter.run(async () => {
          active++;
          peak = Math.max(peak, active);
          await new Promise((r) => setTimeout(r, 5));
          active--;
        }),
      ),
    );
    expect(peak).toBe(2);
  });

  it('retries conflicts a bounded number of times and passes other errors through', async () => {
    let n = 0;
    const conflict = () => new ClusterConflictError('patch', 409, 'changed');
    await expect(
      retryOnConflict(3, async () => {
        n++;
        if (n < 3) throw conflict();
        return n;
      }),
    ).resolves.toBe(3);
    n = 0;
    await expect(
      retryOnConflict(2, async () => {
        n++;
        throw conflict();
      }),
    ).rejects.toBeInstanceOf(ClusterConflictError);
    expect(n).toBe(2);
    await expect(
      retryOnConflict(5, async () => {
        throw new ClusterNotFoundError('get', 404, 'gone');
      }),
    ).rejects.toBeInstanceOf(ClusterNotFoundError);
  });
});

describe('convertNodeClaims on NodeClaims it cannot read', () => {
  const claim = (name: string, labels: unknown) => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, ...(labels === undefined ? {} : { labels }), uid: `uid-${name}` },
    spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' } },
  });

  it('marks one without a karpenter.sh/nodepool label standalone, and keeps what it knows of the others', () => {
    const read = convertNodeClaims(
      [
        claim('by-hand', { team: 'a' }),
        claim('no-labels', undefined),
        claim('bad-label', { 'karpenter.sh/nodepool': 7 }),
        claim('unreadable-labels', 'oops'),
      ],
      toClusterNodeClaim,
    );
    expect(read.items).toEqual([]);
    expect(read.unreadable.map(({ problem: _, ...known }) => known)).toEqual([
      { name: 'by-hand', standalone: true },
      { name: 'no-labels', standalone: true },
      // Labels that cannot be read, or a label that is not a string: its NodePool is unknown.
      { name: 'bad-label' },
      { name: 'unreadable-labels' },
    ]);
  });
});
