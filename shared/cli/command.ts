import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { FlotillaError } from '../core/index.ts';

// What every `flotilla` command shares: where it writes, its entry in the command table, and one
// way of parsing arguments (Node's util.parseArgs, strict), with problems worded for a terminal.

/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** One row of the command table. */
export interface Command {
  readonly name: string;
  /** The command's lines in `flotilla help`, each indented by two spaces. */
  readonly summary: string;
  /** The command's own help: `flotilla help <command>` and `flotilla <command> --help`. */
  readonly usage: string;
  /** Returns the process exit code: 0 done, 1 a failure while running, 2 bad input or arguments. */
  readonly run: (args: readonly string[], io: CliIo) => Promise<number>;
}

export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | boolean | readonly (string | boolean)[] | undefined>>;
  readonly positionals: readonly string[];
}

/**
 * Parses a command's arguments strictly (`--name value` or `--name=value`; unknown options and
 * missing values refused). Returns the problem as text instead of throwing.
 */
export function parseCommandArgs(
  args: readonly string[],
  options: ParseArgsOptionsConfig,
  maxPositionals: number,
): ParsedArgs | { readonly problem: string } {
  try {
    const parsed = parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
    if (parsed.positionals.length > maxPositionals) {
      const extra = parsed.positionals.slice(maxPositionals);
      return {
        problem:
          maxPositionals === 0
            ? `unexpected argument "${extra[0]}"`
            : `too many arguments: ${parsed.positionals.join(' ')}`,
      };
    }
    return { values: parsed.values, positionals: parsed.positionals };
  } catch (error) {
    return { problem: describeParseError(error, options) };
  }
}

function describeParseError(error: unknown, options: ParseArgsOptionsConfig): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(--?[^' ]+)/.exec(message)?.[1] ?? '';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = option.replace(/^--?/, '');
      return options[name]?.type === 'string' ? `${option} needs a value` : `${option} takes no value`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return message;
    default:
      throw error;
  }
}

/** Whether the arguments ask for help (`--help` or `-h` before any `--`). */
export function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

const FILE_ERRORS = new Set(['EACCES', 'EEXIST', 'EISDIR', 'ENOENT', 'ENOSPC', 'ENOTDIR', 'EPERM', 'EROFS']);

/**
 * What to tell the user about an error a command let through, when it is theirs to fix: a
 * FlotillaError's message, or a file the system refused (missing, not readable, not writable, a
 * directory, a full disk). Undefined for anything else, which is a fault in Flotilla.
 */
export function userProblem(error: unknown): string | undefined {
  if (error instanceof FlotillaError) return error.message;
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof Error && typeof code === 'string' && FILE_ERRORS.has(code)) return error.message;
  return undefined;
}

/** A string option's value, or undefined; empty strings count as missing. */
export function stringValue(parsed: ParsedArgs, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A Go-style duration in minutes or hours (30m, 6h, 1h30m) as milliseconds. */
export function parseSince(value: string): number | undefined {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?$/.exec(value);
  if (m === null || value === '') return undefined;
  return (Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60_000;
}
