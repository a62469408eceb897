import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import {
  type ClusterNode,
  type ClusterNodeClaim,
  type ClusterNodePool,
  DEFAULT_NODEPOOL_DISRUPTION,
} from '../../../../shared/ports/cluster.ts';
import {
  computeNodePoolResources,
  computeNodePoolStatus,
} from '../../../../shared/usecases/nodepool/status.ts';
import { clusterNodePool, type NodePoolOverrides } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';
import { nodeClass as resolvedClass } from '../provisioning/builders.ts';

const AT = '2026-11-21T10:00:00Z';

/** The NodePool `default` before its status is first computed: not yet Ready. */
const pool = (overrides: NodePoolOverrides = {}): ClusterNodePool =>
  clusterNodePool('default', { ready: false, ...overrides });

/** The class `default` with only its Ready condition in its status: True, or False for `message`. */
function nodeClass(ready: boolean, message = ''): EC2NodeClass {
  return {
    ...resolvedClass,
    status: {
      subnets: [],
      securityGroups: [],
      amis: [],
      conditions: [
        {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason: ready ? 'Ready' : 'SubnetsNotFound',
          message,
          lastTransitionTime: AT,
        },
      ],
    },
  };
}

function claim(
  name: string,
  providerId: string | undefined,
  capacity: Record<string, number>,
): ClusterNodeClaim {
  return readNodeClaim(name, {
    uid: name,
    status: { ...(providerId === undefined ? {} : { providerId }), capacity, conditions: [] },
  });
}

function node(
  name: string,
  providerId: string,
  capacity: Record<string, number>,
  nodePoolName = 'default',
): ClusterNode {
  return clusterNode(name, { uid: name, providerId, nodePoolName, allocatable: capacity, capacity });
}

