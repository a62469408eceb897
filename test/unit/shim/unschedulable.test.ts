import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isUnschedulable, UnschedulableTracker } from '../../../infra/shim/unschedulable.ts';

const unschedulable = { type: 'PodScheduled', status: 'False', reason: 'Unschedulable' };

function pod(
  overrides: { spec?: V1Pod['spec']; status?: V1Pod['status']; metadata?: V1Pod['metadata'] } = {},
): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: 'uid-1', ...overrides.metadata },
    spec: { containers: [{ name: 'c' }], ...overrides.spec },
    status: { phase: 'Pending', conditions: [unschedulable], ...overrides.status },
  };
}

describe('isUnschedulable', () => {
  it.each([
    ['marked Unschedulable by kube-scheduler', pod(), true],
    ['not yet looked at by kube-scheduler', pod({ status: { phase: 'Pending', conditions: [] } }), false],
    [
      'PodScheduled False for another reason',
      pod({ status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] } }),
      false,
    ],
    ['bound to a node', pod({ spec: { containers: [], nodeName: 'n1' } }), false],
    [
      'nominated for preemption',
      pod({ status: { conditions: [unschedulable], nominatedNodeName: 'n1' } }),
      false,
    ],
    [
      'owned by a DaemonSet',
      pod({
        metadata: {
          uid: 'u',
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'd' }],
        },
      }),
      false,
    ],
    [
      'a mirror pod',
      pod({ metadata: { uid: 'u', annotations: { 'kubernetes.io/config.mirror': 'x' } } }),
      false,
    ],
    ['being deleted', pod({ metadata: { uid: 'u', deletionTimestamp: new Date() } }), false],
  ])('%s → %s', (_what, subject, expected) => {
    expect(isUnschedulable(subject)).toBe(expected);
  });
});

describe('UnschedulableTracker', () => {
  it('reports a pod once per transition to unschedulable', () => {
    const tracker = new UnschedulableTracker();
    expect(tracker.observe(pod())).toBe(true);
    expect(tracker.observe(pod())).toBe(false);
    expect(tracker.observe(pod({ spec: { containers: [], nodeName: 'n1' } }))).toBe(false);
    expect(tracker.observe(pod())).toBe(true);
  });

  it('forgets deleted pods so it does not grow without bound', () => {
    const tracker = new UnschedulableTracker();
    tracker.observe(pod());
    tracker.observe(pod({ metadata: { uid: 'uid-2' } }));
    expect(tracker.size).toBe(2);
    tracker.forget(pod());
    expect(tracker.size).toBe(1);
    expect(tracker.observe(pod())).toBe(true);
  });

  it('forgets, after a fresh list, the pods deleted while the watch was down', () => {
    const tracker = new UnschedulableTracker();
    tracker.observe(pod());
    tracker.observe(pod({ metadata: { uid: 'uid-2' } }));
    tracker.retain(new Set(['uid-2', 'uid-3']));
    expect(tracker.size).toBe(1);
    // The one still there is still known: no second event for it.
    expect(tracker.observe(pod({ metadata: { uid: 'uid-2' } }))).toBe(false);
  });
});
