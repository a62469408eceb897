import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetricPoint } from '../../../shared/runtime/metrics.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..', '..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-dashboard-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const script = (...args: string[]) =>
  run(path.join(root, 'node_modules/.bin/tsx'), ['scripts/render-dashboard.ts', ...args], { cwd: root }).then(
    ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );

describe('scripts/render-dashboard.ts', () => {
  it("draws a simulator record's metric points over the scenario's span", async () => {
    const startMs = Date.parse('2026-11-27T00:00:00Z');
    const metrics: MetricPoint[] = [
      {
        name: 'karpenter_scheduler_queue_depth',
        values: [7],
        timeMs: startMs + 60_000,
        dimensions: { cluster: 'sim', controller: 'provisioner' },
      },
    ];
    const record = path.join(dir, 'record.json');
    fs.writeFileSync(
      record,
      JSON.stringify({ scenario: { name: 'x', startMs, durationMs: 3_600_000 }, metrics }),
    );
    const out = path.join(dir, 'dashboard.svg');
    const result = await script(record, out);
    expect(result).toMatchObject({ code: 0, stdout: `${out}: 1 metric points drawn\n` });
    const svg = fs.readFileSync(out, 'utf8');
    expect(svg).toContain('pending (queue depth) 00:02 UTC: 7');
    expect(svg).toContain('2026-11-27 00:00 – 2026-11-27 01:00 UTC');
  });

  it('refuses a record without metric points, saying what is missing', async () => {
    const record = path.join(dir, 'old-record.json');
    fs.writeFileSync(record, JSON.stringify({ scenario: { startMs: 0, durationMs: 1 } }));
    const result = await script(record, path.join(dir, 'never.svg'));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/is not a simulator record with metric points: metrics: /);
    expect(fs.existsSync(path.join(dir, 'never.svg'))).toBe(false);
  });
});
