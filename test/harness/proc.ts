import { type SpawnOptions, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HarnessError } from './errors.ts';

/** A free TCP port on loopback, found by binding port 0 and releasing it. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new HarnessError('could not read the port of a loopback probe socket'));
      });
    });
  });
}

/** Elapsed seconds since `startMs`, with one decimal. */
export function secondsSince(startMs: number): number {
  return Math.round((Date.now() - startMs) / 100) / 10;
}

/** Progress line on stderr, so long set-up steps are visible in the test output. */
export function progress(message: string): void {
  process.stderr.write(`[harness] ${message}\n`);
}

export interface WaitOptions {
  readonly timeoutMs: number;
  readonly intervalMs?: number;
}

/**
 * Polls `check` until it returns a value other than undefined. Errors thrown by `check` count as
 * "not yet"; the last one is reported if the wait times out.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new HarnessError(`timed out after ${options.timeoutMs} ms waiting for ${what}${why}`, {
        cause: lastError,
      });
    }
    await sleep(options.intervalMs ?? 100);
  }
}

/** The last `lines` lines of a log file, for error messages. */
export function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return `(no log at ${file})`;
  }
}

export interface Daemon {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
}

/**
 * Starts a long-running server in its own process group, detached from the test worker that
 * starts it (workers come and go between test files). Its pid goes to `<runDir>/pids/<name>.pid`
 * so the global teardown, or the next run after a crash, can stop it.
 */
export function startDaemon(
  runDir: string,
  name: string,
  command: string,
  args: readonly string[],
  options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {},
): Daemon {
  const logDir = path.join(runDir, 'logs');
  const pidDir = path.join(runDir, 'pids');
  fs.mkdirSync(logDir, { recursive: true });
  fs.mkdirSync(pidDir, { recursive: true });
  const logFile = path.join(logDir, `${name}.log`);
  const out = fs.openSync(logFile, 'a');
  const spawnOptions: SpawnOptions = {
    detached: true,
    stdio: ['ignore', out, out],
    env: options.env ?? process.env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  };
  const child = spawn(command, [...args], spawnOptions);
  fs.closeSync(out);
  if (child.pid === undefined) throw new HarnessError(`could not start ${name} (${command})`);
  fs.writeFileSync(path.join(pidDir, `${name}.pid`), String(child.pid));
  child.unref();
  return { name, pid: child.pid, logFile };
}

/** Whether a process with this pid is alive. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops every daemon recorded under `runDir` and its worker folders (`worker-<slot>`, see
 * services.ts) at once: SIGTERM, then SIGKILL after `graceMs`.
 */
export async function stopDaemons(runDir: string, graceMs = 5_000): Promise<void> {
  if (!fs.existsSync(runDir)) return;
  const pidDirs = [
    runDir,
    ...fs
      .readdirSync(runDir)
      .filter((f) => /^worker-\d+$/.test(f))
      .map((f) => path.join(runDir, f)),
  ]
    .map((dir) => path.join(dir, 'pids'))
    .filter((dir) => fs.existsSync(dir));
  const pids = pidDirs
    .flatMap((pidDir) => fs.readdirSync(pidDir).map((file) => path.join(pidDir, file)))
    .map((file) => Number(fs.readFileSync(file, 'utf8')))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig); // the whole process group
    } catch {
      // Already gone: nothing to stop.
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < deadline) await sleep(50);
  for (const pid of pids.filter(isAlive)) signal(pid, 'SIGKILL');
  for (const pidDir of pidDirs) fs.rmSync(pidDir, { recursive: true, force: true });
}

/**
 * Runs a command to completion with its output appended to `logFile`. Rejects with the end of
 * the log when it exits non-zero.
 */
export async function runLogged(
  command: string,
  args: readonly string[],
  options: { readonly logFile: string; readonly cwd?: string; readonly env?: NodeJS.ProcessEnv },
): Promise<void> {
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const out = fs.openSync(options.logFile, 'a');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(command, [...args], {
        stdio: ['ignore', out, out],
        env: options.env ?? process.env,
        ...(options.cwd ? { cwd: options.cwd } : {}),
      });
      child.once('error', (error) =>
        reject(new HarnessError(`could not run ${command}: ${error.message}`, { cause: error })),
      );
      child.once('exit', (code, signal) => {
        if (code === 0) resolve();
        else
          reject(
            new HarnessError(
              `${command} ${args.join(' ')} exited with ${code ?? signal}; end of ${options.logFile}:\n${tail(options.logFile)}`,
            ),
          );
      });
    });
  } finally {
    fs.closeSync(out);
  }
}
