import { z } from 'zod';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';

// A disruption command outlives the invocation that starts it: its record is written on its
// replacement NodeClaims when they are created (one write, so a replacement never exists without
// it) and then on its candidates. Any later pass rebuilds the commands in flight from the
// NodeClaims alone, so a crash at any step leaves a command the next pass finishes or undoes.

/**
 * What this version's command records and decisions name: a voluntary disruption method (the
 * registry in disruption/methods.ts has one method of each such name, in the controller's order) or
 * forceful expiration.
 */
export const COMMAND_METHODS = [
  'schedule',
  'emptiness',
  'static-drift',
  'drift',
  'multi-node',
  'repack',
  'single-node',
  'expiration',
] as const;
export type CommandMethodName = (typeof COMMAND_METHODS)[number];
/** A voluntary disruption method's name, e.g. `single-node`. */
export type DisruptionMethodName = Exclude<CommandMethodName, 'expiration'>;

/** The annotation that carries a command's record (JSON). */
export const COMMAND_ANNOTATION = 'flotilla.io/disruption-command';

const recordSchema = z.object({
  id: z.string().min(1),
  // Any name: the disruption controller resolves it to its method where it reads the record back,
  // and leaves a record whose method it does not know alone (a newer version's, say). Read here as
  // a record all the same, its NodeClaims are in a command for every reader.
  method: z.string().min(1),
  reason: z.enum(['Scheduled', 'Empty', 'Drifted', 'Underutilized', 'Expired']),
  candidates: z.array(z.string().min(1)).min(1),
  replacements: z.array(z.string().min(1)),
  startedAt: z.iso.datetime(),
});

export type CommandRecord = z.infer<typeof recordSchema>;

export function encodeCommand(record: CommandRecord): string {
  return JSON.stringify(record);
}

export function decodeCommand(value: string): CommandRecord | { readonly problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (error) {
    return { problem: `not JSON: ${(error as Error).message}` };
  }
  const parsed = recordSchema.safeParse(json);
  return parsed.success ? parsed.data : { problem: z.prettifyError(parsed.error) };
}

export interface CommandsInFlight {
  /** By command id; the first record read of each id wins. */
  readonly commands: ReadonlyMap<string, CommandRecord>;
  /** NodeClaims whose record does not parse, with why; they are treated as in no command. */
  readonly malformed: readonly { readonly nodeClaim: string; readonly problem: string }[];
}

/**
 * The commands recorded on the NodeClaims. A command is in flight while one of its candidates
 * exists and is not being deleted; finished ones (all candidates deleting or gone) are left out.
 */
export function commandsInFlight(claims: readonly ClusterNodeClaim[]): CommandsInFlight {
  const byName = new Map(claims.map((c) => [c.name, c]));
  const commands = new Map<string, CommandRecord>();
  const malformed: { nodeClaim: string; problem: string }[] = [];
  for (const claim of claims) {
    const value = claim.annotations[COMMAND_ANNOTATION];
    if (value === undefined) continue;
    const record = decodeCommand(value);
    if ('problem' in record) {
      malformed.push({ nodeClaim: claim.name, problem: record.problem });
      continue;
    }
    if (commands.has(record.id)) continue;
    const live = record.candidates.some((name) => {
      const candidate = byName.get(name);
      return candidate !== undefined && !candidate.deleting;
    });
    if (live) commands.set(record.id, record);
  }
  return { commands, malformed };
}

/**
 * Replacements whose command has a candidate left (in flight or still draining): until the nodes
 * they replace are gone, they wait for those nodes' pods and are no candidates themselves.
 */
export function pendingReplacements(claims: readonly ClusterNodeClaim[]): Set<string> {
  const names = new Set(claims.map((c) => c.name));
  const out = new Set<string>();
  for (const claim of claims) {
    const value = claim.annotations[COMMAND_ANNOTATION];
    if (value === undefined) continue;
    const record = decodeCommand(value);
    if ('problem' in record) continue;
    if (record.candidates.some((c) => names.has(c))) for (const r of record.replacements) out.add(r);
  }
  return out;
}

/**
 * Candidates, not being deleted, of commands one of whose replacements exists and is not being
 * deleted: capacity already stands in for them, and they go once it has initialized. A static
 * NodePool counts them out of its replicas, so that a replacement is not taken for a surplus.
 */
export function replacedCandidates(claims: readonly ClusterNodeClaim[]): Set<string> {
  const byName = new Map(claims.map((c) => [c.name, c]));
  const out = new Set<string>();
  for (const record of commandsInFlight(claims).commands.values()) {
    const standing = record.replacements.some((r) => byName.get(r)?.deleting === false);
    if (!standing) continue;
    for (const name of record.candidates) if (byName.get(name)?.deleting === false) out.add(name);
  }
  return out;
}
