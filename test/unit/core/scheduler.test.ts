import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  computeAllocatable,
  type InstanceType,
  InvalidRequirementError,
  Label,
  type NodeSelectorRequirement,
  type Operator,
  type Pod,
  solve,
  ValidationError,
} from '../../../shared/core/index.ts';
import {
  catalogInstanceTypes,
  daemonSet,
  fakeInstanceType,
  node,
  nodePool,
  planCost,
  pod,
  pods,
  solveInput,
  zoneName,
} from './builders.ts';
import { claimTypes, claimZone, SMALL_TYPES, whereIs } from './fixtures.ts';

const types = SMALL_TYPES;
const r = (
  key: string,
  operator: Operator,
  values?: string[],
  minValues?: number,
): NodeSelectorRequirement => ({
  key,
  operator,
  ...(values === undefined ? {} : { values }),
  ...(minValues === undefined ? {} : { minValues }),
});

describe('instance type selection', () => {
  it.each<[string, Pod, string]>([
    ['cheapest that fits cpu and memory', pod({ cpu: '1', memory: '2Gi' }), 'a.large'],
    ['memory-heavy pod', pod({ cpu: '1', memory: '12Gi' }), 'r.large'],
    ['cpu-heavy pod', pod({ cpu: '3', memory: '2Gi' }), 'm.xlarge'],
    ['amd64 only', pod({ cpu: '1', memory: '2Gi', nodeSelector: { [Label.arch]: 'amd64' } }), 'c.large'],
    ['gpu', pod({ cpu: '1', requests: { 'nvidia.com/gpu': '1' } }), 'g.xlarge'],
    ['Gt on instance-cpu', pod({ cpu: '1', required: [[r(Label.instanceCpu, 'Gt', ['4'])]] }), 'm.2xlarge'],
    ['tiny pod', pod({ cpu: '100m', memory: '64Mi' }), 't.nano'],
  ])('%s → %s', (_name, p, expected) => {
    const result = solve(solveInput({ types, pods: [p] }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(1);
    expect(claimTypes(result.nodeClaims[0])[0]).toBe(expected);
  });

  it('lists candidates cheapest first, at most 60, using spot when allowed', () => {
    const result = solve(
      solveInput({ types: catalogInstanceTypes(), pods: [pod({ cpu: '1', memory: '1Gi' })] }),
    );
    const candidates = result.nodeClaims[0]?.instanceTypes ?? [];
    expect(candidates).toHaveLength(60);
    const prices = candidates.map((c) => c.priceUsdPerHour);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const claim = result.nodeClaims[0];
    expect(claim?.requirements.find((x) => x.key === Label.instanceType)?.values).toEqual(
      candidates.map((c) => c.name).sort(),
    );
  });

  it('honours capacity-type requirements in prices', () => {
    const pool = nodePool({ requirements: [r(Label.capacityType, 'In', ['on-demand'])] });
    const result = solve(solveInput({ types, nodePools: [pool], pods: [pod({ cpu: '1', memory: '1Gi' })] }));
    expect(result.nodeClaims[0]?.instanceTypes[0]).toEqual({ name: 'a.large', priceUsdPerHour: 0.077 });
  });

  it('packs several pods onto one node when that is cheapest, counting maxPods', () => {
    const result = solve(
      solveInput({ types: [types[7] as never], pods: pods(6, () => ({ cpu: '10m', memory: '1Mi' })) }),
    );
    // t.nano: 4 pods max.
    expect(result.nodeClaims.map((c) => c.pods.length)).toEqual([4, 2]);
  });
});

describe('node affinity and selectors', () => {
  it('tries required terms in order (OR) and relaxes to the next one', () => {
    const p = pod({
      cpu: '1',
      required: [[r(Label.zone, 'In', ['us-east-1z'])], [r(Label.zone, 'In', [zoneName('b')])]],
    });
    const result = solve(solveInput({ types, pods: [p] }));
    expect(claimZone(result.nodeClaims[0] as never)).toBe(zoneName('b'));
  });

  it('follows a preferred term when possible', () => {
    const p = pod({ cpu: '1', preferred: [{ weight: 10, reqs: [r(Label.zone, 'In', [zoneName('c')])] }] });
    const result = solve(solveInput({ types, pods: [p] }));
    expect(claimZone(result.nodeClaims[0] as never)).toBe(zoneName('c'));
  });

  it('drops a preferred term that cannot be met', () => {
    const p = pod({
      cpu: '1',
      memory: '2Gi',
      preferred: [
        { weight: 50, reqs: [r(Label.zone, 'In', ['nowhere'])] },
        { weight: 10, reqs: [r(Label.arch, 'In', ['amd64'])] },
      ],
    });
    const result = solve(solveInput({ types, pods: [p] }));
    expect(result.unschedulable).toEqual([]);
    // The heavier preference is dropped, the lighter one then applies.
    expect(claimTypes(result.nodeClaims[0])[0]).toBe('c.large');
  });

  it('ignores preferences with preferencePolicy Ignore', () => {
    const p = pod({
      cpu: '1',
      memory: '2Gi',
      preferred: [{ weight: 10, reqs: [r(Label.arch, 'In', ['amd64'])] }],
    });
    const result = solve(solveInput({ types, pods: [p], options: { preferencePolicy: 'Ignore' } }));
    expect(claimTypes(result.nodeClaims[0])[0]).toBe('a.large');
  });

  it('a custom label needs a NodePool that sets it', () => {
    const p = pod({ cpu: '1', nodeSelector: { team: 'ml' } });
    const plain = solve(solveInput({ types, pods: [p] }));
    expect(plain.unschedulable[0]?.message).toBe(
      'nodePool default: pod requires team In [ml], nodePool has no label team',
    );
    const labelled = solve(
      solveInput({ types, pods: [p], nodePools: [nodePool({ labels: { team: 'ml' } })] }),
    );
    expect(labelled.nodeClaims[0]?.labels['team']).toBe('ml');
    const required = solve(
      solveInput({
        types,
        pods: [p],
        nodePools: [nodePool({ requirements: [r('team', 'In', ['ml', 'web'])] })],
      }),
    );
    expect(required.nodeClaims[0]?.labels['team']).toBe('ml');
  });

  it('NotIn / DoesNotExist on a label the pool lacks are satisfied', () => {
    const p = pod({ cpu: '1', required: [[r('team', 'NotIn', ['ml']), r('spot-only', 'DoesNotExist')]] });
    expect(solve(solveInput({ types, pods: [p] })).unschedulable).toEqual([]);
  });

  it('a pod pinned to a hostname cannot get a new node', () => {
    const p = pod({ cpu: '1', nodeSelector: { [Label.hostname]: 'ip-10-0-0-1' } });
    const result = solve(solveInput({ types, pods: [p] }));
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toHaveLength(1);
  });

  describe('matchFields on metadata.name', () => {
    const pinned = (operator: 'In' | 'NotIn', name: string, extra: NodeSelectorRequirement[] = []): Pod => ({
      ...pod({ cpu: '1', memory: '1Gi' }),
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: extra, matchFields: [{ key: 'metadata.name', operator, values: [name] }] },
            ],
          },
        },
      },
    });
    const nodes = [
      node({ name: 'node-a', cpu: '4', memory: '8Gi' }),
      node({ name: 'node-b', cpu: '4', memory: '8Gi' }),
    ];

    it('In places the pod only on the node of that name', () => {
      const result = solve(solveInput({ types, pods: [pinned('In', 'node-b')], nodes }));
      expect(result.placements).toEqual([
        expect.objectContaining({ kind: 'existingNode', nodeName: 'node-b' }),
      ]);
      expect(result.nodeClaims).toEqual([]);
    });

    it('In never gets a new node, and says why', () => {
      const result = solve(solveInput({ types, pods: [pinned('In', 'gone')], nodes }));
      expect(result.nodeClaims).toEqual([]);
      expect(result.unschedulable[0]?.message).toBe(
        'nodePool default: node affinity matchFields metadata.name In [gone] admits only existing nodes',
      );
    });

    it('NotIn keeps the pod off that node and admits a new one', () => {
      const full = [node({ name: 'node-a', cpu: '4', memory: '8Gi' })];
      const onExisting = solve(solveInput({ types, pods: [pinned('NotIn', 'node-b')], nodes }));
      expect(onExisting.placements[0]).toMatchObject({ nodeName: 'node-a' });
      const fresh = solve(solveInput({ types, pods: [pinned('NotIn', 'node-a')], nodes: full }));
      expect(fresh.placements).toEqual([]);
      expect(fresh.nodeClaims).toHaveLength(1);
    });

    it('is ANDed with the matchExpressions of its term', () => {
      const zoned = [
        node({ name: 'node-a', cpu: '4', memory: '8Gi', zone: 'a' }),
        node({ name: 'node-b', cpu: '4', memory: '8Gi', zone: 'b' }),
      ];
      const result = solve(
        solveInput({
          types,
          pods: [pinned('In', 'node-a', [r(Label.zone, 'In', [zoneName('b')])])],
          nodes: zoned,
        }),
      );
      expect(result.placements).toEqual([]);
      expect(result.nodeClaims).toEqual([]);
      expect(result.unschedulable).toHaveLength(1);
    });
  });

  it('explains instance-level mismatches', () => {
    const p = pod({ cpu: '1', nodeSelector: { [Label.instanceFamily]: 'p5' } });
    expect(solve(solveInput({ types, pods: [p] })).unschedulable[0]?.message).toBe(
      'nodePool default: no instance type matches karpenter.k8s.aws/instance-family In [p5]',
    );
  });
});

