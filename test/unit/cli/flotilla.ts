import { spawn } from 'node:child_process';
import path from 'node:path';

// Runs the `flotilla` command as a user does: the package's bin in a fresh Node process.

export const FLOTILLA_BIN = path.resolve(import.meta.dirname, '../../../bin/flotilla.js');

export interface FlotillaRun {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/**
 * `flotilla <args>` in `cwd` (default the current directory). With `closeStdout`, the reader of
 * its standard output has gone before it writes anything, as `flotilla … | head -0` would.
 * `nodeArgs` go to Node before the script.
 */
export function flotilla(
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
