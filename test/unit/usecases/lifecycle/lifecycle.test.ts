import { describe, expect, it } from 'vitest';
import type { Taint } from '../../../../shared/core/index.ts';
import { parseInstanceId } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, Condition } from '../../../../shared/ports/cluster.ts';
import {
  decideLifecycle,
  initializationBlocker,
  type LifecycleStep,
} from '../../../../shared/usecases/lifecycle/lifecycle.ts';
import { NOMINATED_PODS_ANNOTATION } from '../../../../shared/usecases/state/new-nodeclaim.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';

const T0 = Date.parse('2026-11-21T10:00:00Z');
const MIN = 60_000;
const PROVIDER_ID = 'aws:///us-east-1a/i-0abc123';
const UNREGISTERED: Taint = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' };
const STARTUP: Taint = { key: 'agent.example.com/not-ready', effect: 'NoSchedule' };
const DEDICATED: Taint = { key: 'dedicated', value: 'web', effect: 'NoSchedule' };

const cond = (type: string, status: Condition['status'], atMs = T0, reason = type): Condition => ({
  type,
  status,
  reason,
  message: '',
  lastTransitionTime: new Date(atMs).toISOString().replace(/\.\d{3}Z$/, 'Z'),
});

/** NodeClaim `claim-a` of pool `default`, created at T0 with taints to carry; Launched unless `conditions`. */
function claim(
  options: {
    conditions?: Condition[];
    providerId?: string | null;
    nodeName?: string;
    requests?: Record<string, number>;
    deleting?: boolean;
  } = {},
): ClusterNodeClaim {
  const providerId = options.providerId === null ? undefined : (options.providerId ?? PROVIDER_ID);
  return readNodeClaim('claim-a', {
    uid: 'uid-a',
    labels: { 'karpenter.sh/nodepool': 'default', team: 'web' },
    annotations: { 'karpenter.sh/nodepool-hash': '123' },
    finalizers: ['karpenter.sh/termination'],
    requests: options.requests ?? { cpu: 1000, memory: 2 ** 30 },
    taints: [DEDICATED],
    startupTaints: [STARTUP],
    createdAtMs: T0,
    deleting: options.deleting ?? false,
    status: {
      ...(providerId === undefined ? {} : { providerId }),
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
      conditions: options.conditions ?? [cond('Launched', 'True')],
    },
  });
}

/** The Node of `claim-a`'s instance as it joins: registration taint, not Ready, not initialized. */
function node(
  options: {
    name?: string;
    taints?: Taint[];
    ready?: boolean;
    labels?: Record<string, string>;
    allocatable?: Record<string, number>;
    finalizers?: string[];
  } = {},
): ClusterNode {
  return clusterNode(options.name ?? 'ip-10-0-0-1', {
    uid: 'node-uid',
    providerId: PROVIDER_ID,
    labels: options.labels ?? {},
    finalizers: options.finalizers ?? [],
    taints: options.taints ?? [UNREGISTERED],
    allocatable: options.allocatable ?? { cpu: 1900, memory: 2 ** 30 },
    initialized: false,
    ready: options.ready ?? false,
  });
}

/** The steps but the Ready condition, which follows the others (tested on its own below). */
const kinds = (steps: readonly LifecycleStep[]) =>
  steps
    .filter((s) => s.kind !== 'ready')
    .map((s) =>
      s.kind === 'delete'
        ? `delete:${s.reason}`
        : s.kind === 'condition'
          ? `${s.update.type}=${s.update.status}/${s.update.reason}`
          : s.kind,
    );

const registered = [cond('Launched', 'True'), cond('Registered', 'True')];

