import { describe, expect, it } from 'vitest';
import {
  computeStaticDecision,
  computeStaticDriftRoom,
  type NodePool,
  planStaticNodeClaim,
  type StaticMember,
  solve,
} from '../../../shared/core/index.ts';
import { daemonSet, fakeInstanceType, nodePool, pod } from './builders.ts';

// Static NodePools (`spec.replicas`): how many NodeClaims to launch or remove, and the NodeClaim
// one replica launches.

const member = (nodeClaim: string, pods = 0, disruptionCost = pods): StaticMember => ({
  nodeClaim,
  pods,
  disruptionCost,
});

function staticPool(replicas: number, limitNodes?: string): NodePool {
  return { ...nodePool(limitNodes === undefined ? {} : { limits: { nodes: limitNodes } }), replicas };
}

describe('computeStaticDecision', () => {
  it.each([
    ['launches the shortfall', staticPool(3), 1, 0, { kind: 'launch', count: 2, replicas: 3, current: 1 }],
    [
      'launches every replica of a new pool',
      staticPool(2),
      0,
      0,
      { kind: 'launch', count: 2, replicas: 2, current: 0 },
    ],
    [
      'caps the launches by limits.nodes',
      staticPool(5, '3'),
      1,
      0,
      { kind: 'launch', count: 2, replicas: 5, current: 1, limitedBy: 'limits.nodes' },
    ],
    [
      'counts NodeClaims being deleted against limits.nodes',
      staticPool(3, '3'),
      2,
      1,
      { kind: 'atLimit', replicas: 3, current: 2, limit: 3 },
    ],
    [
      'launches in full when limits.nodes allows it',
      staticPool(2, '4'),
      0,
      1,
      { kind: 'launch', count: 2, replicas: 2, current: 0 },
    ],
    ['holds steady at replicas', staticPool(2), 2, 1, { kind: 'steady', replicas: 2, current: 2 }],
    ['holds zero replicas', staticPool(0), 0, 0, { kind: 'steady', replicas: 0, current: 0 }],
  ])('%s', (_, pool, current, deleting, expected) => {
    const members = Array.from({ length: current }, (_, i) => member(`c${i}`));
    expect(computeStaticDecision({ pool, members, deleting })).toEqual(expected);
  });

  it('scales down the empty NodeClaims first, then the fewest pods and the lowest disruption cost', () => {
    const members = [
      member('busy', 5),
      member('light', 1, 3),
      member('empty-b'),
      member('cheap', 1, 0.5),
      member('empty-a'),
    ];
    const down = (replicas: number) =>
      computeStaticDecision({ pool: staticPool(replicas), members, deleting: 0 });
    expect(down(3)).toEqual({ kind: 'delete', nodeClaims: ['empty-a', 'empty-b'], replicas: 3, current: 5 });
    expect(down(1)).toMatchObject({ nodeClaims: ['empty-a', 'empty-b', 'cheap', 'light'] });
    expect(down(0)).toMatchObject({ nodeClaims: ['empty-a', 'empty-b', 'cheap', 'light', 'busy'] });
  });

  it('refuses a dynamic pool', () => {
    expect(() => computeStaticDecision({ pool: nodePool(), members: [], deleting: 0 })).toThrow(RangeError);
  });
});

