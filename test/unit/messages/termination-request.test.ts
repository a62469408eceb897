import { describe, expect, it } from 'vitest';
import {
  parseTerminationMessage,
  toTerminationMessage,
} from '../../../shared/messages/termination-request.ts';
import type { TerminationRequest } from '../../../shared/ports/work-queue.ts';

describe('termination queue messages', () => {
  it.each<[string, TerminationRequest]>([
    ['a NodeClaim', { nodeClaim: 'default-0a1b2c3d4e' }],
    ['a NodeClaim relayed from the shim', { nodeClaim: 'default-0a1b2c3d4e', relayed: true }],
    ['a Node a user deleted', { node: 'ip-10-0-1-23.ec2.internal' }],
  ])('reads back %s as it was sent', (_what, request) => {
    expect(parseTerminationMessage(toTerminationMessage(request))).toEqual({ ok: true, message: request });
  });

  it.each([
    ['both a node and a NodeClaim', { version: 1, node: 'n', nodeClaim: 'c' }, 'nodeClaim'],
    ['a relayed Node', { version: 1, node: 'n', relayed: true }, 'relayed'],
    ['relayed: false', { version: 1, nodeClaim: 'c', relayed: false }, 'relayed'],
    ['an empty node name', { version: 1, node: '' }, 'node'],
    ['neither', { version: 1 }, 'nodeClaim'],
  ])('refuses %s, naming the field', (_what, body, field) => {
    const decoded = parseTerminationMessage(JSON.stringify(body));
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? '' : decoded.problem).toContain(field);
  });
});
