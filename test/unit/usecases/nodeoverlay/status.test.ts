import { describe, expect, it } from 'vitest';
import { parseNodeOverlay } from '../../../../shared/apis/index.ts';
import type { Condition } from '../../../../shared/core/index.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from '../provisioning/world.ts';

// NodeOverlays as a user applies them, on the in-memory cluster and cloud: what the provisioner
// launches with them, and the status the controllers pass writes; with Karpenter's NodeOverlay
// feature gate on, and (its default) off, when they are neither read nor given a status.

const gateOn = { config: { nodeOverlay: true } } as const;

const silent = makeLogger({}, { sink: () => {} });

function nodeOverlay(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'karpenter.sh/v1alpha1', kind: 'NodeOverlay', metadata: { name }, spec };
}

function conditionsOf(world: ReturnType<typeof scenarioWorld>, name: string): Record<string, Condition> {
  const raw = world.cluster.get('NodeOverlay', name) as { status?: { conditions?: Condition[] } } | undefined;
  return Object.fromEntries((raw?.status?.conditions ?? []).map((c) => [c.type, c]));
}

describe('NodeOverlay status', () => {
  it('writes ValidationSucceeded and Ready: True when valid, RuntimeValidation and Conflict otherwise, once', async () => {
    const world = scenarioWorld();
    world.cluster.create(nodeOverlay('valid', { requirements: [], weight: 2, priceAdjustment: '-10%' }));
    world.cluster.create(nodeOverlay('restricted', { requirements: [], capacity: { cpu: '1' } }));
    world.cluster.create(nodeOverlay('first', { requirements: [], weight: 1, price: '0.01' }));
    world.cluster.create(nodeOverlay('second', { requirements: [], weight: 1, price: '0.02' }));

    // The provisioner's controllers pass: EC2NodeClasses resolved (so they have offerings), then overlays.
    const steps = provisionerSteps(world, silent, gateOn);
    const result = await steps.reconcileLifecycle('pass');
    expect(new Set(result.nodeOverlaysUpdated)).toEqual(new Set(['valid', 'restricted', 'first', 'second']));
    expect(conditionsOf(world, 'valid')['ValidationSucceeded']).toMatchObject({
      status: 'True',
      reason: 'ValidationSucceeded',
    });
    expect(conditionsOf(world, 'valid')['Ready']).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(conditionsOf(world, 'restricted')['ValidationSucceeded']).toMatchObject({
      status: 'False',
      reason: 'RuntimeValidation',
      message: expect.stringContaining('spec.capacity.cpu'),
    });
    expect(conditionsOf(world, 'restricted')['Ready']).toMatchObject({
      status: 'False',
      reason: 'UnhealthyDependents',
      message: 'ValidationSucceeded=False',
    });
    // Same weight, same offerings: "second" sorts first and applies; "first" conflicts.
    expect(conditionsOf(world, 'second')['ValidationSucceeded']?.status).toBe('True');
    expect(conditionsOf(world, 'first')['ValidationSucceeded']).toMatchObject({
      status: 'False',
      reason: 'Conflict',
      message: 'conflict with another overlay',
    });

    expect((await steps.reconcileLifecycle('pass')).nodeOverlaysUpdated).toEqual([]);
  });

  it('writes none with the NodeOverlay gate off, as Karpenter runs no overlay controller then', async () => {
    const world = scenarioWorld();
    world.cluster.create(nodeOverlay('valid', { requirements: [], weight: 2, priceAdjustment: '-10%' }));
    const result = await provisionerSteps(world, silent).reconcileLifecycle('pass');
    expect(result.nodeOverlaysUpdated).toBeUndefined();
    expect(world.cluster.get('NodeOverlay', 'valid')).not.toHaveProperty('status');
    expect(conditionsOf(world, 'valid')).toEqual({});
  });
});

