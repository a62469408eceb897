import { z } from 'zod';
import type { TerminationRequest } from '../ports/work-queue.ts';
import type { Decoded } from './decoded.ts';

// The termination queue's message: one NodeClaim whose termination is to move on, or a Node a
// user deleted. The interruption, disruption and provisioner Lambdas send it (the provisioner also
// relays the deletions the shim reports), the termination Lambda hands the rest of a drain on with
// it (delayed), and the termination Lambda parses it.

const name = z.string().min(1).max(253);
const claimMessage = z
  .object({ version: z.literal(1), nodeClaim: name, relayed: z.literal(true).optional() })
  .strict();
const nodeMessage = z.object({ version: z.literal(1), node: name }).strict();

/** The message body of a termination request (version 1). */
export function toTerminationMessage(request: TerminationRequest): string {
  if ('node' in request) return JSON.stringify({ version: 1, node: request.node });
  return JSON.stringify({
    version: 1,
    nodeClaim: request.nodeClaim,
    ...(request.relayed === true ? { relayed: true } : {}),
  });
}

/** Parses a termination queue message body; a body of another shape is a typed failure, not a throw. */
export function parseTerminationMessage(body: string): Decoded<TerminationRequest> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `termination message is not JSON: ${(error as Error).message}` };
  }
  // A body naming a node is a Node's request; any other is read as a NodeClaim's, and its problems
  // are told against that shape.
  const isNode = typeof json === 'object' && json !== null && 'node' in json;
  const parsed = isNode ? nodeMessage.safeParse(json) : claimMessage.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      problem: `termination message: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  }
  const data: z.infer<typeof claimMessage> | z.infer<typeof nodeMessage> = parsed.data;
  if ('node' in data) return { ok: true, message: { node: data.node } };
  return {
    ok: true,
    message: { nodeClaim: data.nodeClaim, ...(data.relayed === true ? { relayed: true as const } : {}) },
  };
}