describe('decideLifecycle', () => {
  it.each<[string, ClusterNodeClaim, ClusterNode[], number, string[]]>([
    [
      'not launched, young: wait for the provisioner',
      claim({ conditions: [], providerId: null }),
      [],
      T0 + 4 * MIN,
      [],
    ],
    [
      'not launched after 5m: launch timeout',
      claim({ conditions: [], providerId: null }),
      [],
      T0 + 5 * MIN,
      ['delete:launch_timeout'],
    ],
    [
      'Launched=Unknown after 6m: launch timeout',
      claim({ conditions: [cond('Launched', 'Unknown')] }),
      [],
      T0 + 6 * MIN,
      ['delete:launch_timeout'],
    ],
    ['launched, no node yet', claim(), [], T0 + MIN, ['Registered=Unknown/NodeNotFound']],
    [
      'launched, no node, already NodeNotFound: nothing',
      claim({
        conditions: [
          cond('Launched', 'True'),
          {
            ...cond('Registered', 'Unknown', T0, 'NodeNotFound'),
            message: `Node not registered with cluster (providerID ${PROVIDER_ID})`,
          },
        ],
      }),
      [],
      T0 + MIN,
      [],
    ],
    [
      'launched, no node after 15m: registration timeout',
      claim(),
      [],
      T0 + 15 * MIN,
      ['delete:registration_timeout'],
    ],
    [
      'launched, two nodes',
      claim(),
      [node({ name: 'a' }), node({ name: 'b' })],
      T0 + MIN,
      ['Registered=False/MultipleNodesFound'],
    ],
    [
      'launched, node joined, not ready',
      claim(),
      [node()],
      T0 + MIN,
      ['register', 'Initialized=Unknown/NodeNotReady'],
    ],
    [
      'node joined after 20m still registers',
      claim(),
      [node()],
      T0 + 20 * MIN,
      ['register', 'Initialized=Unknown/NodeNotReady'],
    ],
    [
      'registered, startup taint still there',
      claim({ conditions: registered, nodeName: 'ip-10-0-0-1' }),
      [node({ ready: true, taints: [STARTUP] })],
      T0 + MIN,
      ['Initialized=Unknown/StartupTaintsExist'],
    ],
    [
      'registered, ephemeral taint still there',
      claim({ conditions: registered, nodeName: 'ip-10-0-0-1' }),
      [
        node({
          ready: true,
          taints: [
            { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
          ],
        }),
      ],
      T0 + MIN,
      ['Initialized=Unknown/KnownEphemeralTaintsExist'],
    ],
    [
      'registered, readiness.k8s.io taint still there',
      claim({ conditions: registered, nodeName: 'ip-10-0-0-1' }),
      [node({ ready: true, taints: [{ key: 'readiness.k8s.io/cni', effect: 'NoSchedule' }] })],
      T0 + MIN,
      ['Initialized=Unknown/KnownEphemeralTaintsExist'],
    ],
    [
      'registered, GPU requested but not allocatable',
      claim({
        conditions: registered,
        nodeName: 'ip-10-0-0-1',
        requests: { cpu: 1000, 'nvidia.com/gpu': 1 },
      }),
      [node({ ready: true, taints: [] })],
      T0 + MIN,
      ['Initialized=Unknown/ResourceNotRegistered'],
    ],
    [
      'registered, GPU allocatable',
      claim({
        conditions: registered,
        nodeName: 'ip-10-0-0-1',
        requests: { cpu: 1000, 'nvidia.com/gpu': 1 },
      }),
      [node({ ready: true, taints: [], allocatable: { cpu: 1900, 'nvidia.com/gpu': 1 } })],
      T0 + MIN,
      ['initialize'],
    ],
    [
      'registered, ready, clean',
      claim({ conditions: registered, nodeName: 'ip-10-0-0-1' }),
      [node({ ready: true, taints: [DEDICATED] })],
      T0 + MIN,
      ['initialize'],
    ],
    [
      'initialized: nothing',
      claim({ conditions: [...registered, cond('Initialized', 'True')], nodeName: 'ip-10-0-0-1' }),
      [node({ ready: true, taints: [] })],
      T0 + 60 * MIN,
      [],
    ],
    [
      'registered, node gone: nothing',
      claim({ conditions: registered, nodeName: 'ip-10-0-0-1' }),
      [],
      T0 + 60 * MIN,
      [],
    ],
    [
      'deleting: left to termination',
      claim({ deleting: true, conditions: [], providerId: null }),
      [],
      T0 + 60 * MIN,
      [],
    ],
  ])('%s', (_name, c, nodes, nowMs, expected) => {
    expect(kinds(decideLifecycle({ claim: c, nodes, nowMs }))).toEqual(expected);
  });

  it('leaves the pods nominated to the claim off the Node', () => {
    const nominated = {
      ...claim(),
      annotations: { 'karpenter.sh/nodepool-hash': '123', [NOMINATED_PODS_ANNOTATION]: 'p1,p2' },
    };
    const [step] = decideLifecycle({ claim: nominated, nodes: [node()], nowMs: T0 + MIN });
    expect(step?.kind === 'register' && step.nodePatch.annotations).toEqual({
      'karpenter.sh/nodepool-hash': '123',
    });
  });

  it('registers: finalizer, labels, annotations, taints + startup taints, unregistered taint removed', () => {
    const [step] = decideLifecycle({ claim: claim(), nodes: [node()], nowMs: T0 + MIN });
    expect(step).toEqual({
      kind: 'register',
      nodeName: 'ip-10-0-0-1',
      nodePatch: {
        labels: { 'karpenter.sh/nodepool': 'default', team: 'web', 'karpenter.sh/registered': 'true' },
        annotations: { 'karpenter.sh/nodepool-hash': '123' },
        addFinalizers: ['karpenter.sh/termination'],
        addOwnerReferences: [
          {
            apiVersion: 'karpenter.sh/v1',
            kind: 'NodeClaim',
            name: 'claim-a',
            uid: 'uid-a',
            blockOwnerDeletion: true,
          },
        ],
        addTaints: [DEDICATED, STARTUP],
        removeTaints: [UNREGISTERED],
      },
      statusPatch: {
        nodeName: 'ip-10-0-0-1',
        conditions: [{ type: 'Registered', status: 'True', reason: 'Registered', message: '' }],
      },
      unregisteredTaintMissing: false,
    });
  });

  it('registers without syncing taints when the node opts out, and reports the missing unregistered taint', () => {
    const [step] = decideLifecycle({
      claim: claim(),
      nodes: [node({ taints: [], labels: { 'karpenter.sh/do-not-sync-taints': 'true' } })],
      nowMs: T0 + MIN,
    });
    expect(step?.kind).toBe('register');
    if (step?.kind !== 'register') return;
    expect(step.nodePatch.addTaints).toBeUndefined();
    expect(step.nodePatch.removeTaints).toBeUndefined();
    expect(step.unregisteredTaintMissing).toBe(true);
  });

  it('does not put back startup taints on a node a previous pass already labelled registered', () => {
    const [step] = decideLifecycle({
      claim: claim(),
      nodes: [
        node({
          taints: [],
          labels: { 'karpenter.sh/registered': 'true' },
          finalizers: ['karpenter.sh/termination'],
        }),
      ],
      nowMs: T0 + MIN,
    });
    expect(step?.kind).toBe('register');
    if (step?.kind !== 'register') return;
    expect(step.nodePatch.addTaints).toBeUndefined();
    expect(step.nodePatch.addFinalizers).toBeUndefined();
    expect(step.unregisteredTaintMissing).toBe(false);
  });

  it('registers and initializes in one pass when the node is ready and has nothing to wait for', () => {
    const c = { ...claim(), startupTaints: [] };
    const steps = decideLifecycle({ claim: c, nodes: [node({ ready: true })], nowMs: T0 + MIN });
    expect(kinds(steps)).toEqual(['register', 'initialize']);
    expect(steps[1]).toMatchObject({ nodePatch: { labels: { 'karpenter.sh/initialized': 'true' } } });
  });

  it('hands a claim whose node never registered to termination, which terminates its instance', () => {
    expect(decideLifecycle({ claim: claim(), nodes: [], nowMs: T0 + 16 * MIN })).toEqual([
      {
        kind: 'delete',
        reason: 'registration_timeout',
        message: `nodeClaim "claim-a" launched ${PROVIDER_ID} but no node registered within 15m`,
      },
    ]);
  });
});

describe('the NodeClaim Ready condition', () => {
  const ready = (steps: readonly LifecycleStep[]) => {
    const step = steps.find((s) => s.kind === 'ready');
    return step?.kind === 'ready' ? step.update : undefined;
  };

  it.each<[string, ClusterNodeClaim, ClusterNode[], string | undefined]>([
    [
      'not launched yet',
      claim({ conditions: [], providerId: null }),
      [],
      'Unknown: Launched=Unknown, Registered=Unknown, Initialized=Unknown',
    ],
    ['launched, waiting for its node', claim(), [], 'Unknown: Registered=Unknown, Initialized=Unknown'],
    [
      'two nodes for one claim',
      claim(),
      [node({ name: 'a' }), node({ name: 'b' })],
      'False: Registered=False, Initialized=Unknown',
    ],
    [
      'registered and initialized in this pass',
      { ...claim(), startupTaints: [] },
      [node({ ready: true })],
      'True: ',
    ],
    [
      'already Ready: nothing to write',
      claim({
        conditions: [
          cond('Launched', 'True'),
          cond('Registered', 'True'),
          cond('Initialized', 'True'),
          cond('Ready', 'True', T0, 'Ready'),
        ],
        nodeName: 'ip-10-0-0-1',
      }),
      [node({ ready: true, taints: [] })],
      undefined,
    ],
  ])('%s', (_name, c, nodes, expected) => {
    const update = ready(decideLifecycle({ claim: c, nodes, nowMs: T0 + MIN }));
    expect(update === undefined ? undefined : `${update.status}: ${update.message}`).toBe(expected);
  });

  it('is not written for a claim being deleted or timed out', () => {
    expect(
      ready(decideLifecycle({ claim: claim({ deleting: true }), nodes: [], nowMs: T0 + MIN })),
    ).toBeUndefined();
    expect(ready(decideLifecycle({ claim: claim(), nodes: [], nowMs: T0 + 16 * MIN }))).toBeUndefined();
  });
});

describe('initializationBlocker', () => {
  it('names the startup taint that is left', () => {
    expect(initializationBlocker(claim(), node({ ready: true, taints: [STARTUP] }))?.message).toBe(
      'StartupTaint "agent.example.com/not-ready:NoSchedule" still exists',
    );
  });
});

describe('parseInstanceId', () => {
  it.each([
    ['aws:///us-east-1a/i-0123456789abcdef0', 'i-0123456789abcdef0'],
    ['aws:///us-east-1a/', undefined],
    ['kind://docker/node', undefined],
    [undefined, undefined],
  ])('%s → %s', (input, expected) => {
    expect(parseInstanceId(input)).toBe(expected);
  });
});
