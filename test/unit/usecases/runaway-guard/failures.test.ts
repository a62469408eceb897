import { describe, expect, it } from 'vitest';
import type { Pod, Taint } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, Condition } from '../../../../shared/ports/cluster.ts';
import {
  classifyNodeClaims,
  findNodeClaimFailures,
  findRecoveredNodeClaim,
  mayHaveRecovered,
  suspectWait,
  UNEXPECTED_TAINT_PERSISTENCE_MS,
} from '../../../../shared/usecases/runaway-guard/failures.ts';
import { unexpectedTaints } from '../../../../shared/usecases/runaway-guard/taints.ts';
import { nodePool, pod } from '../provisioning/builders.ts';
import { claim, MIN, node, ROGUE, T0 } from './fixtures.ts';

// Which NodeClaims of a NodePool failed to host the pods they were launched for, which one proves
// the pool works again, and which taints are unexpected.

describe('findNodeClaimFailures', () => {
  const pending = [pod('web-1', 100)];
  const pool = nodePool('general', {
    labels: { team: 'web' },
    requirements: [
      { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1a', 'us-east-1b'] },
    ],
    taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'example.com/booting', effect: 'NoSchedule' }],
  });
  const toleration = { key: 'dedicated', operator: 'Exists' } as const;
  const tolerant = [pod('web-1', 100, { tolerations: [toleration] })];
  const CILIUM: Taint = { key: 'node.cilium.io/agent-not-ready', effect: 'NoExecute' };
  const DISRUPTED: Taint = { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' };
  const emptied = (reason: string): Condition => ({
    type: 'DisruptionReason',
    status: 'True',
    reason,
    message: '',
    lastTransitionTime: new Date(T0 + 30_000).toISOString(),
  });
  const affinity = (
    ...terms: { key: string; operator: 'In' | 'NotIn' | 'Exists'; values?: string[] }[][]
  ) => ({
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: terms.map((matchExpressions) => ({ matchExpressions })),
      },
    },
  });

  // The NodeClaim was created and initialized at T0 unless the case says otherwise.
  it.each([
    [
      'a rogue taint on a node empty since it initialized 2 minutes ago',
      { taint: ROGUE },
      ['UnexpectedTaint'],
    ],
    ['the same taint 1 minute after initialization (it may yet go)', { taint: ROGUE, nowMs: T0 + MIN }, []],
    ["Cilium's agent-not-ready taint, 30 s after initialization", { taint: CILIUM, nowMs: T0 + 30_000 }, []],
    [
      "Cilium's taint still there, empty, 3 minutes after initialization",
      { taint: CILIUM },
      ['UnexpectedTaint'],
    ],
    [
      'a node that hosted pods until 2 minutes after it initialized (lastPodEventTime that late)',
      { taint: ROGUE, claim: { status: { ...claim('a', T0, []).status, lastPodEventMs: T0 + 2 * MIN } } },
      [],
    ],
    [
      'a node whose pods were evicted 10 s after it initialized, empty under the taint for 2 minutes since',
      {
        taint: ROGUE,
        nowMs: T0 + 10_000 + 2 * MIN,
        claim: { status: { ...claim('a', T0, []).status, lastPodEventMs: T0 + 10_000 } },
      },
      ['UnexpectedTaint'],
    ],
    [
      'the same node 2 minutes after it initialized (empty for less than the window)',
      {
        taint: ROGUE,
        nowMs: T0 + 2 * MIN,
        claim: { status: { ...claim('a', T0, []).status, lastPodEventMs: T0 + 10_000 } },
      },
      [],
    ],
    [
      'a pod event before initialization only',
      { taint: ROGUE, claim: { status: { ...claim('a', T0, []).status, lastPodEventMs: T0 - MIN } } },
      ['UnexpectedTaint'],
    ],
    ['a Node being deleted', { taint: ROGUE, node: { deleting: true } }, []],
    ['a Node carrying karpenter.sh/disrupted', { taint: ROGUE, disrupted: true }, []],
    ['a NodeClaim being deleted', { taint: ROGUE, claim: { deleting: true } }, []],
    [
      'a NodeClaim being deleted as Drifted',
      { taint: ROGUE, disrupted: true, claim: { deleting: true }, reason: 'Drifted' },
      [],
    ],
    [
      'a NodeClaim reclaimed as empty 30 s after initialization, still under the taint',
      { taint: ROGUE, disrupted: true, claim: { deleting: true }, reason: 'Empty', nowMs: T0 + 30_000 },
      ['UnexpectedTaint'],
    ],
    [
      'a NodeClaim reclaimed as empty after the taint went',
      { taint: undefined, disrupted: true, claim: { deleting: true }, reason: 'Empty', nowMs: T0 + 30_000 },
      [],
    ],
    ['the template taint', { taint: { key: 'dedicated', value: 'web', effect: 'NoSchedule' } }, []],
    ['a known ephemeral taint', { taint: { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' } }, []],
    ['a PreferNoSchedule taint', { taint: { key: 'x', effect: 'PreferNoSchedule' } }, []],
    ['karpenter.sh/disrupted alone', { taint: DISRUPTED }, []],
    ['pending pods that do not tolerate the template taints', { taint: ROGUE, pods: pending }, []],
    [
      'pending pods that tolerate the rogue taint',
      { taint: ROGUE, pods: [pod('web-1', 100, { tolerations: [{ operator: 'Exists' }] })] },
      [],
    ],
    [
      'a node registered 1 minute ago, not initialized yet',
      { taint: ROGUE, conditions: ['Launched', 'Registered'], nowMs: T0 + MIN },
      [],
    ],
    [
      'a node registered 3 minutes ago under the taint, never initialized',
      { taint: ROGUE, conditions: ['Launched', 'Registered'] },
      ['UnexpectedTaint'],
    ],
    ['an Initialized condition without a readable time', { taint: ROGUE, initializedAt: Number.NaN }, []],
    [
      "a pod whose nodeSelector matches the pool's labels",
      {
        taint: ROGUE,
        pods: [pod('web-1', 100, { tolerations: [toleration], nodeSelector: { team: 'web' } })],
      },
      ['UnexpectedTaint'],
    ],
    [
      "a pod whose nodeSelector contradicts the pool's labels",
      { taint: ROGUE, pods: [pod('db-1', 100, { tolerations: [toleration], nodeSelector: { team: 'db' } })] },
      [],
    ],
    [
      'a pod selecting a label the pool does not set',
      {
        taint: ROGUE,
        pods: [pod('gpu-1', 100, { tolerations: [toleration], nodeSelector: { gpu: 'true' } })],
      },
      [],
    ],
    [
      'a pod selecting an instance-type label the pool leaves open',
      {
        taint: ROGUE,
        pods: [
          pod('arm-1', 100, { tolerations: [toleration], nodeSelector: { 'kubernetes.io/arch': 'arm64' } }),
        ],
      },
      ['UnexpectedTaint'],
    ],
    [
      "a pod whose required node affinity excludes the pool's zones",
      {
        taint: ROGUE,
        pods: [
          pod('web-c', 100, {
            tolerations: [toleration],
            affinity: affinity([
              { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1c'] },
            ]),
          }),
        ],
      },
      [],
    ],
    [
      'a pod with one node affinity term of two the pool admits',
      {
        taint: ROGUE,
        pods: [
          pod('web-c', 100, {
            tolerations: [toleration],
            affinity: affinity(
              [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1c'] }],
              [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1b'] }],
            ),
          }),
        ],
      },
      ['UnexpectedTaint'],
    ],
    [
      'a pod that refuses this NodePool',
      {
        taint: ROGUE,
        pods: [
          pod('self-1', 100, {
            tolerations: [toleration],
            affinity: affinity([{ key: 'karpenter.sh/nodepool', operator: 'NotIn', values: ['general'] }]),
          }),
        ],
      },
      [],
    ],
  ] as const)('%s', (_, c, expected) => {
    const input = c as {
      readonly taint: Taint | undefined;
      readonly nowMs?: number;
      readonly claim?: Partial<ClusterNodeClaim>;
      readonly node?: Partial<ClusterNode>;
      readonly disrupted?: boolean;
      readonly reason?: string;
      readonly pods?: readonly Pod[];
      readonly conditions?: readonly string[];
      readonly initializedAt?: number;
    };
    const base = claim(
      'a',
      T0,
      [...(input.conditions ?? ['Launched', 'Registered', 'Initialized'])],
      {},
      input.initializedAt === undefined ? {} : { Initialized: input.initializedAt },
    );
    const conditions = [
      ...base.status.conditions,
      ...(input.reason === undefined ? [] : [emptied(input.reason)]),
    ];
    const c0 = { ...base, ...input.claim };
    const nodeClaim = { ...c0, status: { ...c0.status, conditions } };
    const taints = [
      ...(input.taint === undefined ? [] : [input.taint]),
      ...(input.disrupted ? [DISRUPTED] : []),
    ];
    const failures = findNodeClaimFailures({
      pool,
      claims: [nodeClaim],
      nodes: [node('a', taints, [], input.node)],
      pendingPods: input.pods ?? tolerant,
      nowMs: input.nowMs ?? T0 + 3 * MIN,
    });
    expect(failures.map((f) => f.kind)).toEqual(expected);
  });

  it('inside the window, the taint is a suspect: no failure yet, but the NodePool waits until the window closes', () => {
    const input = {
      pool,
      claims: [claim('a', T0, ['Registered', 'Initialized'])],
      nodes: [node('a', [ROGUE])],
      pendingPods: tolerant,
      nowMs: T0 + 30_000,
    };
    const { failures, suspects } = classifyNodeClaims(input);
    expect(failures).toEqual([]);
    expect(suspects).toEqual([expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 2 * MIN })]);
    // A pod that tolerates it, or no taint at all: nothing to wait for.
    expect(classifyNodeClaims({ ...input, nodes: [node('a', [])] }).suspects).toEqual([]);
    // Its pods left 10 s after it initialized (the taint came just after kube-scheduler bound
    // them): waited on from then.
    const evicted = classifyNodeClaims({
      ...input,
      claims: [
        claim('a', T0, ['Registered', 'Initialized'], {
          status: { ...claim('a', T0, ['Registered', 'Initialized']).status, lastPodEventMs: T0 + 10_000 },
        }),
      ],
    });
    expect(evicted.failures).toEqual([]);
    expect(evicted.suspects).toEqual([
      expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 10_000 + 2 * MIN }),
    ]);
    // Registered and not initialized yet, already under the taint: waited on from registration.
    const joining = classifyNodeClaims({ ...input, claims: [claim('a', T0, ['Launched', 'Registered'])] });
    expect(joining.failures).toEqual([]);
    expect(joining.suspects).toEqual([expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 2 * MIN })]);
    // Its Node there (found by provider id) before the lifecycle registered it: waited on from the
    // Node's creation, and never a failure while unregistered.
    const { nodeName: _name, ...launchedOnly } = claim('a', T0, ['Launched']).status;
    const unregistered = { ...claim('a', T0, ['Launched']), status: launchedOnly };
    const early = classifyNodeClaims({
      ...input,
      claims: [unregistered],
      nodes: [node('a', [ROGUE], [], { createdAtMs: T0 + 5_000 })],
    });
    expect(early).toEqual({
      failures: [],
      suspects: [expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 5_000 + 2 * MIN })],
    });
    const late = classifyNodeClaims({
      ...input,
      claims: [unregistered],
      nodes: [node('a', [ROGUE], [], { createdAtMs: T0 })],
      nowMs: T0 + 3 * MIN,
    });
    expect(late).toEqual({
      failures: [],
      suspects: [expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 2 * MIN, untilRegistered: true })],
    });
    const [waiting] = late.suspects;
    expect(waiting && suspectWait(waiting)).toMatch(
      /^launches wait until nodeClaim a to register for a taint to go: /,
    );
  });

  it('a Node disruption has tainted is never a failure, but inside the window it is still a suspect', () => {
    // Disruption taints the Node before its NodeClaim says why: a run that reads the NodeClaim
    // first and the Node second sees this, and must not launch for the pods the taint repels.
    const input = {
      pool,
      claims: [claim('a', T0, ['Registered', 'Initialized'])],
      nodes: [node('a', [ROGUE, DISRUPTED])],
      pendingPods: tolerant,
      nowMs: T0 + 30_000,
    };
    const inside = classifyNodeClaims(input);
    expect(inside.failures).toEqual([]);
    expect(inside.suspects).toEqual([expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 2 * MIN })]);
    // Past the window it goes for a reason of its own: neither.
    const past = classifyNodeClaims({ ...input, nowMs: T0 + 3 * MIN });
    expect(past).toEqual({ failures: [], suspects: [] });
  });

  it('names the taint, when the node initialized and how many pending pods it keeps away', () => {
    const [f] = findNodeClaimFailures({
      pool,
      claims: [claim('a', T0, ['Registered', 'Initialized'])],
      nodes: [node('a', [ROGUE])],
      pendingPods: [
        ...tolerant,
        pod('db-1', 100, { tolerations: [toleration], nodeSelector: { team: 'db' } }),
      ],
      nowMs: T0 + 2 * MIN,
    });
    expect(f?.detail).toContain('chaos.example.com/rogue:NoExecute');
    expect(f?.detail).toContain('initialized at 2026-01-01T00:00:00.000Z');
    expect(f?.detail).toContain('1 pending pod(s)');
  });

  it('judges no taint without pending pods, nor on a node with pods that stay', () => {
    const c = claim('a', T0, ['Launched', 'Registered', 'Initialized']);
    expect(
      findNodeClaimFailures({ pool, claims: [c], nodes: [node('a', [ROGUE])], nowMs: T0 + 3 * MIN }),
    ).toEqual([]);
    const staying = pod('db-1', 100, { tolerations: [{ key: ROGUE.key, operator: 'Exists' }] });
    expect(
      findNodeClaimFailures({
        pool,
        claims: [c],
        nodes: [node('a', [ROGUE], [staying])],
        pendingPods: tolerant,
        nowMs: T0 + 3 * MIN,
      }),
    ).toEqual([]);
    // A NoSchedule taint evicts nobody: the pods on the node stay, and the node works.
    const noSchedule: Taint = { key: ROGUE.key, effect: 'NoSchedule' };
    expect(
      findNodeClaimFailures({
        pool,
        claims: [c],
        nodes: [node('a', [noSchedule], [pod('db-1', 100)])],
        pendingPods: tolerant,
        nowMs: T0 + 3 * MIN,
      }),
    ).toEqual([]);
  });

  it('counts pods the unexpected NoExecute taint is evicting as gone, before and after initialization', () => {
    // The taint landed just after kube-scheduler bound pods: they are being evicted, and the pods
    // that come back are pending. The node is as useless as an empty one.
    const evicted = [pod('web-0', 100, { tolerations: [toleration] })];
    const initialized = claim('a', T0, ['Launched', 'Registered', 'Initialized']);
    const input = { pool, nodes: [node('a', [ROGUE], evicted)], pendingPods: tolerant };
    expect(
      classifyNodeClaims({ ...input, claims: [initialized], nowMs: T0 + 30_000 }).suspects.map(
        (x) => x.nodeClaim,
      ),
    ).toEqual(['a']);
    expect(
      findNodeClaimFailures({ ...input, claims: [initialized], nowMs: T0 + 3 * MIN }).map((f) => f.kind),
    ).toEqual(['UnexpectedTaint']);
    const joining = claim('a', T0, ['Launched', 'Registered']);
    expect(
      classifyNodeClaims({ ...input, claims: [joining], nowMs: T0 + 30_000 }).suspects.map(
        (x) => x.nodeClaim,
      ),
    ).toEqual(['a']);
    // Pods that had been on it 5 minutes when the taint came: the node worked, nothing counts.
    const worked = claim('a', T0, ['Launched', 'Registered', 'Initialized'], {
      status: { ...initialized.status, lastPodEventMs: T0 + 10_000 },
    });
    const late = classifyNodeClaims({ ...input, claims: [worked], nowMs: T0 + 10_000 + 5 * MIN });
    expect(late).toEqual({ failures: [], suspects: [] });
    // The same pods bound 10 s before, then evicted by the taint: waited on from their binding.
    const raced = classifyNodeClaims({ ...input, claims: [worked], nowMs: T0 + 20_000 });
    expect(raced.suspects).toEqual([
      expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 10_000 + 2 * MIN }),
    ]);
  });

  it('a registered node that never initializes under the taint fails once the window closes, and says so', () => {
    const joining = claim('a', T0 - MIN, ['Launched', 'Registered'], {}, { Registered: T0 });
    const input = { pool, claims: [joining], nodes: [node('a', [ROGUE])], pendingPods: tolerant };
    const inside = classifyNodeClaims({ ...input, nowMs: T0 + 2 * MIN - 1 });
    expect(inside.failures).toEqual([]);
    expect(inside.suspects).toEqual([expect.objectContaining({ nodeClaim: 'a', untilMs: T0 + 2 * MIN })]);
    const after = classifyNodeClaims({ ...input, nowMs: T0 + 2 * MIN });
    expect(after.suspects).toEqual([]);
    expect(after.failures).toEqual([
      expect.objectContaining({ kind: 'UnexpectedTaint', nodeClaim: 'a', createdAtMs: T0 - MIN }),
    ]);
    expect(after.failures[0]?.detail).toContain(
      'registered at 2026-01-01T00:00:00.000Z and has not initialized',
    );
    expect(after.failures[0]?.detail).toContain('chaos.example.com/rogue:NoExecute');
    // Past the initialization timeout it fails for that, once.
    const late = findNodeClaimFailures({ ...input, nowMs: T0 + 20 * MIN });
    expect(late.map((f) => f.kind)).toEqual(['InitializationTimeout']);
  });

  it('judges no taint for a NodePool whose requirements do not parse', () => {
    const broken = nodePool('general', {
      labels: { team: 'web' },
      requirements: [{ key: 'team', operator: 'In', values: ['db'] }],
    });
    expect(
      findNodeClaimFailures({
        pool: broken,
        claims: [claim('a', T0, ['Registered', 'Initialized'])],
        nodes: [node('a', [ROGUE])],
        pendingPods: [pod('web-1', 100)],
        nowMs: T0 + 3 * MIN,
      }),
    ).toEqual([]);
  });

  // A GPU node may build its drivers on first boot: the 15 minutes count from registration.
  it.each([
    ['registered 14 minutes ago, created 30 minutes ago', 30, 14, {}, []],
    ['registered 15 minutes ago', 16, 15, {}, ['InitializationTimeout']],
    ['registered 20 minutes ago, being deleted', 25, 20, { deleting: true }, []],
  ] as const)('a NodeClaim not initialized, %s', (_, createdAgo, registeredAgo, extra, kinds) => {
    const now = T0 + 60 * MIN;
    const c = claim('a', now - createdAgo * MIN, ['Launched', 'Registered'], extra, {
      Registered: now - registeredAgo * MIN,
    });
    const failures = findNodeClaimFailures({
      pool,
      claims: [c],
      nodes: [node('a', [{ key: 'example.com/booting', effect: 'NoSchedule' as const }])],
      nowMs: now,
    });
    expect(failures.map((f) => f.kind)).toEqual(kinds);
    if (kinds.length > 0) {
      expect(failures[0]).toMatchObject({ nodeClaim: 'a', createdAtMs: now - createdAgo * MIN });
      expect(failures[0]?.detail).toContain('within 15m');
    }
  });

  it('lists the unexpected taints of a node', () => {
    expect(
      unexpectedTaints(node('a', [ROGUE, { key: 'example.com/booting', effect: 'NoSchedule' }]), pool),
    ).toEqual([ROGUE]);
  });
});

