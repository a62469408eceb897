import { type CommandPass, commandIdentity } from './carry-out.ts';
import { confirmCommand } from './confirm-command.ts';
import { decisionForCommand } from './describe.ts';
import { replacementNames } from './effects.ts';
import type { DisruptionCommand } from './method.ts';

// A shadow pass's command: decided as a live pass decides it, confirmed on the API server's
// objects as a live pass confirms it (the pass may have read an untrusted cluster summary), and
// then only recorded, with the outcome a live pass would have logged on starting it. Nothing is
// marked, created or deleted, so the next pass would find the same command first: a shadow pass
// proposes one command and stops (the report counts a proposal once, however often it is made).
// The validation wait of graceful methods is not waited: the proposal is what a live pass would
// have started with, before that wait.

/** Records the command a live pass would start; false, so the shadow pass starts no other. */
export async function propose(pass: CommandPass, proposed: DisruptionCommand): Promise<boolean> {
  const { id } = commandIdentity(pass, proposed);
  const confirmed = await confirmCommand({
    confirmation: pass.confirmation(),
    command: proposed,
    pools: pass.pools,
    nowMs: pass.now(),
  });
  if (confirmed.kind === 'abandoned') {
    pass.record(decisionForCommand(proposed, pass.input(), id, [], 'abandoned', confirmed.why));
    return false;
  }
  const command = confirmed.command;
  const replacements = replacementNames(id, command.replacements);
  pass.record(
    decisionForCommand(
      command,
      pass.input(),
      id,
      replacements,
      command.replacements.length === 0 ? 'deleted' : 'started',
    ),
  );
  return false;
}