describe('taints and tolerations', () => {
  const gpuPool = nodePool({
    name: 'gpu',
    weight: 50,
    taints: [{ key: 'team', value: 'gpu', effect: 'NoSchedule' }],
  });

  it('gives one readable reason per NodePool', () => {
    const result = solve(
      solveInput({ types, nodePools: [gpuPool, nodePool()], pods: [pod({ name: 'big', cpu: '192' })] }),
    );
    expect(result.unschedulable).toEqual([
      {
        pod: expect.objectContaining({ name: 'big' }),
        reasons: [
          { nodePool: 'gpu', reason: 'taint team=gpu:NoSchedule not tolerated' },
          { nodePool: 'default', reason: 'no instance type has 192 cpu' },
        ],
        message:
          'nodePool gpu: taint team=gpu:NoSchedule not tolerated; nodePool default: no instance type has 192 cpu',
      },
    ]);
  });

  it('a tolerating pod uses the tainted pool and the claim carries the taint', () => {
    const p = pod({
      cpu: '1',
      tolerations: [{ key: 'team', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
    });
    const result = solve(solveInput({ types, nodePools: [gpuPool, nodePool()], pods: [p] }));
    expect(result.nodeClaims[0]?.nodePoolName).toBe('gpu');
    expect(result.nodeClaims[0]?.taints).toEqual([{ key: 'team', value: 'gpu', effect: 'NoSchedule' }]);
  });

  it('startup taints need no toleration', () => {
    const pool = nodePool({ startupTaints: [{ key: 'cilium/agent-not-ready', effect: 'NoExecute' }] });
    const result = solve(solveInput({ types, nodePools: [pool], pods: [pod({ cpu: '1' })] }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims[0]?.startupTaints).toHaveLength(1);
  });

  it('PreferNoSchedule is tolerated after relaxation', () => {
    const pool = nodePool({ taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] });
    const result = solve(solveInput({ types, nodePools: [pool], pods: [pod({ cpu: '1' })] }));
    expect(result.unschedulable).toEqual([]);
  });

  it.each([
    [
      'an uninitialized node ignores not-ready and startup taints',
      false,
      [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' as const }],
      'existing',
    ],
    [
      'an initialized node with an untolerated taint is skipped',
      true,
      [{ key: 'dedicated', effect: 'NoSchedule' as const }],
      'new',
    ],
    [
      'a disrupted node is skipped',
      true,
      [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' as const }],
      'new',
    ],
  ])('%s', (_name, initialized, taints, where) => {
    const n = node({ name: 'n1', cpu: '4', memory: '8Gi', taints, initialized });
    const result = solve(solveInput({ types, nodes: [n], pods: [pod({ cpu: '1' })] }));
    expect(result.placements.length === 1 ? 'existing' : 'new').toBe(where);
  });
});

describe('NodePool order', () => {
  it.each([
    [[nodePool({ name: 'a', weight: 10 }), nodePool({ name: 'b', weight: 20 })], 'b'],
    [[nodePool({ name: 'a', weight: 10 }), nodePool({ name: 'b', weight: 10 })], 'b'],
    [[nodePool({ name: 'b' }), nodePool({ name: 'a', weight: 1 })], 'a'],
  ])('weight desc then name desc (%#)', (pools, expected) => {
    const result = solve(solveInput({ types, nodePools: pools, pods: [pod({ cpu: '1' })] }));
    expect(result.nodeClaims[0]?.nodePoolName).toBe(expected);
  });

  it('falls through to a lower-weight pool that fits', () => {
    const pools = [
      nodePool({ name: 'arm', weight: 100, requirements: [r(Label.arch, 'In', ['arm64'])] }),
      nodePool({ name: 'any' }),
    ];
    const result = solve(solveInput({ types, nodePools: pools, pods: [pod({ cpu: '3' })] }));
    expect(result.nodeClaims[0]?.nodePoolName).toBe('any');
  });
});

describe('limits', () => {
  it('never plans past a cpu limit, counting the max capacity of each claim', () => {
    const pool = nodePool({
      limits: { cpu: '10' },
      requirements: [r(Label.instanceType, 'In', ['m.xlarge', 'm.2xlarge'])],
    });
    const result = solve(solveInput({ types, nodePools: [pool], pods: pods(8, () => ({ cpu: '3' })) }));
    const total = result.nodeClaims.reduce(
      (sum, c) => sum + Math.max(...c.instanceTypes.map((t) => (t.name === 'm.2xlarge' ? 8 : 4))),
      0,
    );
    expect(total).toBeLessThanOrEqual(10);
    expect(result.unschedulable.length).toBeGreaterThan(0);
    expect(result.unschedulable[0]?.message).toMatch(
      /^nodePool default: limits cpu 10 leave room for no instance type/,
    );
  });

  it('counts existing nodes of the pool', () => {
    const existing = {
      ...node({ name: 'n1', cpu: '8', memory: '32Gi', nodePoolName: 'default' }),
      capacity: { cpu: 8000 },
    };
    const pool = nodePool({ limits: { cpu: '10' } });
    const full = { ...existing, pods: [pod({ cpu: '7900m' })] };
    const result = solve(
      solveInput({ types, nodePools: [pool], nodes: [full], pods: [pod({ cpu: '1500m', memory: '1Gi' })] }),
    );
    expect(result.nodeClaims).toHaveLength(1);
    expect(claimTypes(result.nodeClaims[0]).every((t) => t.endsWith('.large') || t === 't.nano')).toBe(true);
  });

  it('enforces a node-count limit', () => {
    const pool = nodePool({ limits: { nodes: '2' } });
    const result = solve(
      solveInput({
        types,
        nodePools: [pool],
        pods: pods(3, () => ({ cpu: '1', labels: { app: 'x' }, affinity: antiHost('x') })),
      }),
    );
    expect(result.nodeClaims).toHaveLength(2);
    expect(result.unschedulable[0]?.message).toBe('nodePool default: limit nodes 2 reached');
  });
});

describe('limits the plan does not reach', () => {
  const g6 = catalogInstanceTypes({ filter: (t) => t.family === 'g6', capacityTypes: ['on-demand'] });
  const gpuPods = (n: number) =>
    pods(n, () => ({ cpu: '2', memory: '8Gi', requests: { 'nvidia.com/gpu': '1' } }));
  const gpuCapacity = new Map(g6.map((t) => [t.name, t.capacity['nvidia.com/gpu'] ?? 0]));
  /** GPUs the plan may launch at most: every claim at its largest candidate. */
  const worstGpus = (result: ReturnType<typeof solve>) =>
    result.nodeClaims.reduce(
      (s, c) => s + Math.max(...c.instanceTypes.map((t) => gpuCapacity.get(t.name) ?? 0)),
      0,
    );

  it.each([
    // [pods, GPUs in use, one g6.xlarge ($0.8048/h, 1 GPU) per pod as without the limit]
    [8, 8],
    [6, 0],
    [6, 10],
  ])('%i one-GPU pods under a 16-GPU limit with %i in use get one g6.xlarge each', (n, inUse) => {
    const nodes =
      inUse === 0
        ? []
        : [
            {
              ...node({ name: 'gpu-1', cpu: '48', memory: '180Gi', nodePoolName: 'default' }),
              capacity: { cpu: 48_000, 'nvidia.com/gpu': inUse },
            },
          ];
    const result = solve(
      solveInput({
        types: g6,
        nodePools: [nodePool({ limits: { 'nvidia.com/gpu': '16' } })],
        nodes,
        pods: gpuPods(n),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => claimTypes(c)[0])).toEqual(Array(n).fill('g6.xlarge'));
    expect(planCost(result)).toBeCloseTo(n * 0.8048, 4);
    expect(worstGpus(result)).toBeLessThanOrEqual(16 - inUse);
  });

  it('hands what the claims leave over to them in turn, never past the limit', () => {
    const result = solve(
      solveInput({
        types: g6,
        nodePools: [nodePool({ limits: { 'nvidia.com/gpu': '16' } })],
        pods: gpuPods(6),
      }),
    );
    // 6 GPUs planned, 10 left over: the first claim may launch as an 8-GPU type, the second up to 4.
    expect(
      result.nodeClaims.map((c) => Math.max(...c.instanceTypes.map((t) => gpuCapacity.get(t.name) ?? 0))),
    ).toEqual([8, 4, 1, 1, 1, 1]);
    expect(worstGpus(result)).toBe(16);
  });

  it('fits as many one-per-node pods as the cpu limit holds', () => {
    // 10 pods that repel each other, 1 cpu each; a c6a.large has 2 vCPU: 20 vCPU hold all ten.
    const c6a = catalogInstanceTypes({ filter: (t) => t.family === 'c6a', capacityTypes: ['on-demand'] });
    const result = solve(
      solveInput({
        types: c6a,
        nodePools: [nodePool({ limits: { cpu: '20' } })],
        pods: pods(10, () => ({ cpu: '1', memory: '1Gi', labels: { app: 'x' }, affinity: antiHost('x') })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => claimTypes(c))).toEqual(Array(10).fill(['c6a.large']));
    expect(planCost(result)).toBeCloseTo(0.765, 4);
  });
});

function antiHost(app: string, key: string = Label.hostname) {
  return {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { topologyKey: key, labelSelector: { matchLabels: { app } } },
      ],
    },
  };
}

describe('existing and in-flight capacity', () => {
  it('uses room on an existing node first', () => {
    const n = node({ name: 'n1', cpu: '4', memory: '8Gi', boundPods: [pod({ cpu: '2' })] });
    const result = solve(
      solveInput({
        types,
        nodes: [n],
        pods: [pod({ name: 'a', cpu: '1' }), pod({ name: 'b', cpu: '1500m' })],
      }),
    );
    expect(result.placements.map((p) => p.pod.name)).toEqual(['b']);
    expect(result.nodeClaims.flatMap((c) => c.pods.map((p) => p.name))).toEqual(['a']);
  });

  it('skips cordoned nodes', () => {
    const n = { ...node({ name: 'n1', cpu: '4', memory: '8Gi' }), unschedulable: true };
    expect(solve(solveInput({ types, nodes: [n], pods: [pod({ cpu: '1' })] })).placements).toEqual([]);
  });

  it('respects the node selector against existing labels', () => {
    const n = node({ name: 'n1', cpu: '4', memory: '8Gi', zone: 'a' });
    const result = solve(solveInput({ types, nodes: [n], pods: [pod({ cpu: '1', zone: 'b' })] }));
    expect(result.placements).toEqual([]);
    expect(claimZone(result.nodeClaims[0] as never)).toBe(zoneName('b'));
  });

  describe('pods an earlier decision planned onto in-flight NodeClaims', () => {
    // Two launched g6.12xlarge (4 GPUs each) on their way, planned for six one-GPU pods that prefer
    // a node each (four on one, two on the other: the limit allowed no more nodes then). Now the
    // limit has room for another node.
    const g6 = catalogInstanceTypes({ filter: (t) => t.family === 'g6', capacityTypes: ['on-demand'] });
    const big = g6.find((t) => t.name === 'g6.12xlarge');
    const preferApart = {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 50,
            podAffinityTerm: {
              topologyKey: Label.hostname,
              labelSelector: { matchLabels: { job: 'infer' } },
            },
          },
        ],
      },
    };
    const infer = pods(6, () => ({
      cpu: '2',
      memory: '8Gi',
      requests: { 'nvidia.com/gpu': '1' },
      labels: { job: 'infer' },
      affinity: preferApart,
    }));
    const inFlight = (name: string, nominated: readonly Pod[] | undefined) => ({
      name,
      nodePoolName: 'default',
      requirements: [r(Label.instanceType, 'In', ['g6.12xlarge'])],
      instanceTypeNames: ['g6.12xlarge'],
      labels: { [Label.instanceType]: 'g6.12xlarge', [Label.zone]: zoneName('a'), [Label.hostname]: name },
      allocatable: computeAllocatable(big as InstanceType),
      capacity: big?.capacity ?? {},
      pods: [],
      ...(nominated === undefined ? {} : { nominatedPodUids: nominated.map((p) => p.uid) }),
    });
    const plan = (nominate: boolean) =>
      solve(
        solveInput({
          types: g6,
          nodePools: [nodePool({ limits: { 'nvidia.com/gpu': '16' } })],
          pods: infer,
          nodeClaims: [
            inFlight(
              'gpu-a',
              nominate ? [infer[0], infer[2], infer[3], infer[4]].map((p) => p as Pod) : undefined,
            ),
            inFlight('gpu-b', nominate ? [infer[1], infer[5]].map((p) => p as Pod) : undefined),
          ],
        }),
      );

    it('go back onto them, relaxing their preference as that decision did', () => {
      const result = plan(true);
      expect(result.nodeClaims).toEqual([]);
      expect(result.unschedulable).toEqual([]);
      expect(
        result.placements.map((p) => [p.pod.name, p.kind === 'inFlightNodeClaim' && p.nodeClaimName]),
      ).toEqual(
        expect.arrayContaining([
          [infer[0]?.name, 'gpu-a'],
          [infer[1]?.name, 'gpu-b'],
          [infer[5]?.name, 'gpu-b'],
        ]),
      );
    });

    it('without the nomination, a preference re-plans them onto a new node', () => {
      expect(plan(false).nodeClaims.length).toBeGreaterThan(0);
    });
  });

  it('places onto an in-flight NodeClaim with room', () => {
    const result = solve(
      solveInput({
        types,
        pods: [pod({ name: 'p', cpu: '1' })],
        nodeClaims: [
          {
            name: 'default-abc',
            nodePoolName: 'default',
            requirements: [r(Label.instanceType, 'In', ['m.xlarge'])],
            instanceTypeNames: ['m.xlarge'],
            pods: [pod({ cpu: '2' })],
          },
        ],
      }),
    );
    expect(result.placements).toEqual([
      {
        kind: 'inFlightNodeClaim',
        pod: expect.objectContaining({ name: 'p' }),
        nodeClaimName: 'default-abc',
      },
    ]);
  });

  it('counts in-flight claims against limits at their largest candidate', () => {
    const pool = nodePool({ limits: { cpu: '10' } });
    const result = solve(
      solveInput({
        types,
        nodePools: [pool],
        pods: [pod({ cpu: '3' })],
        nodeClaims: [
          {
            name: 'c1',
            nodePoolName: 'default',
            requirements: [],
            instanceTypeNames: ['m.2xlarge', 'm.large'],
            pods: [pod({ cpu: '1900m' })],
          },
        ],
      }),
    );
    // 8 cpu reserved by the in-flight claim; 2 left cannot host a 3-cpu pod.
    expect(result.nodeClaims).toEqual([]);
    expect(result.placements).toHaveLength(0);
    expect(result.unschedulable).toHaveLength(1);
  });
});

describe('DaemonSet overhead', () => {
  it.each([
    ['counted when it runs on the pool', daemonSet({ name: 'ds', cpu: '1', memory: '100Mi' }), 'm.xlarge'],
    [
      'not counted when it selects another arch',
      daemonSet({ name: 'ds', cpu: '1', memory: '100Mi', nodeSelector: { [Label.arch]: 'arm64' } }),
      'c.large',
    ],
    [
      'counted per instance type when arch matches',
      daemonSet({ name: 'ds', cpu: '1', memory: '100Mi', nodeSelector: { [Label.arch]: 'amd64' } }),
      'm.xlarge',
    ],
  ])('%s', (_name, ds, expected) => {
    const pool = nodePool({ requirements: [r(Label.arch, 'In', ['amd64'])] });
    const result = solve(
      solveInput({
        types,
        nodePools: [pool],
        daemonSets: [ds],
        pods: [pod({ cpu: '1500m', memory: '2Gi' })],
      }),
    );
    expect(claimTypes(result.nodeClaims[0])[0]).toBe(expected);
  });

  it('not counted when it does not tolerate the pool taint', () => {
    const pool = nodePool({
      taints: [{ key: 'x', effect: 'NoSchedule' }],
      requirements: [r(Label.arch, 'In', ['amd64'])],
    });
    const p = pod({ cpu: '1500m', memory: '2Gi', tolerations: [{ key: 'x', operator: 'Exists' }] });
    const result = solve(
      solveInput({
        types,
        nodePools: [pool],
        daemonSets: [daemonSet({ name: 'ds', cpu: '1', memory: '1Mi' })],
        pods: [p],
      }),
    );
    expect(claimTypes(result.nodeClaims[0])[0]).toBe('c.large');
  });

  it('adds DaemonSet requests to the NodeClaim requests', () => {
    const result = solve(
      solveInput({
        types,
        daemonSets: [daemonSet({ name: 'ds', cpu: '100m', memory: '64Mi' })],
        pods: [pod({ cpu: '1', memory: '1Gi' })],
      }),
    );
    expect(result.nodeClaims[0]?.requests).toEqual({
      cpu: 1100,
      memory: 1024 ** 3 + 64 * 1024 ** 2,
      pods: 2,
    });
  });
});

describe('topology spread', () => {
  const spread = (key: string, app: string, maxSkew = 1, extra: object = {}) => ({
    labels: { app },
    spread: [
      {
        maxSkew,
        topologyKey: key,
        whenUnsatisfiable: 'DoNotSchedule' as const,
        labelSelector: { matchLabels: { app } },
        ...extra,
      },
    ],
  });

  it('spreads across zones', () => {
    const result = solve(
      solveInput({ types, pods: pods(6, () => ({ cpu: '1', ...spread(Label.zone, 'web') })) }),
    );
    const perZone = new Map<string, number>();
    for (const c of result.nodeClaims)
      perZone.set(claimZone(c) ?? '?', (perZone.get(claimZone(c) ?? '?') ?? 0) + c.pods.length);
    expect([...perZone.entries()].sort()).toEqual(ZONE_NAMES.map((z) => [z, 2]));
  });

  it('spreads across hostnames', () => {
    const result = solve(
      solveInput({ types, pods: pods(4, () => ({ cpu: '100m', ...spread(Label.hostname, 'web') })) }),
    );
    expect(result.nodeClaims.map((c) => c.pods.length)).toEqual([1, 1, 1, 1]);
  });

  it('spreads across capacity types', () => {
    const result = solve(
      solveInput({ types, pods: pods(2, () => ({ cpu: '1', ...spread(Label.capacityType, 'web') })) }),
    );
    const cts = result.nodeClaims
      .map((c) => c.requirements.find((x) => x.key === Label.capacityType)?.values?.[0])
      .sort();
    expect(cts).toEqual(['on-demand', 'spot']);
  });

  it('counts existing pods in the skew', () => {
    const existing = [
      node({
        name: 'n1',
        cpu: '1',
        memory: '1Gi',
        zone: 'a',
        boundPods: [pod({ cpu: '100m', labels: { app: 'web' } })],
      }),
    ];
    const result = solve(
      solveInput({
        types,
        nodes: existing,
        pods: pods(2, () => ({ cpu: '1', ...spread(Label.zone, 'web') })),
      }),
    );
    expect(result.nodeClaims.map(claimZone).sort()).toEqual([zoneName('b'), zoneName('c')]);
  });

  it('only considers zones the pod can reach (nodeAffinityPolicy Honor)', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(4, () => ({
          cpu: '1',
          ...spread(Label.zone, 'web'),
          required: [[r(Label.zone, 'In', [zoneName('a'), zoneName('b')])]],
        })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    const perZone = new Map<string, number>();
    for (const c of result.nodeClaims)
      perZone.set(claimZone(c) ?? '?', (perZone.get(claimZone(c) ?? '?') ?? 0) + c.pods.length);
    expect([...perZone.entries()].sort()).toEqual([
      [zoneName('a'), 2],
      [zoneName('b'), 2],
    ]);
  });

  it('minDomains above the number of zones keeps the minimum at zero', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(6, () => ({ cpu: '1', ...spread(Label.zone, 'web', 1, { minDomains: 5 }) })),
      }),
    );
    // With the global minimum treated as 0, each zone can hold at most maxSkew (1) pod.
    expect(result.nodeClaims.reduce((s, c) => s + c.pods.length, 0)).toBe(3);
    expect(result.unschedulable).toHaveLength(3);
  });

  it('matchLabelKeys narrows the selector to the pod revision', () => {
    const mk = (rev: string) => ({
      cpu: '100m',
      labels: { app: 'web', rev },
      spread: [
        {
          maxSkew: 1,
          topologyKey: Label.hostname,
          whenUnsatisfiable: 'DoNotSchedule' as const,
          labelSelector: { matchLabels: { app: 'web' } },
          matchLabelKeys: ['rev'],
        },
      ],
    });
    const result = solve(solveInput({ types, pods: [pod(mk('1')), pod(mk('2'))] }));
    // Different revisions do not count against each other, so they may share a node.
    expect(result.nodeClaims).toHaveLength(1);
  });

  it('ScheduleAnyway is relaxed when it cannot be met', () => {
    const p = {
      cpu: '1',
      labels: { app: 'web' },
      spread: [
        {
          maxSkew: 1,
          topologyKey: Label.zone,
          whenUnsatisfiable: 'ScheduleAnyway' as const,
          labelSelector: { matchLabels: { app: 'web' } },
        },
      ],
      zone: 'a',
    };
    const result = solve(solveInput({ types, pods: pods(3, () => p) }));
    expect(result.unschedulable).toEqual([]);
  });

  describe('packs zone-spread pods onto shared nodes, as without the spread', () => {
    const catalog = catalogInstanceTypes({ capacityTypes: ['on-demand'] });
    const computeOrGeneral = nodePool({
      requirements: [r('karpenter.k8s.aws/instance-category', 'In', ['c', 'm'])],
    });
    const solveWeb = (count: number, cpu: string, memory: string, zoneSpread: boolean) =>
      solve(
        solveInput({
          types: catalog,
          nodePools: [computeOrGeneral],
          pods: pods(count, () =>
            zoneSpread
              ? { cpu, memory, ...spread(Label.zone, 'web') }
              : { cpu, memory, labels: { app: 'web' } },
          ),
        }),
      );
    const podsPerZone = (result: ReturnType<typeof solve>): number[] => {
      const perZone = new Map(ZONE_NAMES.map((z) => [z, 0]));
      for (const c of result.nodeClaims) {
        const z = claimZone(c);
        expect(z).toBeDefined();
        perZone.set(z as string, (perZone.get(z as string) ?? 0) + c.pods.length);
      }
      return [...perZone.values()];
    };

    it('300 pods of 500m / 1Gi over three zones', () => {
      const plain = solveWeb(300, '500m', '1Gi', false);
      const spreadOut = solveWeb(300, '500m', '1Gi', true);
      expect(spreadOut.unschedulable).toEqual([]);
      const perZone = podsPerZone(spreadOut);
      expect(perZone.reduce((a, b) => a + b, 0)).toBe(300);
      expect(Math.max(...perZone) - Math.min(...perZone)).toBeLessThanOrEqual(1);
      // Each zone needs at least one node of its own; beyond that the spread costs next to nothing.
      expect(spreadOut.nodeClaims.length).toBeLessThanOrEqual(2 * plain.nodeClaims.length);
      expect(planCost(spreadOut)).toBeLessThanOrEqual(1.1 * planCost(plain));
      // Far from one pod per node: every claim holds many pods.
      expect(Math.min(...spreadOut.nodeClaims.map((c) => c.pods.length))).toBeGreaterThan(10);
    });

    it('for any pod size and count: the skew holds and the spread costs little more', () => {
      fc.assert(
        fc.property(
          fc.constantFrom('250m', '500m', '1', '2', '3500m'),
          fc.constantFrom('512Mi', '1Gi', '4Gi', '8Gi'),
          fc.integer({ min: 1, max: 200 }),
          (cpu, memory, count) => {
            const plain = solveWeb(count, cpu, memory, false);
            const spreadOut = solveWeb(count, cpu, memory, true);
            expect(spreadOut.unschedulable).toEqual([]);
            const perZone = podsPerZone(spreadOut);
            expect(Math.max(...perZone) - Math.min(...perZone)).toBeLessThanOrEqual(1);
            // Up to one partly filled node more per zone, each at most the price of a one-pod node.
            const onePodNode = planCost(solveWeb(1, cpu, memory, false));
            expect(planCost(spreadOut)).toBeLessThanOrEqual(1.2 * planCost(plain) + 3 * onePodNode);
          },
        ),
        { numRuns: 25 },
      );
    });
  });
});

