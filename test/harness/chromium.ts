import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { HarnessError } from './errors.ts';
import { cacheDir } from './paths.ts';
import { progress, runLogged, secondsSince } from './proc.ts';

const run = promisify(execFile);

/** Where Debian's `chromium` package puts the browser. */
const DEBIAN_CHROMIUM = '/usr/bin/chromium';

let installing: Promise<string> | undefined;

/**
 * The path of a headless-capable Chromium: `$CHROMIUM` when set, else `/usr/bin/chromium`,
 * installed on first use from Debian's `chromium` package with apt-get (needs root).
 * @throws HarnessError when it is missing and cannot be installed.
 */
export function chromium(): Promise<string> {
  installing ??= findOrInstall();
  return installing;
}

async function findOrInstall(): Promise<string> {
  const configured = process.env['CHROMIUM'];
  if (configured !== undefined && configured !== '') {
    if (!isExecutable(configured))
      throw new HarnessError(`$CHROMIUM is ${configured}, which is not executable`);
    return configured;
  }
  if (isExecutable(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM;
  if (process.getuid?.() !== 0) {
    throw new HarnessError(
      `Chromium is not installed (${DEBIAN_CHROMIUM}) and the tests do not run as root to install it: ` +
        'run `sudo apt-get install -y --no-install-recommends chromium`, or set $CHROMIUM to a Chromium binary',
    );
  }
  const logFile = path.join(cacheDir, 'harness', 'chromium-install.log');
  const began = Date.now();
  progress(
    `installing Chromium with apt-get install -y --no-install-recommends chromium (first run only; log: ${logFile})`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await runLogged('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { logFile, env });
  } catch (first) {
    // A stale or missing package index is the usual cause: refresh it once and retry.
    progress(`apt-get install failed; running apt-get update and trying again (log: ${logFile})`);
    try {
      await runLogged('apt-get', ['update'], { logFile, env });
      await runLogged('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { logFile, env });
    } catch (second) {
      throw new HarnessError(
        `could not install Debian's chromium package with apt-get (the report test renders in a real browser): ${
          second instanceof Error ? second.message : String(second)
        }`,
        { cause: first },
      );
    }
  }
  if (!isExecutable(DEBIAN_CHROMIUM)) {
    throw new HarnessError(`apt-get installed chromium but ${DEBIAN_CHROMIUM} is missing; see ${logFile}`);
  }
  progress(`Chromium installed in ${secondsSince(began)}s`);
  return DEBIAN_CHROMIUM;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface ScreenshotOptions {
  readonly width: number;
  readonly height: number;
  /** @default 60_000 */
  readonly timeoutMs?: number;
}

/**
 * Opens `file` in headless Chromium and writes a PNG screenshot of the viewport to `png`.
 * @throws HarnessError when Chromium fails or writes no screenshot.
 */
export async function screenshot(file: string, png: string, options: ScreenshotOptions): Promise<void> {
  const browser = await chromium();
  fs.rmSync(png, { force: true });
  // A private profile per run: a shared one is locked by any other Chromium running.
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-chromium-'));
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
    `--screenshot=${png}`,
    `--window-size=${options.width},${options.height}`,
    `file://${path.resolve(file)}`,
  ];
  try {
    await run(browser, args, { timeout: options.timeoutMs ?? 60_000 });
  } catch (error) {
    const detail = error as { message?: string; stderr?: string };
    throw new HarnessError(
      `${browser} ${args.join(' ')} failed: ${detail.message ?? String(error)}\n${(detail.stderr ?? '').slice(-2000)}`,
      { cause: error },
    );
  } finally {
    fs.rmSync(profile, { recursive: true, force: true });
  }
  if (!fs.existsSync(png)) throw new HarnessError(`${browser} exited without writing ${png}`);
}
