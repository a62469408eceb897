import { describe, expect, it } from 'vitest';
import { DeletionTracker } from '../../../infra/shim/deletions.ts';

// The shim forwards a Node or NodeClaim deletion once, when its deletionTimestamp first appears.

const object = (uid: string, deleting: boolean, name = `obj-${uid}`) => ({
  metadata: { name, uid, ...(deleting ? { deletionTimestamp: '2026-11-27T00:00:00Z' } : {}) },
});

describe('DeletionTracker', () => {
  it('reports a deletion once, on the first event that carries its deletionTimestamp', () => {
    const t = new DeletionTracker();
    expect(t.observe('nodeClaims', 'ADDED', object('a', false))).toBeUndefined();
    expect(t.observe('nodeClaims', 'MODIFIED', object('a', true, 'default-abc'))).toEqual({
      object: 'NodeClaim',
      name: 'default-abc',
      uid: 'a',
    });
    // Finalizers and status updates while it drains: nothing more.
    expect(t.observe('nodeClaims', 'MODIFIED', object('a', true, 'default-abc'))).toBeUndefined();
    expect(t.size).toBe(1);
    expect(t.observe('nodeClaims', 'DELETED', object('a', true, 'default-abc'))).toBeUndefined();
    expect(t.size).toBe(0);
  });

  it('reports Nodes as Nodes, and an object already deleting when listed', () => {
    const t = new DeletionTracker();
    expect(t.observe('nodes', 'ADDED', object('n', true, 'ip-10-0-0-1'))).toEqual({
      object: 'Node',
      name: 'ip-10-0-0-1',
      uid: 'n',
    });
    // The same uid among NodeClaims is another object.
    expect(t.observe('nodeClaims', 'ADDED', object('n', true))).toMatchObject({ object: 'NodeClaim' });
  });

  it('forgets what a fresh list no longer has, so a new object of the same uid is reported again', () => {
    const t = new DeletionTracker();
    t.observe('nodes', 'MODIFIED', object('gone', true));
    t.observe('nodes', 'MODIFIED', object('kept', true));
    t.retain('nodes', new Set(['kept']));
    expect(t.size).toBe(1);
    expect(t.observe('nodes', 'ADDED', object('kept', true))).toBeUndefined();
    expect(t.observe('nodes', 'ADDED', object('gone', true))).toMatchObject({ uid: 'gone' });
  });

  it.each([
    ['no uid', { metadata: { name: 'x', deletionTimestamp: '2026-11-27T00:00:00Z' } }],
    ['no name', { metadata: { uid: 'u', deletionTimestamp: '2026-11-27T00:00:00Z' } }],
    ['no metadata', {}],
  ])('ignores an object with %s', (_what, raw) => {
    expect(new DeletionTracker().observe('nodes', 'MODIFIED', raw)).toBeUndefined();
  });
});
