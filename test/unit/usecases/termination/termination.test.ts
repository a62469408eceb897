import { describe, expect, it } from 'vitest';
import { parseGoDurationMs } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, Condition, DrainPod } from '../../../../shared/ports/cluster.ts';
import {
  decideTermination,
  drainTier,
  isDrainable,
  type TerminationInput,
  type TerminationStep,
  terminationDeadlineMs,
} from '../../../../shared/usecases/termination/termination.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';

const T0 = Date.parse('2026-11-21T10:00:00Z');
const S = 1000;
const NODE = 'ip-10-0-1-1.ec2.internal';

/** NodeClaim `claim-a` deleted at T0 with its finalizer, on Node NODE; `conditions` its status's. */
function claim(options: Partial<ClusterNodeClaim> & { conditions?: Condition[] } = {}): ClusterNodeClaim {
  const { conditions = [], ...fields } = options;
  return readNodeClaim('claim-a', {
    uid: 'uid-a',
    finalizers: ['karpenter.sh/termination'],
    deleting: true,
    deletedAtMs: T0,
    terminationGracePeriod: '60s',
    ...fields,
    status: { providerId: 'aws:///us-east-1a/i-0abc123', nodeName: NODE, conditions },
  });
}

/** Node NODE of NodeClaim `claim-a`, deleted with its finalizer. */
function node(options: Partial<ClusterNode> = {}): ClusterNode {
  return clusterNode(NODE, {
    uid: 'node-uid',
    taints: [],
    finalizers: ['karpenter.sh/termination'],
    deleting: true,
    providerId: 'aws:///us-east-1a/i-0abc123',
    ...options,
  });
}

const TAINTED = {
  taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' as const }],
  labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'karpenter' },
};

let uid = 0;
function pod(name: string, options: Partial<DrainPod> = {}): DrainPod {
  uid += 1;
  return {
    uid: `pod-${uid}`,
    namespace: 'default',
    name,
    labels: {},
    annotations: {},
    daemonSet: false,
    mirror: false,
    phase: 'Running',
    tolerations: [],
    terminationGracePeriodSeconds: 30,
    volumeNames: [],
    ...options,
  };
}

/** Overrides of the default input; `undefined` leaves a field out (no Node, no instance). */
type Overrides = { [K in keyof TerminationInput]?: TerminationInput[K] | undefined };

function decide(overrides: Overrides) {
  const merged: Overrides = {
    claim: claim(),
    node: node(TAINTED),
    pods: [],
    volumeAttachments: [],
    instanceState: 'running',
    nowMs: T0 + 5 * S,
    ...overrides,
  };
  const input = Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined));
  return decideTermination(input as unknown as TerminationInput);
}

const kinds = (steps: readonly TerminationStep[]) => steps.map((s) => s.kind);
const evicted = (steps: readonly TerminationStep[]) =>
  steps.flatMap((s) => (s.kind === 'evict' ? s.pods.map((p) => p.name) : []));
const forced = (steps: readonly TerminationStep[]) =>
  steps.flatMap((s) =>
    s.kind === 'forceDelete' ? s.pods.map((f) => [f.pod.name, f.gracePeriodSeconds]) : [],
  );

