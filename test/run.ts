import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HarnessError } from './harness/errors.ts';
import { cacheDir } from './harness/paths.ts';
import { prepareServers } from './harness/prepare.ts';
import { progress } from './harness/proc.ts';

// `npm test`: the type check and the lint side by side with the harness's one-time preparation
// (moto's virtualenv, the control plane's Go build: minutes on a fresh machine, see
// harness/prepare.ts), then every vitest project. The type checker keeps one core busy; the Go
// build takes what is left. vitest's global setup then finds the servers prepared. Nothing of
// vitest runs when a check fails; the exit code is the first failure's. Arguments after
// `npm test --` go to vitest (`npm test -- test/e2e`).

/** Runs an npm script, its output passed through; resolves to its exit code. */
function npmRun(script: string): Promise<number> {
  return run('npm', ['run', '--silent', script]);
}

function run(command: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.on('error', reject);
    // A child ended by a signal has no code: a failure.
    child.on('close', (code) => resolve(code ?? 1));
  });
}

async function checks(): Promise<number> {
  const typecheck = await npmRun('typecheck');
  if (typecheck !== 0) return typecheck;
  return npmRun('lint');
}

/** Prepares the harness's servers, logging to .cache/harness/prepare; false when that failed. */
async function prepare(): Promise<boolean> {
  const logDir = path.join(cacheDir, 'harness', 'prepare');
  fs.mkdirSync(logDir, { recursive: true });
  try {
    await prepareServers(logDir);
    return true;
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    progress(error.message);
    return false;
  }
}

const [checked, prepared] = await Promise.all([checks(), prepare()]);
if (checked !== 0) process.exit(checked);
if (!prepared) process.exit(1);
const vitest = path.join('node_modules', 'vitest', 'vitest.mjs');
process.exit(await run(process.execPath, [vitest, 'run', ...process.argv.slice(2)]));