const summary = (patch: ReturnType<typeof computeNodePoolStatus>) =>
  (patch?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('computeNodePoolStatus', () => {
  it.each<[string, ClusterNodePool, EC2NodeClass[], string[]]>([
    [
      'valid pool, ready class',
      pool(),
      [nodeClass(true)],
      [
        'ValidationSucceeded=True/ValidationSucceeded',
        'NodeClassReady=True/NodeClassReady',
        'Ready=True/Ready',
      ],
    ],
    [
      'class missing',
      pool(),
      [],
      [
        'ValidationSucceeded=True/ValidationSucceeded',
        'NodeClassReady=False/NodeClassNotFound',
        'Ready=False/NodeClassNotFound',
      ],
    ],
    [
      'class not ready',
      pool(),
      [nodeClass(false, 'no subnets match')],
      [
        'ValidationSucceeded=True/ValidationSucceeded',
        'NodeClassReady=False/NodeClassNotReady',
        'Ready=False/NodeClassNotReady',
      ],
    ],
    [
      'restricted template label',
      pool({ pool: { labels: { 'karpenter.sh/nodepool': 'x' } } }),
      [nodeClass(true)],
      [
        'ValidationSucceeded=False/ValidationFailed',
        'NodeClassReady=True/NodeClassReady',
        'Ready=False/ValidationFailed',
      ],
    ],
    [
      'wrong nodeClassRef kind',
      pool({ nodeClassRef: { group: 'example.com', kind: 'Other', name: 'default' } }),
      [nodeClass(true)],
      [
        'ValidationSucceeded=False/ValidationFailed',
        'NodeClassReady=False/NodeClassNotFound',
        'Ready=False/ValidationFailed',
      ],
    ],
  ])('%s', (_name, p, classes, expected) => {
    expect(summary(computeNodePoolStatus(p, { nodeClasses: classes, claims: [], nodes: [] }))).toEqual(
      expected,
    );
  });

  it('gives a readable message for a NodeClass that is not ready', () => {
    const patch = computeNodePoolStatus(pool(), {
      nodeClasses: [nodeClass(false, 'no subnets match')],
      claims: [],
      nodes: [],
    });
    expect(patch?.conditions?.find((c) => c.type === 'NodeClassReady')?.message).toBe(
      'EC2NodeClass "default" is not ready: no subnets match',
    );
  });

  it('writes nothing when status already matches', () => {
    const done = pool({
      conditions: [
        {
          type: 'ValidationSucceeded',
          status: 'True',
          reason: 'ValidationSucceeded',
          message: '',
          lastTransitionTime: AT,
        },
        {
          type: 'NodeClassReady',
          status: 'True',
          reason: 'NodeClassReady',
          message: '',
          lastTransitionTime: AT,
        },
        { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: AT },
      ],
      resources: { nodes: 0 },
      nodes: 0,
    });
    expect(
      computeNodePoolStatus(done, { nodeClasses: [nodeClass(true)], claims: [], nodes: [] }),
    ).toBeUndefined();

    // A new generation of the NodeClass is recorded once, as nodeClassObservedGeneration.
    const edited = { ...nodeClass(true), generation: 3 };
    expect(computeNodePoolStatus(done, { nodeClasses: [edited], claims: [], nodes: [] })).toEqual({
      nodeClassObservedGeneration: 3,
    });
    expect(
      computeNodePoolStatus(
        { ...done, nodeClassObservedGeneration: 3 },
        { nodeClasses: [edited], claims: [], nodes: [] },
      ),
    ).toBeUndefined();
  });

  it('adds NodeRegistrationHealthy only when this pass decided it', () => {
    const health = new Map([
      [
        'default',
        {
          type: 'NodeRegistrationHealthy',
          status: 'False' as const,
          reason: 'RegistrationTimeout',
          message: 'x',
        },
      ],
    ]);
    const patch = computeNodePoolStatus(pool(), {
      nodeClasses: [nodeClass(true)],
      claims: [],
      nodes: [],
      registrationHealth: health,
    });
    expect(summary(patch)).toContain('NodeRegistrationHealthy=False/RegistrationTimeout');
  });
});

describe('computeNodePoolResources', () => {
  it('sums node capacity, falls back to claim capacity, skips unlaunched claims and other pools', () => {
    const claims = [
      claim('a', 'aws:///z/i-a', { cpu: 2000, memory: 4 }),
      claim('b', 'aws:///z/i-b', { cpu: 4000, memory: 8 }),
      claim('c', undefined, { cpu: 8000 }),
    ];
    const nodes = [
      node('node-a', 'aws:///z/i-a', { cpu: 2100, memory: 5 }),
      node('node-x', 'aws:///z/i-x', { cpu: 1000, memory: 1 }),
      node('node-y', 'aws:///z/i-y', { cpu: 500 }, 'other'),
    ];
    expect(computeNodePoolResources('default', claims, nodes)).toEqual({
      resources: { cpu: 7100, memory: 14, nodes: 3 },
      nodes: 3,
    });
  });
});

describe('DisruptionBudgetsValid', () => {
  const input = { nodeClasses: [nodeClass(true)], claims: [], nodes: [] };
  const budgetsCondition = (p: ClusterNodePool) =>
    computeNodePoolStatus(p, input)?.conditions?.find((c) => c.type === 'DisruptionBudgetsValid');
  const withBudgets = (
    budgets: ClusterNodePool['disruption']['budgets'],
    conditions: ClusterNodePool['conditions'] = [],
  ) => pool({ disruption: { ...DEFAULT_NODEPOOL_DISRUPTION, budgets }, conditions });

  it('is False, naming each malformed budget, while the others still apply', () => {
    const condition = budgetsCondition(
      withBudgets([
        { nodes: '10%' },
        { nodes: '0', schedule: '61 * * * *', duration: '1h' },
        { nodes: '150%' },
        { nodes: '1', schedule: '@daily', duration: '90s' },
      ]),
    );
    expect(condition).toMatchObject({ status: 'False', reason: 'InvalidBudget' });
    expect(condition?.message).toMatch(
      /^budgets\[1\]: schedule .*; budgets\[2\]: nodes "150%".*; budgets\[3\]: duration "90s"/,
    );
    expect(condition?.message).not.toMatch(/budgets\[0\]/);
  });

  it('says a budget whose time zone is unknown holds rather than being left out', () => {
    const condition = budgetsCondition(
      withBudgets([{ nodes: '0', schedule: '0 9 * * 1-5', duration: '8h', timeZone: 'Mars/Olympus' }]),
    );
    expect(condition).toMatchObject({
      status: 'False',
      reason: 'InvalidBudget',
      message:
        'budgets[0]: time zone "Mars/Olympus" (annotation flotilla.io/budget-time-zone) is not an IANA time zone; the budget is taken as active',
    });
  });

  it('is not written while every budget parses, and turns True once a malformed one is fixed', () => {
    expect(
      budgetsCondition(withBudgets([{ nodes: '1', schedule: '0 9 * * 1-5', duration: '8h' }])),
    ).toBeUndefined();
    const wasFalse = [
      {
        type: 'DisruptionBudgetsValid',
        status: 'False' as const,
        reason: 'InvalidBudget',
        message: 'budgets[0]: …',
        lastTransitionTime: AT,
      },
    ];
    expect(budgetsCondition(withBudgets([{ nodes: '1' }], wasFalse))).toMatchObject({
      status: 'True',
      reason: 'DisruptionBudgetsValid',
    });
  });
});