const ZONE_NAMES = ['a', 'b', 'c'].map(zoneName);

describe('pod affinity and anti-affinity', () => {
  it('hostname anti-affinity puts each pod on its own node', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(3, () => ({ cpu: '100m', labels: { app: 'db' }, affinity: antiHost('db') })),
      }),
    );
    expect(result.nodeClaims).toHaveLength(3);
  });

  it('zonal anti-affinity allows one pod per zone', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(4, () => ({ cpu: '100m', labels: { app: 'db' }, affinity: antiHost('db', Label.zone) })),
      }),
    );
    expect(result.nodeClaims.map(claimZone).sort()).toEqual(ZONE_NAMES);
    expect(result.unschedulable).toHaveLength(1);
    expect(result.unschedulable[0]?.message).toMatch(/pod anti-affinity on topology.kubernetes.io\/zone/);
  });

  it('honours the anti-affinity of pods already running (inverse)', () => {
    const guard = pod({ cpu: '100m', labels: { app: 'guard' }, affinity: antiHost('web', Label.zone) });
    const n = node({ name: 'n1', cpu: '4', memory: '8Gi', zone: 'a', boundPods: [guard] });
    const result = solve(
      solveInput({ types, nodes: [n], pods: [pod({ cpu: '1', labels: { app: 'web' } })] }),
    );
    expect(result.placements).toEqual([]);
    expect(claimZone(result.nodeClaims[0] as never)).not.toBe(zoneName('a'));
  });

  it('zonal affinity follows the target pods', () => {
    const target = pod({ cpu: '100m', labels: { app: 'cache' } });
    const n = node({ name: 'n1', cpu: '1', memory: '1Gi', zone: 'b', boundPods: [target] });
    const p = pod({
      cpu: '2',
      affinity: {
        podAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: Label.zone, labelSelector: { matchLabels: { app: 'cache' } } },
          ],
        },
      },
    });
    const result = solve(solveInput({ types, nodes: [n], pods: [p] }));
    expect(claimZone(result.nodeClaims[0] as never)).toBe(zoneName('b'));
  });

  it('affinity to pods that do not exist is unschedulable unless self-selecting', () => {
    const aff = (app: string) => ({
      podAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { topologyKey: Label.hostname, labelSelector: { matchLabels: { app } } },
        ],
      },
    });
    const lonely = solve(solveInput({ types, pods: [pod({ cpu: '1', affinity: aff('ghost') })] }));
    expect(lonely.unschedulable[0]?.message).toMatch(/pod affinity on kubernetes.io\/hostname/);
    const together = solve(
      solveInput({ types, pods: pods(3, () => ({ cpu: '1', labels: { app: 'x' }, affinity: aff('x') })) }),
    );
    expect(together.unschedulable).toEqual([]);
    expect(together.nodeClaims).toHaveLength(1);
  });

  it('waits for affinity targets scheduled later in the same batch', () => {
    const follower = pod({
      name: 'follower',
      cpu: '3',
      affinity: {
        podAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: Label.zone, labelSelector: { matchLabels: { app: 'leader' } } },
          ],
        },
      },
    });
    const leader = pod({ name: 'leader', cpu: '100m', labels: { app: 'leader' }, zone: 'c' });
    const result = solve(solveInput({ types, pods: [follower, leader] }));
    expect(result.unschedulable).toEqual([]);
    const claimOf = whereIs(result);
    const followerClaim = result.nodeClaims.find((c) => c.name === claimOf.get('follower'));
    expect(claimZone(followerClaim as never)).toBe(zoneName('c'));
  });

  it('preferred anti-affinity is followed, then relaxed', () => {
    const pref = {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { topologyKey: Label.zone, labelSelector: { matchLabels: { app: 'p' } } },
          },
        ],
      },
    };
    const result = solve(
      solveInput({ types, pods: pods(4, () => ({ cpu: '100m', labels: { app: 'p' }, affinity: pref })) }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(new Set(result.nodeClaims.map(claimZone)).size).toBe(3);
  });
});

