import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { cacheDir, runsDir } from './paths.ts';
import { isAlive, stopDaemons } from './proc.ts';

/**
 * Makes the run folder that the shared servers (moto, the Kubernetes control plane) record
 * themselves in, and stops them all when the run ends. Servers start lazily: see services.ts.
 * Folders of earlier runs whose vitest process is gone are cleared first, stopping anything a
 * crashed run left behind; runs still going (another vitest in the same checkout) are left alone.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
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
  project.provide('harnessRunDir', dir);
  return async () => {
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
