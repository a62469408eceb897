import { describe, expect, it } from 'vitest';
import { decodeQueueMessage } from '../../../lambdas/provisioner/run.ts';
import { nodeDeletionVersion, standaloneNodeClaimVersion } from '../../../shared/messages/node-deletion.ts';
import { parseQueueMessage } from '../../../shared/messages/pod-event.ts';

// The shim's node deletion events on the pod-event queue: decoded by their version, checked whole.

const SENT = {
  version: nodeDeletionVersion,
  kind: 'NodeDeleting',
  cluster: 'prod-eu',
  object: 'NodeClaim',
  name: 'default-0a1b2c3d4e',
  uid: 'uid-claim',
  observedAt: '2026-11-21T10:00:00Z',
} as const;

const deletion = (overrides: Record<string, unknown> = {}) => JSON.stringify({ ...SENT, ...overrides });

describe('node deletion messages', () => {
  it('decode into their own kind, for Nodes and NodeClaims', () => {
    expect(parseQueueMessage(deletion())).toEqual({
      ok: true,
      message: { kind: 'nodeDeletion', deletion: SENT },
    });
    expect(decodeQueueMessage(deletion({ object: 'Node', name: 'ip-10-0-0-1' }), 'prod-eu')).toMatchObject({
      ok: true,
      message: { kind: 'nodeDeletion', deletion: { object: 'Node', name: 'ip-10-0-0-1' } },
    });
  });

  it.each([
    ['an object of another kind', { object: 'Pod' }, 'object'],
    ['no name', { name: '' }, 'name'],
    ['a time that is not one', { observedAt: 'soon' }, 'observedAt'],
    ['a field the version does not have', { extra: 1 }, 'extra'],
  ])('reject %s, naming the field', (_what, overrides, field) => {
    expect(parseQueueMessage(deletion(overrides))).toEqual({
      ok: false,
      problem: expect.stringContaining(field),
    });
  });

  it('are rejected by the provisioner of another cluster', () => {
    expect(decodeQueueMessage(deletion({ cluster: 'other' }), 'prod-eu')).toEqual({
      ok: false,
      problem: 'message is for cluster "other", this provisioner serves "prod-eu"',
    });
  });
});

describe('standalone NodeClaim messages', () => {
  const sent = {
    version: standaloneNodeClaimVersion,
    kind: 'StandaloneNodeClaim',
    cluster: 'prod-eu',
    name: 'by-hand',
    uid: 'uid-by-hand',
    observedAt: '2026-12-05T10:00:00Z',
  } as const;

  it('decode into their own kind, for the provisioner of their cluster only', () => {
    expect(decodeQueueMessage(JSON.stringify(sent), 'prod-eu')).toEqual({
      ok: true,
      message: { kind: 'standaloneNodeClaim', nodeClaim: sent },
    });
    expect(decodeQueueMessage(JSON.stringify({ ...sent, cluster: 'other' }), 'prod-eu')).toMatchObject({
      ok: false,
    });
  });

  it('reject a field the version does not have, naming it', () => {
    expect(parseQueueMessage(JSON.stringify({ ...sent, nodePool: 'default' }))).toEqual({
      ok: false,
      problem: expect.stringContaining('nodePool'),
    });
  });
});