describe('drain classification', () => {
  it.each([
    [{}, 'nonCritical'],
    [{ daemonSet: true }, 'nonCriticalDaemonSet'],
    [{ priorityClassName: 'system-cluster-critical' }, 'critical'],
    [{ priorityClassName: 'system-node-critical', daemonSet: true }, 'criticalDaemonSet'],
    [{ priorityClassName: 'high' }, 'nonCritical'],
  ])('%o is tier %s', (options, tier) => {
    expect(drainTier(pod('p', options))).toBe(tier);
  });

  it.each([
    ['running', {}, true],
    ['mirror', { mirror: true }, false],
    ['succeeded', { phase: 'Succeeded' as const }, false],
    ['failed', { phase: 'Failed' as const }, false],
    ['terminating 30 s', { deletedAtMs: T0 - 30 * S }, true],
    ['stuck terminating 61 s', { deletedAtMs: T0 - 61 * S }, false],
    [
      'tolerating the disrupted taint',
      { tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists' as const }] },
      false,
    ],
    ['tolerating everything', { tolerations: [{ operator: 'Exists' as const }] }, false],
    ['tolerating another taint', { tolerations: [{ key: 'other', operator: 'Exists' as const }] }, true],
  ])('%s → drainable %s', (_what, options, expected) => {
    expect(isDrainable(pod('p', options), T0)).toBe(expected);
  });
});

describe('terminationGracePeriod', () => {
  it.each([
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['0', 0],
    ['2x', undefined],
    ['', undefined],
  ])('%s = %s ms', (text, ms) => {
    expect(parseGoDurationMs(text)).toBe(ms);
  });

  it('the deadline is deletion + TGP, or the annotation when set', () => {
    expect(terminationDeadlineMs(claim())).toBe(T0 + 60 * S);
    expect(
      terminationDeadlineMs(
        claim({ annotations: { 'karpenter.sh/nodeclaim-termination-timestamp': '2026-11-21T10:00:10Z' } }),
      ),
    ).toBe(T0 + 10 * S);
    expect(
      terminationDeadlineMs({ ...claim(), deletedAtMs: undefined } as unknown as ClusterNodeClaim),
    ).toBeUndefined();
  });
});

describe('decideTermination', () => {
  it('leaves NodeClaims that are not deleting, or already finalized, alone', () => {
    expect(decide({ claim: claim({ deleting: false }) })).toMatchObject({
      steps: [],
      outcome: { kind: 'skip' },
    });
    expect(decide({ claim: claim({ finalizers: [] }) })).toMatchObject({
      steps: [],
      outcome: { kind: 'skip' },
    });
  });

  it('first pass: records the deadline, deletes and taints the Node, evicts the first tier', () => {
    const web = pod('web');
    const ds = pod('ds', { daemonSet: true });
    const d = decide({ node: node({ deleting: false }), pods: [web, ds] });
    expect(kinds(d.steps)).toEqual(['annotateDeadline', 'deleteNode', 'taintNode', 'evict', 'condition']);
    expect(d.steps[0]).toEqual({ kind: 'annotateDeadline', timestamp: '2026-11-21T10:01:00Z' });
    expect(evicted(d.steps)).toEqual(['web']);
    expect(d.outcome).toMatchObject({ kind: 'wait', on: 'drain', afterSeconds: 1 });
    expect(d.remainingByTier).toMatchObject({ nonCritical: 1, nonCriticalDaemonSet: 1 });
  });

  it('drains the tiers in order: a tier starts when the one before is empty (terminating pods included)', () => {
    const critical = pod('dns', { priorityClassName: 'system-cluster-critical' });
    const ds = pod('ds', { daemonSet: true });
    const criticalDs = pod('cni', { priorityClassName: 'system-node-critical', daemonSet: true });
    const leaving = pod('web', { deletedAtMs: T0 + 2 * S });
    expect(evicted(decide({ pods: [leaving, critical, ds, criticalDs] }).steps)).toEqual([]);
    expect(evicted(decide({ pods: [critical, ds, criticalDs] }).steps)).toEqual(['ds']);
    expect(evicted(decide({ pods: [critical, criticalDs] }).steps)).toEqual(['dns']);
    expect(evicted(decide({ pods: [criticalDs] }).steps)).toEqual(['cni']);
  });

  it('skips what Karpenter skips: mirror, finished, stuck and disrupted-tolerating pods', () => {
    const d = decide({
      pods: [
        pod('mirror', { mirror: true }),
        pod('done', { phase: 'Succeeded' }),
        pod('stuck', { deletedAtMs: T0 - 2 * 60 * S }),
        pod('tolerant', { tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists' }] }),
      ],
    });
    expect(evicted(d.steps)).toEqual([]);
    expect(kinds(d.steps)).toContain('terminateInstance');
  });

  it('waits on do-not-disrupt pods without evicting them, also when the node was interrupted', () => {
    const keep = pod('keep', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
    const voluntary = decide({ pods: [keep] });
    expect(evicted(voluntary.steps)).toEqual([]);
    expect(voluntary.outcome).toMatchObject({ kind: 'wait', on: 'drain' });
    const interrupted = decide({
      claim: claim({
        conditions: [
          {
            type: 'DisruptionReason',
            status: 'True',
            reason: 'SpotInterruption',
            message: '',
            lastTransitionTime: '',
          },
        ],
      }),
      pods: [keep],
    });
    expect(evicted(interrupted.steps)).toEqual([]);
    expect(interrupted.outcome).toMatchObject({ kind: 'wait', on: 'drain' });
  });

  it('force-deletes a pod at deadline − its grace period, with the grace clamped to the time left', () => {
    const slow = pod('slow', { terminationGracePeriodSeconds: 30 });
    const fast = pod('fast', { terminationGracePeriodSeconds: 5 });
    // Deadline T0+60 s. At T0+20 s: 40 s left, neither pod's grace reaches it.
    expect(forced(decide({ pods: [slow, fast], nowMs: T0 + 20 * S }).steps)).toEqual([]);
    // At T0+35 s: 25 s left ≤ 30 s, slow is deleted with 25 s; fast is still evicted.
    const d = decide({ pods: [slow, fast], nowMs: T0 + 35 * S });
    expect(forced(d.steps)).toEqual([['slow', 25]]);
    expect(evicted(d.steps)).toEqual(['fast']);
    // Past the deadline: everything left goes at once with the minimum grace, across tiers.
    const ds = pod('ds', { daemonSet: true });
    expect(forced(decide({ pods: [slow, ds], nowMs: T0 + 61 * S }).steps)).toEqual([
      ['slow', 1],
      ['ds', 1],
    ]);
  });

  it('past the deadline, pods already being deleted no longer hold the drain up', () => {
    const d = decide({ pods: [pod('leaving', { deletedAtMs: T0 + 59 * S })], nowMs: T0 + 61 * S });
    expect(kinds(d.steps)).toEqual([
      'annotateDeadline',
      'condition',
      'condition',
      'terminateInstance',
      'condition',
    ]);
    expect(d.outcome).toMatchObject({ kind: 'wait', on: 'instance' });
  });

  it('waits for volume attachments, except those of pods it does not drain, and not past the deadline', () => {
    const attachments = [
      { name: 'va-1', nodeName: NODE, persistentVolumeName: 'pv-data' },
      { name: 'va-2', nodeName: NODE, persistentVolumeName: 'pv-logs' },
    ];
    const logAgent = pod('agent', { tolerations: [{ operator: 'Exists' }], volumeNames: ['pv-logs'] });
    const waiting = decide({ pods: [logAgent], volumeAttachments: attachments });
    expect(waiting.outcome).toMatchObject({
      kind: 'wait',
      on: 'volumes',
      detail: expect.stringMatching(/1 VolumeAttachments/),
    });
    expect(decide({ pods: [logAgent], volumeAttachments: attachments.slice(1) }).outcome).toMatchObject({
      on: 'instance',
    });
    const late = decide({ volumeAttachments: attachments, nowMs: T0 + 61 * S });
    expect(late.outcome).toMatchObject({ kind: 'wait', on: 'instance' });
    expect(late.steps).toContainEqual({
      kind: 'condition',
      update: expect.objectContaining({
        type: 'VolumesDetached',
        status: 'False',
        reason: 'TerminationGracePeriodElapsed',
      }),
    });
  });

  it('terminates the instance, waits until it is gone, then removes both finalizers', () => {
    const terminating = decide({ instanceState: 'running' });
    expect(kinds(terminating.steps)).toEqual([
      'annotateDeadline',
      'condition',
      'condition',
      'terminateInstance',
      'condition',
    ]);
    expect(decide({ instanceState: 'shutting-down' }).steps.map((s) => s.kind)).not.toContain(
      'terminateInstance',
    );
    const done = decide({ instanceState: 'terminated' });
    expect(kinds(done.steps)).toEqual([
      'annotateDeadline',
      'condition',
      'condition',
      'removeNodeFinalizer',
      'removeClaimFinalizer',
    ]);
    expect(done.outcome).toEqual({ kind: 'done' });
  });

  it('a repeated pass over the same state repeats nothing but idempotent steps', () => {
    const drainedClaim = claim({
      annotations: { 'karpenter.sh/nodeclaim-termination-timestamp': '2026-11-21T10:01:00Z' },
      conditions: [
        { type: 'Drained', status: 'True', reason: 'Drained', message: '', lastTransitionTime: '' },
        {
          type: 'VolumesDetached',
          status: 'True',
          reason: 'VolumesDetached',
          message: '',
          lastTransitionTime: '',
        },
        {
          type: 'InstanceTerminating',
          status: 'True',
          reason: 'InstanceTerminating',
          message: '',
          lastTransitionTime: '',
        },
      ],
    });
    expect(kinds(decide({ claim: drainedClaim, instanceState: 'shutting-down' }).steps)).toEqual([]);
  });

  it('without a registered Node, terminates the instance and releases the NodeClaim', () => {
    const unregistered = claim();
    expect(kinds(decide({ claim: unregistered, node: undefined, instanceState: 'pending' }).steps)).toEqual([
      'annotateDeadline',
      'terminateInstance',
      'condition',
    ]);
    expect(decide({ claim: unregistered, node: undefined, instanceState: undefined }).outcome).toEqual({
      kind: 'done',
    });
  });

  it('a NotReady Node whose instance is gone is deleted and released without a drain', () => {
    const d = decide({
      node: node({ ready: false, deleting: false }),
      pods: [pod('web')],
      instanceState: undefined,
    });
    expect(kinds(d.steps)).toEqual([
      'annotateDeadline',
      'deleteNode',
      'removeNodeFinalizer',
      'removeClaimFinalizer',
    ]);
    const again = decide({
      node: node({ ready: false, deleting: true }),
      pods: [pod('web')],
      instanceState: undefined,
    });
    expect(kinds(again.steps)).not.toContain('deleteNode');
  });
});

describe('an instance the NodeClaim does not name', () => {
  const unlaunched = (): ClusterNodeClaim => ({ ...claim(), status: { conditions: [] } });

  it('is found by its tag and terminated before the finalizer goes', () => {
    const d = decide({
      claim: unlaunched(),
      node: undefined,
      instanceState: 'running',
      taggedInstanceId: 'i-0tagged',
    });
    expect(d.steps).toContainEqual({ kind: 'terminateInstance', instanceId: 'i-0tagged' });
    expect(d.outcome).toMatchObject({ kind: 'wait', on: 'instance' });
  });

  it('while a recorded launch may not be listed yet, the finalizer stays; after the window it goes', () => {
    const until = T0 + 90 * S;
    const waiting = decide({
      claim: unlaunched(),
      node: undefined,
      instanceState: undefined,
      instanceLookupUntilMs: until,
      nowMs: until - S,
    });
    expect(kinds(waiting.steps)).not.toContain('removeClaimFinalizer');
    expect(waiting.outcome).toMatchObject({ kind: 'wait', on: 'instance', afterSeconds: 5 });
    const after = decide({
      claim: unlaunched(),
      node: undefined,
      instanceState: undefined,
      instanceLookupUntilMs: until,
      nowMs: until,
    });
    expect(kinds(after.steps)).toContain('removeClaimFinalizer');
    expect(after.outcome).toEqual({ kind: 'done' });
  });

  it('without a recorded launch there is nothing to wait for', () => {
    const d = decide({ claim: unlaunched(), node: undefined, instanceState: undefined });
    expect(kinds(d.steps)).toContain('removeClaimFinalizer');
  });
});
