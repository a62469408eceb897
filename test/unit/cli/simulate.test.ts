import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { flotilla } from './flotilla.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'flotilla-simulate-'));
const examples = path.resolve(import.meta.dirname, '../../../examples');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `flotilla <args>` through the command's entry, in this process. */
const run = (...args: string[]) => flotilla(args);

describe('flotilla simulate', () => {
  it('runs a scenario: progress on stderr, the summary on stdout, the decision log as JSON lines', async () => {
    const out = path.join(dir, 'run');
    const result = await run('simulate', path.join(examples, 'spot-storm.yaml'), '--out', out);
    expect(result.code).toBe(0);
    expect(result.err).toMatch(/^Simulating spot-storm \(35m00s of virtual time\)/);
    expect(result.err).toMatch(/ 35m00s \/ 35m00s {2}nodes +\d+ +pending +0 +running +24/);
    expect(result.out).toMatch(/^Flotilla simulation "spot-storm"/);
    expect(result.out).toMatch(/Interruptions: 6 \(6 handled, 0 not handled\)/);
    const lines = readFileSync(path.join(out, 'decisions.jsonl'), 'utf8').trimEnd().split('\n');
    const decisions = lines.map((l) => JSON.parse(l) as { atMs: number; message: string });
    expect(decisions.filter((d) => d.message === 'spot interruption warning')).toHaveLength(6);
    expect(decisions.filter((d) => d.message === 'interruption handled')).toHaveLength(6);
    expect(decisions.every((d) => Number.isInteger(d.atMs))).toBe(true);
    const record = JSON.parse(readFileSync(path.join(out, 'record.json'), 'utf8')) as {
      decisions: unknown[];
    };
    expect(record.decisions).toHaveLength(lines.length);
    expect(result.out).toContain(path.join(out, 'decisions.jsonl'));
  });

  it('runs the embedded default scenario when given none', async () => {
    const result = await run('simulate', '--out', path.join(dir, 'default'));
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/^Flotilla simulation "steady-web"/);
    expect(readFileSync(path.join(dir, 'default', 'report.html'), 'utf8')).toContain('chart-nodes');
    expect(readFileSync(path.join(dir, 'default', 'decisions.jsonl'), 'utf8')).toMatch(/"launch decided"/);
  });

  it('says where a scenario is wrong and exits 2', async () => {
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(
      file,
      readFileSync(path.join(examples, 'steady-web.yaml'), 'utf8').replace(
        'replicas: 6\n',
        'replicas: six\n',
      ),
    );
    const result = await run('simulate', file, '--out', path.join(dir, 'bad'));
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/bad\.yaml:\d+:5: workloads\[0\]\.replicas: /);
    expect(result.out).toBe('');
  });

  it('refuses --feature-gates naming a gate Flotilla does not have, before running anything', async () => {
    const result = await run('simulate', '--feature-gates', 'NodeOverlay=true,Overlay=true');
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/--feature-gates: unknown feature gate "Overlay"/);
    expect(result.err).not.toMatch(/Simulating/);
  });

  it('refuses unknown options and a second scenario with exit code 2', async () => {
    expect((await run('simulate', '--fast')).code).toBe(2);
    const two = await run('simulate', 'a.yaml', 'b.yaml');
    expect(two.code).toBe(2);
    expect(two.err).toMatch(/one scenario at a time/);
    expect((await run('help')).out).toMatch(/simulate/);
  });
});
