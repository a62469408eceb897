import { cleanupCommand } from './cleanup/command.ts';
import { type CliIo, type Command, userProblem, wantsHelp } from './command.ts';
import { explainCommand } from './explain/command.ts';
import { planCommand } from './plan/command.ts';
import { crdsCommand, versionCommand } from './project.ts';
import { shadowCommand } from './shadow/command.ts';
import { simulateCommand } from './simulate.ts';

export type { CliIo } from './command.ts';

// The `flotilla` command: one table of commands, each with its help lines and its run function.

const COMMANDS: readonly Command[] = [
  crdsCommand,
  simulateCommand,
  planCommand,
  explainCommand,
  shadowCommand,
  cleanupCommand,
  versionCommand,
];

/** Spellings that name a command too. */
const ALIASES: Readonly<Record<string, string>> = { '--version': 'version' };

const usage = `Usage: flotilla <command>

Commands:
${COMMANDS.map((c) => c.summary).join('')}  help       print this help; \`flotilla help <command>\` or \`flotilla <command> --help\`
             prints a command's own
`;

const find = (name: string) => COMMANDS.find((c) => c.name === (ALIASES[name] ?? name));

/**
 * Runs one CLI command and returns the process exit code: 0 done, 1 bad input, 2 bad arguments.
 * A problem the user can fix (a FlotillaError, a file that cannot be read or written) is one
 * line on `io.err`, never a stack trace.
 */
export async function main(args: readonly string[], io: CliIo): Promise<number> {
  const [given = 'help', ...rest] = args;
  if (given === 'help' || given === '--help' || given === '-h') return help(rest, io);
  const command = find(given);
  if (command === undefined) {
    io.err(`flotilla: unknown command "${given}"\n\n${usage}`);
    return 2;
  }
  if (wantsHelp(rest)) {
    io.out(command.usage);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    const problem = userProblem(error);
    if (problem === undefined) throw error;
    io.err(`flotilla ${command.name}: ${problem}\n`);
    return 1;
  }
}

/** `flotilla help [command]`. */
function help(topics: readonly string[], io: CliIo): number {
  const [topic, extra] = topics;
  if (topic === undefined) {
    io.out(usage);
    return 0;
  }
  const command = find(topic);
  if (command === undefined || extra !== undefined) {
    const problem = command === undefined ? `unknown command "${topic}"` : 'one command at a time';
    io.err(`flotilla help: ${problem}\n\n${usage}`);
    return 2;
  }
  io.out(command.usage);
  return 0;
}