describe('minValues', () => {
  const catalog = catalogInstanceTypes();

  it('keeps enough distinct families among the candidates', () => {
    const pool = nodePool({ requirements: [r(Label.instanceFamily, 'Exists', undefined, 30)] });
    const result = solve(
      solveInput({ types: catalog, nodePools: [pool], pods: [pod({ cpu: '1', memory: '1Gi' })] }),
    );
    const claim = result.nodeClaims[0];
    const families = new Set(claimTypes(claim).map((n) => n.split('.')[0]));
    expect(families.size).toBeGreaterThanOrEqual(30);
    expect(claim?.instanceTypes.length).toBeLessThanOrEqual(60);
    expect(claim?.requirements.find((x) => x.key === Label.instanceFamily)?.minValues).toBe(30);
  });

  it('Strict fails a pod whose fitting types cannot meet minValues; BestEffort launches and says so', () => {
    const pool = nodePool({ requirements: [r(Label.instanceType, 'Exists', undefined, 3)] });
    const p = pod({ cpu: '1', requests: { 'nvidia.com/gpu': '1' } });
    const strict = solve(solveInput({ types, nodePools: [pool], pods: [p] }));
    expect(strict.unschedulable[0]?.message).toMatch(
      /minValues: node.kubernetes.io\/instance-type needs 3 distinct values/,
    );
    const relaxed = solve(
      solveInput({ types, nodePools: [pool], pods: [p], options: { minValuesPolicy: 'BestEffort' } }),
    );
    expect(relaxed.nodeClaims[0]?.minValuesRelaxed).toBe(true);
  });

  it('BestEffort writes the minValues it relaxed, so the NodeClaim is one the API server and the next solve accept', () => {
    const pool = nodePool({ requirements: [r(Label.instanceFamily, 'Exists', undefined, 3)] });
    const p = pod({
      name: 'pinned',
      cpu: '1',
      memory: '1Gi',
      nodeSelector: { [Label.instanceFamily]: 'c5' },
    });
    const options = { minValuesPolicy: 'BestEffort' } as const;
    const plan = solve(solveInput({ types: catalog, nodePools: [pool], pods: [p], options })).nodeClaims[0];
    expect(plan?.minValuesRelaxed).toBe(true);
    const family = plan?.requirements.find((x) => x.key === Label.instanceFamily);
    expect(family).toEqual({ key: Label.instanceFamily, operator: 'In', values: ['c5'], minValues: 1 });
    // The same plan as an in-flight NodeClaim in the next run: read, not refused.
    const next = solve(
      solveInput({
        types: catalog,
        nodePools: [pool],
        pods: [pod({ name: 'small', cpu: '100m', nodeSelector: { [Label.instanceFamily]: 'c5' } })],
        nodeClaims: [
          {
            name: plan?.name ?? '',
            nodePoolName: plan?.nodePoolName ?? '',
            requirements: plan?.requirements ?? [],
            taints: plan?.taints ?? [],
            instanceTypeNames: plan?.instanceTypes.map((t) => t.name) ?? [],
            pods: [],
          },
        ],
        options,
      }),
    );
    expect(next.placements.map((x) => x.kind)).toEqual(['inFlightNodeClaim']);
  });

  it('a claim whose hostname requirement has minValues gets its own candidates, not those of a claim like it', () => {
    // Four 4-cpu types; three carry one hostname label, the fourth another. Pod z asks for two
    // distinct hostnames among its claim's candidates; the claim of x2 asks nothing of them.
    const hosts = ['h1', 'h1', 'h1', 'h2'];
    const four = hosts.map((h, i) =>
      fakeInstanceType({
        name: `a${i + 1}.xlarge`,
        cpu: 4,
        memoryGiB: 8,
        price: i + 1,
        labels: { [Label.hostname]: h },
      }),
    );
    const result = solve(
      solveInput({
        types: four,
        pods: [
          pod({ name: 'x1', cpu: '3' }),
          pod({ name: 'x2', cpu: '3' }),
          pod({ name: 'z', cpu: '100m', required: [[r(Label.hostname, 'NotIn', ['nope'], 2)]] }),
        ],
        options: { maxInstanceTypes: 3, repack: false },
      }),
    );
    const claimOf = (name: string) => result.nodeClaims.find((c) => c.pods.some((p) => p.name === name));
    expect(claimTypes(claimOf('z'))).toEqual(['a1.xlarge', 'a2.xlarge', 'a4.xlarge']);
    expect(claimOf('x2')).not.toBe(claimOf('z'));
    expect(claimTypes(claimOf('x2'))).toEqual(['a1.xlarge', 'a2.xlarge', 'a3.xlarge']);
  });

  it('a minValues the candidates meet stays as written under BestEffort', () => {
    const pool = nodePool({ requirements: [r(Label.instanceFamily, 'Exists', undefined, 3)] });
    const options = { minValuesPolicy: 'BestEffort' } as const;
    const plan = solve(
      solveInput({ types: catalog, nodePools: [pool], pods: [pod({ cpu: '1', memory: '1Gi' })], options }),
    ).nodeClaims[0];
    expect(plan?.minValuesRelaxed).toBe(false);
    expect(plan?.requirements.find((x) => x.key === Label.instanceFamily)?.minValues).toBe(3);
  });
});

