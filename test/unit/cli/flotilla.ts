import { spawn } from 'node:child_process';
import path from 'node:path';
import { main } from '../../../shared/cli/main.ts';

// Runs the `flotilla` command: `flotilla` through the CLI's entry function in this process (what
// the bin calls, with the same arguments and exit code), `flotillaProcess` as a user does, the
// package's bin in a fresh Node process. Only what the bin itself adds (the Node version check, a
// closed pipe, no stack trace for a user's mistake) needs a process of its own: each one loads
// the whole product again, seconds of CPU.

export const FLOTILLA_BIN = path.resolve(import.meta.dirname, '../../../bin/flotilla.js');

export interface FlotillaRun {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/**
 * `flotilla <args>` as the bin runs it, in this process: the exit code `main` returns and what it
 * writes to standard output and error. A failure that is not the user's is thrown, where the bin
 * would print its stack and exit 1.
 */
export async function flotilla(args: readonly string[]): Promise<FlotillaRun> {
  let out = '';
  let err = '';
  const code = await main(args, {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
  });
  return { code, out, err };
}

/**
 * `flotilla <args>` in a fresh Node process, in `cwd` (default the current directory). With
 * `closeStdout`, the reader of its standard output has gone before it writes anything, as
 * `flotilla … | head -0` would. `nodeArgs` go to Node before the script.
 */
export function flotillaProcess(
  args: readonly string[],
  options: {
    readonly cwd?: string;
    readonly closeStdout?: boolean;
    readonly nodeArgs?: readonly string[];
  } = {},
): Promise<FlotillaRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), FLOTILLA_BIN, ...args], {
      cwd: options.cwd ?? process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    if (options.closeStdout === true) child.stdout.destroy();
    else child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}