describe('NodeOverlays in provisioning', () => {
  async function launchedType(
    overlays: readonly ReturnType<typeof nodeOverlay>[],
    overlayGate = true,
  ): Promise<string | undefined> {
    const world = scenarioWorld();
    for (const o of overlays) world.cluster.create(o);
    addPendingPod(world.cluster, 'web-1');
    const steps = provisionerSteps(world, silent, { config: { nodeOverlay: overlayGate } });
    await steps.reconcileLifecycle('p-0');
    const result = await steps.provision('p-1');
    if (result.kind !== 'provisioned') throw new Error(`provisioning ${result.kind}`);
    const launched = result.claims.find((c) => c.kind === 'launched');
    return launched?.kind === 'launched' ? launched.instanceType : undefined;
  }

  it('launches the type a price overlay makes cheapest', async () => {
    const plain = await launchedType([]);
    expect(plain).toBeDefined();
    const chosen = plain === 'm6i.xlarge' ? 'm6a.xlarge' : 'm6i.xlarge';
    const overlaid = await launchedType([
      nodeOverlay('savings-plan', {
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: [chosen] }],
        price: '0.0001',
      }),
    ]);
    expect(overlaid).toBe(chosen);
  });

  it('plans as if there were no overlay with the NodeOverlay gate off (its default)', async () => {
    const plain = await launchedType([]);
    const chosen = plain === 'm6i.xlarge' ? 'm6a.xlarge' : 'm6i.xlarge';
    const overlay = nodeOverlay('savings-plan', {
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: [chosen] }],
      price: '0.0001',
    });
    expect(await launchedType([overlay], true)).toBe(chosen);
    expect(await launchedType([overlay], false)).toBe(plain);
  });

  it('ignores an invalid overlay and applies the others', async () => {
    const overlaid = await launchedType([
      nodeOverlay('bad', { requirements: [], price: 'cheap' }),
      nodeOverlay('good', {
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['r6i.large'] }],
        price: '0.0001',
      }),
    ]);
    expect(overlaid).toBe('r6i.large');
  });
});

describe('parseNodeOverlay', () => {
  const base = {
    apiVersion: 'karpenter.sh/v1alpha1',
    kind: 'NodeOverlay',
    metadata: { name: 'o', generation: 3 },
  };

  it('reads a valid overlay with its weight, price change and capacity in base units', () => {
    const read = parseNodeOverlay({
      ...base,
      spec: {
        weight: 7,
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }],
        priceAdjustment: '+0.25',
        capacity: { 'example.com/fpga': '2', 'hugepages-2Mi': '1Gi' },
      },
    });
    expect(read).toEqual({
      name: 'o',
      generation: 3,
      conditions: [],
      overlay: {
        name: 'o',
        weight: 7,
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }],
        price: { kind: 'delta', usd: 0.25 },
        capacity: { 'example.com/fpga': 2, 'hugepages-2Mi': 1024 ** 3 },
      },
    });
  });

  it.each([
    [
      { requirements: [], price: '1', priceAdjustment: '+1' },
      "cannot set both 'price' and 'priceAdjustment'",
    ],
    [{ requirements: [{ key: 'karpenter.sh/registered', operator: 'Exists' }] }, 'spec.requirements[0].key'],
    [
      { requirements: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['a'] }] },
      'kubernetes.io/hostname',
    ],
    [
      { requirements: [{ key: 'karpenter.k8s.aws/capacity-reservation-id', operator: 'Exists' }] },
      'karpenter.k8s.aws',
    ],
    [{ requirements: [{ key: 'team', operator: 'NotIn' }] }, 'NotIn needs a value'],
    [{ requirements: [{ key: 'team', operator: 'Gt', values: ['x'] }] }, 'integer'],
    [{ requirements: [{ key: 'team', operator: 'Near', values: ['x'] }] }, 'spec.requirements[0].operator'],
    [{ requirements: [], capacity: { memory: '1Gi' } }, 'resource "memory" is restricted'],
    [{ requirements: [], capacity: { 'example.com/x': 'lots' } }, 'spec.capacity'],
    [{ requirements: [], priceAdjustment: '50%' }, 'priceAdjustment'],
    [{ requirements: [], weight: 0 }, 'spec.weight'],
    [{ price: '1' }, 'spec.requirements'],
  ])('marks %o invalid, saying why (%s)', (spec, why) => {
    const read = parseNodeOverlay({ ...base, spec });
    expect(read.overlay).toBeUndefined();
    expect(read.invalid).toContain(why);
    expect(read.name).toBe('o');
  });

  it('keeps the status conditions of a malformed overlay and refuses one without a name', () => {
    const conditions = [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: '',
        lastTransitionTime: '2026-11-27T10:00:00Z',
      },
    ];
    expect(parseNodeOverlay({ ...base, spec: 'nope', status: { conditions } })).toMatchObject({
      name: 'o',
      conditions,
      invalid: expect.stringContaining('spec'),
    });
    expect(() => parseNodeOverlay({ kind: 'NodeOverlay', spec: {} })).toThrow(/metadata\.name/);
  });
});