describe('volumes and host ports', () => {
  it('a volume pins the zone', () => {
    const result = solve(solveInput({ types, pods: [pod({ cpu: '1', volumeZones: ['c'] })] }));
    expect(claimZone(result.nodeClaims[0] as never)).toBe(zoneName('c'));
  });

  it('a volume in a zone no pool offers is unschedulable', () => {
    const result = solve(solveInput({ types, pods: [pod({ cpu: '1', volumeZones: ['f'] })] }));
    expect(result.unschedulable).toHaveLength(1);
  });

  it('two pods on one host port get two nodes', () => {
    const result = solve(solveInput({ types, pods: pods(2, () => ({ cpu: '100m', hostPorts: [8080] })) }));
    expect(result.nodeClaims).toHaveLength(2);
  });

  it('a DaemonSet host port blocks the pool', () => {
    const result = solve(
      solveInput({
        types,
        daemonSets: [daemonSet({ name: 'ds', cpu: '10m', memory: '1Mi', hostPorts: [9100] })],
        pods: [pod({ cpu: '1', hostPorts: [9100] })],
      }),
    );
    expect(result.unschedulable[0]?.message).toBe(
      'nodePool default: host port TCP/0.0.0.0/9100 is taken by a DaemonSet',
    );
  });
});

describe('bad input', () => {
  it('an unknown operator in a NodePool throws a typed error naming it', () => {
    const pool = nodePool({ requirements: [{ key: 'x', operator: 'Near' as Operator, values: ['y'] }] });
    expect(() => solve(solveInput({ types, nodePools: [pool], pods: [pod({ cpu: '1' })] }))).toThrow(
      InvalidRequirementError,
    );
    expect(() => solve(solveInput({ types, nodePools: [pool], pods: [pod({ cpu: '1' })] }))).toThrow(
      /nodePool "default": spec.template.spec.requirements\[0\]: key x: unknown operator "Near"/,
    );
  });

  it('contradictory NodePool requirements throw', () => {
    const pool = nodePool({ requirements: [r(Label.zone, 'In', ['a']), r(Label.zone, 'NotIn', ['a'])] });
    expect(() => solve(solveInput({ types, nodePools: [pool], pods: [] }))).toThrow(InvalidRequirementError);
  });

  it('a template label that contradicts the requirements throws', () => {
    const pool = nodePool({ labels: { team: 'a' }, requirements: [r('team', 'In', ['b'])] });
    expect(() => solve(solveInput({ types, nodePools: [pool], pods: [] }))).toThrow(ValidationError);
  });

  it('a negative or fractional request throws', () => {
    const p: Pod = { uid: 'u', name: 'p', namespace: 'd', containers: [{ requests: { cpu: -1 } }] };
    expect(() => solve(solveInput({ types, pods: [p] }))).toThrow(
      /pod "d\/p": spec.containers\[0\].resources.requests.cpu/,
    );
  });

  it('a pod whose own constraints contradict is unschedulable, not an exception', () => {
    const p = pod({ cpu: '1', zone: 'a', required: [[r(Label.zone, 'In', [zoneName('b')])]] });
    const result = solve(solveInput({ types, pods: [p] }));
    expect(result.unschedulable[0]?.message).toBe(
      "nodePool default: the pod's own requirements contradict each other on topology.kubernetes.io/zone",
    );
  });

  it.each([
    ['no NodePools', { nodePools: [] }, 'no NodePool is defined'],
    [
      'no instance types',
      { instanceTypes: new Map() },
      'nodePool default: no instance types for nodeClass "default"',
    ],
  ])('a strange cluster (%s) does not throw', (_name, extra, message) => {
    const result = solve({ ...solveInput({ types, pods: [pod({ cpu: '1' })] }), ...extra });
    expect(result.unschedulable[0]?.message).toBe(message);
  });
});

