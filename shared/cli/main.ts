import type { CliIo, Command } from './command.ts';
import { planCommand } from './plan/command.ts';
import { crdsCommand, versionCommand } from './project.ts';
import { simulateCommand } from './simulate.ts';

export type { CliIo } from './command.ts';

// The `flotilla` command: one table of commands, each with its help lines and its run function.

const COMMANDS: readonly Command[] = [crdsCommand, simulateCommand, planCommand, versionCommand];

/** Spellings that name a command too. */
const ALIASES: Readonly<Record<string, string>> = { '--version': 'version' };

const usage = `Usage: flotilla <command>

Commands:
${COMMANDS.map((c) => c.summary).join('')}  help       print this help
`;

/** Runs one CLI command and returns the process exit code. */
export async function main(args: readonly string[], io: CliIo): Promise<number> {
  const [given = 'help', ...rest] = args;
  if (given === 'help' || given === '--help' || given === '-h') {
    io.out(usage);
    return 0;
  }
  const name = ALIASES[given] ?? given;
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    io.err(`flotilla: unknown command "${given}"\n\n${usage}`);
    return 2;
  }
  return command.run(rest, io);
}
