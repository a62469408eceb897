import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { HarnessError } from './errors.ts';
import { isAlive } from './proc.ts';
import { claimSlot } from './slots.ts';

type ServiceState<T> =
  | { readonly status: 'ready'; readonly info: T }
  | { readonly status: 'failed'; readonly error: string };

const started = new Map<string, Promise<unknown>>();

/** The folder of the current test run, made by the global setup. */
export function runDir(): string {
  const dir = inject('harnessRunDir');
  if (!dir)
    throw new HarnessError(
      'no harness run folder: run the tests through vitest (test/harness/global-setup.ts)',
    );
  return dir;
}

/**
 * Starts a server shared by the test files of this run the first time a test asks for it, and
 * only then: a test that needs moto never waits for Kubernetes. Test files run in separate
 * worker processes, so the first one takes a lock file in the run folder, starts the server
 * detached, and publishes its connection details as JSON; the others wait for that file.
 * A `perWorker` server (moto, the control plane) is shared only by the files that run one after
 * another in the same worker slot (slots.ts): two harness files that run at the same time never
 * see each other's instances, Nodes or pods. Its files and daemons live in
 * `<run folder>/worker-<slot>`.
 */
export function sharedService<T>(
  name: string,
  start: (dir: string) => Promise<T>,
  timeoutMs: number,
  options: { readonly perWorker?: boolean } = {},
): Promise<T> {
  const existing = started.get(name);
  if (existing) return existing as Promise<T>;
  const promise = (options.perWorker === true ? workerDir() : Promise.resolve(runDir())).then((dir) =>
    acquire(name, start, timeoutMs, dir),
  );
  started.set(name, promise);
  return promise;
}

/** This process's worker slot's folder in the run folder (made on first use). */
async function workerDir(): Promise<string> {
  const slots = inject('harnessSlots');
  if (!slots)
    throw new HarnessError(
      'no harness slot broker: run the tests through vitest (test/harness/global-setup.ts)',
    );
  const dir = path.join(runDir(), `worker-${await claimSlot(slots)}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

async function acquire<T>(
  name: string,
  start: (dir: string) => Promise<T>,
  timeoutMs: number,
  dir: string,
): Promise<T> {
  const lockFile = path.join(dir, `${name}.lock`);
  const stateFile = path.join(dir, `${name}.json`);
  let owner = false;
  try {
    fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
    owner = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (owner) {
    try {
      const info = await start(dir);
      writeState<T>(stateFile, { status: 'ready', info });
      return info;
    } catch (error) {
      writeState<T>(stateFile, {
        status: 'failed',
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (fs.existsSync(stateFile)) {
      const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as ServiceState<T>;
      if (state.status === 'ready') return state.info;
      throw new HarnessError(`${name} failed to start earlier in this run: ${state.error}`);
    }
    const ownerPid = Number(fs.readFileSync(lockFile, 'utf8'));
    if (!isAlive(ownerPid)) throw new HarnessError(`the test worker starting ${name} (pid ${ownerPid}) died`);
    if (Date.now() > deadline) throw new HarnessError(`timed out waiting for ${name} to start`);
    await sleep(100);
  }
}

function writeState<T>(file: string, state: ServiceState<T>): void {
  const temp = `${file}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(state));
  fs.renameSync(temp, file);
}

declare module 'vitest' {
  export interface ProvidedContext {
    harnessRunDir: string;
    /** The socket of the vitest process's worker-slot broker (slots.ts). */
    harnessSlots: string;
  }
}