describe('determinism', () => {
  it('gives the same output for the same input', () => {
    const input = solveInput({
      types: catalogInstanceTypes({ filter: (t) => t.family.startsWith('m7') || t.family.startsWith('c7') }),
      pods: pods(60, (i) => ({
        cpu: `${100 + (i % 7) * 150}m`,
        memory: `${128 * (1 + (i % 5))}Mi`,
        labels: { app: `a${i % 3}` },
        ...(i % 4 === 0
          ? {
              spread: [
                {
                  maxSkew: 1,
                  topologyKey: Label.zone,
                  whenUnsatisfiable: 'DoNotSchedule' as const,
                  labelSelector: { matchLabels: { app: `a${i % 3}` } },
                },
              ],
            }
          : {}),
      })),
    });
    expect(solve(input)).toEqual(solve(input));
  });
});

describe('cost-aware packing', () => {
  it('gives a run of identical pods one large node when that is cheaper per pod', () => {
    const big = fakeInstanceType({ name: 'c.8xlarge', cpu: 32, memoryGiB: 64, price: 0.9 });
    const small = fakeInstanceType({ name: 'c.2xlarge', cpu: 8, memoryGiB: 16, price: 0.4 });
    // Alone, a 3-cpu pod is cheapest on c.2xlarge ($0.40, 2 pods); ten share c.8xlarge ($0.09 each).
    const result = solve(
      solveInput({ types: [big, small], pods: pods(10, () => ({ cpu: '3', memory: '1Gi' })) }),
    );
    expect(result.nodeClaims.map((c) => [claimTypes(c)[0], c.pods.length])).toEqual([['c.8xlarge', 10]]);
  });

  it('fills free room on planned claims before opening new ones', () => {
    const result = solve(
      solveInput({
        types,
        pods: [
          pod({ name: 'big', cpu: '3', memory: '4Gi' }),
          ...pods(3, () => ({ cpu: '250m', memory: '256Mi' })),
        ],
      }),
    );
    expect(result.nodeClaims).toHaveLength(1);
    expect(claimTypes(result.nodeClaims[0])[0]).toBe('m.xlarge');
  });

  it('reserves only what a claim can launch, so a large catalog does not exhaust a limit', () => {
    // 1,000 cpu: with every catalog type reserved at its largest (384 vCPU) only 2 claims would fit.
    const pool = nodePool({ limits: { cpu: '1000' } });
    const result = solve(
      solveInput({
        types: catalogInstanceTypes(),
        nodePools: [pool],
        pods: pods(20, () => ({ cpu: '1', labels: { app: 'x' }, affinity: antiHost('x') })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(20);
  });
});
