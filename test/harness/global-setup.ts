import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { HarnessError } from './errors.ts';
import { cacheDir, runsDir } from './paths.ts';
import { prepareServers } from './prepare.ts';
import { isAlive, progress, stopDaemons } from './proc.ts';
import { startSlotBroker } from './slots.ts';

/**
 * Where the run folder of this vitest process, and the socket of its worker-slot broker, are kept
 * for the projects set up after the first.
 */
const thisRun = Symbol.for('flotilla.harness.runDir');

/**
 * Makes the run folder that the shared servers (moto, the Kubernetes control plane) record
 * themselves in, prepares the servers (installs moto, builds the control plane: minutes on a
 * cold machine, see prepare.ts) and stops them all when the run ends. This runs in the vitest
 * process before any test file, so no test or hook timeout applies to the preparation; the
 * servers start later, in seconds, when a test first asks for them (services.ts). vitest calls it
 * only when the run has files of a project that lists it: a run of the unit tests alone neither
 * builds nor starts anything.
 * Folders of earlier runs whose vitest process is gone are cleared first, stopping anything a
 * crashed run left behind; runs still going (another vitest in the same checkout) are left alone.
 * The projects of one vitest run that list this setup share its run folder, and so its servers:
 * the first to set up makes the folder, prepares the servers and stops them when the run ends.
 * It also hands out the worker slots (slots.ts) that keep two files running at once apart.
 * @throws HarnessError, in one line naming the log, when the preparation fails: no test runs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const vitestProcess = globalThis as { [thisRun]?: { dir: string; slots: string } };
  const shared = vitestProcess[thisRun];
  if (shared !== undefined) {
    project.provide('harnessRunDir', shared.dir);
    project.provide('harnessSlots', shared.slots);
    return async () => undefined;
  }
  fs.mkdirSync(runsDir, { recursive: true });
  for (const old of fs.readdirSync(runsDir)) {
    const dir = path.join(runsDir, old);
    const owner = Number(readOr(path.join(dir, 'owner.pid'), '0'));
    if (owner > 0 && isAlive(owner)) continue;
    await stopDaemons(dir, 1_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const dir = fs.mkdtempSync(path.join(runsDir, `${new Date().toISOString().replaceAll(':', '')}-`));
  fs.writeFileSync(path.join(dir, 'owner.pid'), String(process.pid));
  try {
    await prepareServers(path.join(dir, 'logs'));
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    // vitest reports a failed global setup after its own "no test files found": say it first.
    progress(`${error.message}; no test runs`);
    // Its message says what failed and names the log; a stack or a cause would only bury it.
    const brief = new HarnessError(error.message);
    brief.stack = `${brief.name}: ${brief.message}`;
    throw brief;
  }
  const broker = await startSlotBroker();
  vitestProcess[thisRun] = { dir, slots: broker.socketPath };
  project.provide('harnessRunDir', dir);
  project.provide('harnessSlots', broker.socketPath);
  return async () => {
    await broker.close();
    // Logs stay in the run folder until the next run, for post-mortems.
    await stopDaemons(dir);
    writeIamUsage(dir);
  };
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

/** The AWS actions each role was granted during the run (iam-check.ts), by role, sorted. */
function writeIamUsage(dir: string): void {
  const lines = readOr(path.join(dir, 'iam-used.txt'), '')
    .split('\n')
    .filter((l) => l !== '');
  if (lines.length === 0) return;
  const byRole: Record<string, string[]> = {};
  for (const line of new Set(lines)) {
    const [role = '', action = ''] = line.split(' ');
    byRole[role] = [...(byRole[role] ?? []), action];
  }
  for (const actions of Object.values(byRole)) actions.sort();
  const out = path.join(cacheDir, 'test-results', 'iam-used.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(byRole, null, 2)}\n`);
}