describe('planStaticNodeClaim', () => {
  const types = [
    fakeInstanceType({ name: 'm5.xlarge', cpu: 4, memoryGiB: 16, price: 0.192 }),
    fakeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096 }),
    fakeInstanceType({ name: 'c5.large', cpu: 2, memoryGiB: 4, price: 0.085 }),
    fakeInstanceType({ name: 'r5.large', cpu: 2, memoryGiB: 16, price: 0.126, arch: 'arm64' }),
  ];

  it('offers every type the requirements admit, cheapest first, with no pods', () => {
    const pool = {
      ...nodePool({ requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }),
      replicas: 2,
    };
    const planned = planStaticNodeClaim({ pool, instanceTypes: types });
    expect(planned.ok).toBe(true);
    if (!planned.ok) return;
    expect(planned.plan.instanceTypes.map((t) => t.name)).toEqual(['c5.large', 'm5.large', 'm5.xlarge']);
    expect(planned.plan.pods).toEqual([]);
    expect(planned.plan.nodePoolName).toBe('default');
    expect(planned.plan.requirements).toContainEqual({
      key: 'node.kubernetes.io/instance-type',
      operator: 'In',
      values: ['c5.large', 'm5.large', 'm5.xlarge'],
    });
  });

  it('leaves out the types its DaemonSets do not fit, and counts them as the requests', () => {
    const pool = { ...nodePool(), replicas: 1 };
    const ds = daemonSet({ name: 'agent', cpu: '1500m', memory: '6Gi' });
    const planned = planStaticNodeClaim({ pool, instanceTypes: types, daemonSets: [ds] });
    expect(planned.ok && planned.plan.instanceTypes.map((t) => t.name)).toEqual(['r5.large', 'm5.xlarge']);
    expect(planned.ok && planned.plan.requests['cpu']).toBe(1500);
  });

  it('says why when no type matches', () => {
    const pool = {
      ...nodePool({
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['p5.48xlarge'] }],
      }),
      replicas: 1,
    };
    const planned = planStaticNodeClaim({ pool, instanceTypes: types });
    expect(planned).toMatchObject({ ok: false });
    expect(!planned.ok && planned.reason).toMatch(/no instance type/);
  });

  it('is what the scheduler would plan for one small pod on the same pool, minus the pod', () => {
    const pool = nodePool();
    const planned = planStaticNodeClaim({ pool: { ...pool, replicas: 1 }, instanceTypes: types });
    const solved = solve({
      pods: [pod({ name: 'p', cpu: '10m', memory: '10Mi' })],
      nodePools: [pool],
      instanceTypes: new Map([['default', types]]),
      nowMs: 0,
    });
    expect(planned.ok && planned.plan.instanceTypes).toEqual(solved.nodeClaims[0]?.instanceTypes);
  });
});

describe('computeStaticDriftRoom', () => {
  const counts = (members: number, leaving = 0, deleting = 0) => ({ members, leaving, deleting });
  it.each([
    ['as many as the budget allows', staticPool(3), counts(3), 2, 3, { kind: 'replace', count: 2 }],
    ['as many as are drifted', staticPool(3), counts(3), 5, 1, { kind: 'replace', count: 1 }],
    ['nothing when the budget allows none', staticPool(3), counts(3), 0, 3, { kind: 'none' }],
    ['nothing without drifted nodes', staticPool(3), counts(3), 2, 0, { kind: 'none' }],
    [
      'nothing while a scale-down is pending',
      staticPool(2),
      counts(3),
      2,
      3,
      { kind: 'scalingDown', staying: 3, replicas: 2 },
    ],
    [
      'more beside a command in flight (its candidate leaves once replaced)',
      staticPool(2),
      counts(3, 1),
      1,
      1,
      { kind: 'replace', count: 1 },
    ],
    [
      'within limits.nodes, deleting NodeClaims counted',
      staticPool(2, '5'),
      counts(2, 0, 1),
      4,
      2,
      {
        kind: 'replace',
        count: 2,
      },
    ],
    ['none at limits.nodes', staticPool(2, '2'), counts(2), 1, 1, { kind: 'atLimit', limit: 2 }],
    [
      'none at limits.nodes while an old node drains',
      staticPool(2, '3'),
      counts(2, 0, 1),
      1,
      1,
      { kind: 'atLimit', limit: 3 },
    ],
  ] as const)('%s', (_, pool, c, allowed, drifted, expected) => {
    expect(computeStaticDriftRoom({ pool, counts: c, allowed, drifted })).toEqual(expected);
  });

  it('throws for a pool that is not static', () => {
    expect(() =>
      computeStaticDriftRoom({ pool: nodePool(), counts: counts(1), allowed: 1, drifted: 1 }),
    ).toThrow(RangeError);
  });
});
