import { z } from 'zod';
import type { TerminationRequest } from '../ports/work-queue.ts';
import type { Decoded } from './decoded.ts';

// The termination queue's message: one NodeClaim whose termination is to move on. The
// interruption and provisioner Lambdas send it, the termination Lambda hands the rest of a drain
// on with it (delayed), and the termination Lambda parses it.

const message = z.object({ version: z.literal(1), nodeClaim: z.string().min(1).max(253) }).strict();

/** The message body of a termination request (version 1). */
export function toTerminationMessage(request: TerminationRequest): string {
  return JSON.stringify({ version: 1, nodeClaim: request.nodeClaim });
}

/** Parses a termination queue message body; a body of another shape is a typed failure, not a throw. */
export function parseTerminationMessage(body: string): Decoded<TerminationRequest> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `termination message is not JSON: ${(error as Error).message}` };
  }
  const parsed = message.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      problem: `termination message: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  }
  return { ok: true, message: { nodeClaim: parsed.data.nodeClaim } };
}
