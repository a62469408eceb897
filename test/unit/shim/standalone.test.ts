import { describe, expect, it } from 'vitest';
import { StandaloneTracker } from '../../../infra/shim/standalone.ts';

// The shim forwards a standalone NodeClaim (no karpenter.sh/nodepool label) once, when it is first
// seen without an instance, so the provisioner launches it at once.

const claim = (
  uid: string,
  extra: { labels?: Record<string, string>; providerID?: string; deleting?: boolean; kind?: string } = {},
) => ({
  metadata: {
    name: `claim-${uid}`,
    uid,
    ...(extra.labels === undefined ? {} : { labels: extra.labels }),
    ...(extra.deleting === true ? { deletionTimestamp: '2026-12-05T00:00:00Z' } : {}),
  },
  spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: extra.kind ?? 'EC2NodeClass', name: 'default' } },
  ...(extra.providerID === undefined ? {} : { status: { providerID: extra.providerID } }),
});

describe('StandaloneTracker', () => {
  it('reports a standalone NodeClaim once, while it has no instance', () => {
    const t = new StandaloneTracker();
    expect(t.observe('ADDED', claim('a', { labels: { team: 'batch' } }))).toEqual({
      name: 'claim-a',
      uid: 'a',
    });
    expect(t.observe('MODIFIED', claim('a', { labels: { team: 'batch' } }))).toBeUndefined();
    expect(t.observe('MODIFIED', claim('a', { providerID: 'aws:///us-east-1a/i-1' }))).toBeUndefined();
    expect(t.size).toBe(1);
    expect(t.observe('DELETED', claim('a'))).toBeUndefined();
    expect(t.size).toBe(0);
  });

  it("leaves a NodePool's NodeClaim, a launched one, one being deleted and another provider's alone", () => {
    const t = new StandaloneTracker();
    expect(
      t.observe('ADDED', claim('p', { labels: { 'karpenter.sh/nodepool': 'default' } })),
    ).toBeUndefined();
    expect(t.observe('ADDED', claim('l', { providerID: 'aws:///us-east-1a/i-2' }))).toBeUndefined();
    expect(t.observe('ADDED', claim('d', { deleting: true }))).toBeUndefined();
    expect(t.observe('ADDED', claim('other', { kind: 'AKSNodeClass' }))).toBeUndefined();
    expect(t.observe('ADDED', { metadata: { name: 'no-uid' } })).toBeUndefined();
    expect(t.size).toBe(0);
  });

  it('forgets what a fresh list no longer has', () => {
    const t = new StandaloneTracker();
    t.observe('ADDED', claim('gone'));
    t.observe('ADDED', claim('kept'));
    t.retain(new Set(['kept']));
    expect(t.size).toBe(1);
    expect(t.observe('ADDED', claim('gone'))).toEqual({ name: 'claim-gone', uid: 'gone' });
  });
});
