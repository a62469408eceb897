import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HarnessError } from './errors.ts';
import { ensureKubeBinaries } from './kube/binaries.ts';
import { cacheDir } from './paths.ts';
import { progress, runLogged, secondsSince } from './proc.ts';

const requirements = path.join(import.meta.dirname, 'requirements.txt');

/** The git-ignored virtualenv moto, boto3 and botocore are installed into. */
export const motoVenv = path.join(cacheDir, 'venv');
const motoServer = path.join(motoVenv, 'bin', 'moto_server');
const stamp = path.join(motoVenv, '.requirements.sha256');

/**
 * The slow one-time part of the harness's servers, done by the global setup before any test file
 * runs, so that no test or hook waits on it: moto's virtualenv (seconds to a minute) and the
 * Kubernetes control plane's binaries (minutes when Go's caches are cold). Each is skipped when
 * already done; the servers themselves start, in seconds, when a test first needs them.
 * @throws HarnessError, in one line naming the log, when either fails (moto's first when both do).
 */
export async function prepareServers(logDir: string): Promise<void> {
  const began = Date.now();
  // Side by side: pip mostly downloads and unpacks, while Go compiles on every core.
  const [moto, kube] = await Promise.allSettled([ensureMoto(logDir), ensureKubeBinaries(logDir)]);
  if (moto.status === 'rejected') throw moto.reason;
  if (kube.status === 'rejected') throw kube.reason;
  const installed = moto.value;
  const { binaries, buildSeconds } = kube.value;
  if (!installed && buildSeconds === 0) {
    progress(
      `moto (${motoVenv}) and Kubernetes ${binaries.kubernetesVersion} (${binaries.dir}) are installed; ` +
        'servers start when a test first needs them',
    );
  } else {
    progress(`servers prepared in ${secondsSince(began)}s`);
  }
}

/** Whether the pinned requirements are installed in the virtualenv. */
export function motoInstalled(): boolean {
  return (
    fs.existsSync(motoServer) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === requirementsHash()
  );
}

function requirementsHash(): string {
  return createHash('sha256').update(fs.readFileSync(requirements)).digest('hex');
}

/** Installs the pinned requirements into the virtualenv unless the same set is already there. */
async function ensureMoto(logDir: string): Promise<boolean> {
  if (motoInstalled()) return false;
  const python = process.env['PYTHON'] ?? 'python3';
  const logFile = path.join(logDir, 'pip.log');
  const began = Date.now();
  progress(
    `installing moto into ${motoVenv} with ${python} -m venv and pip (first run only; log: ${logFile})…`,
  );
  try {
    await runLogged(
      python,
      ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "moto needs Python 3.10 or newer")'],
      { logFile },
    );
    fs.rmSync(motoVenv, { recursive: true, force: true });
    await runLogged(python, ['-m', 'venv', motoVenv], { logFile });
    await runLogged(
      path.join(motoVenv, 'bin', 'pip'),
      // No byte-compiling of every module installed (sympy and botocore are most of them): Python
      // compiles the few moto's server imports when it first starts, half the install's time.
      ['install', '--disable-pip-version-check', '--no-compile', '-r', requirements],
      { logFile },
    );
  } catch (error) {
    // What ran and how it ended, without the log's tail.
    const what = (error instanceof Error ? error.message : String(error))
      .split('\n')[0]
      ?.replace(/; end of .*/, '');
    throw new HarnessError(
      `installing moto (Python 3.10+ with venv and pip) failed after ${secondsSince(began)}s: ${what}; see ${logFile}`,
      { cause: error },
    );
  }
  fs.writeFileSync(stamp, requirementsHash());
  progress(`moto installed in ${secondsSince(began)}s`);
  return true;
}