describe('findRecoveredNodeClaim', () => {
  // Past the window in which a node that just initialized may still turn out a failure.
  const later = T0 + MIN + UNEXPECTED_TAINT_PERSISTENCE_MS;

  it('names a NodeClaim created since the last failure that initialized and hosts pods', () => {
    const pool = nodePool('general');
    const old = claim('old', T0 - MIN, ['Initialized']);
    const fresh = claim('fresh', T0 + MIN, ['Initialized']);
    const nodes = [node('old', [], [pod('a', 100)]), node('fresh', [], [pod('b', 100)])];
    expect(findRecoveredNodeClaim({ pool, claims: [old, fresh], nodes }, T0, later)).toBe('fresh');
    expect(findRecoveredNodeClaim({ pool, claims: [old], nodes }, T0, later)).toBeUndefined();
    expect(
      findRecoveredNodeClaim(
        { pool, claims: [fresh], nodes: [node('fresh', [], [pod('ds', 100, { daemonSetName: 'ds' })])] },
        T0,
        later,
      ),
    ).toBeUndefined();
    // Pods bound a moment before a rogue NoExecute taint evicts them prove nothing.
    expect(
      findRecoveredNodeClaim(
        { pool, claims: [fresh], nodes: [node('fresh', [ROGUE], [pod('b', 100)])] },
        T0,
        later,
      ),
    ).toBeUndefined();
  });

  it('names none until the node has hosted its pods past the window a rogue taint may still come in', () => {
    const pool = nodePool('general');
    const fresh = claim('fresh', T0 + MIN, ['Initialized']);
    const nodes = [node('fresh', [], [pod('b', 100)])];
    // Initialized at T0 + MIN, its pods there and no taint yet: a taint a second late would still
    // make it a failure.
    expect(findRecoveredNodeClaim({ pool, claims: [fresh], nodes }, T0, later - 1)).toBeUndefined();
    expect(mayHaveRecovered({ pool, claims: [fresh] }, T0, later - 1)).toBe(false);
    expect(findRecoveredNodeClaim({ pool, claims: [fresh], nodes }, T0, later)).toBe('fresh');
    expect(mayHaveRecovered({ pool, claims: [fresh] }, T0, later)).toBe(true);
  });
});
