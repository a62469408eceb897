import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compareShadow } from '../../../shared/usecases/shadow/compare.ts';
import { LINES } from '../../fixtures/shadow-lines.ts';
import { flotilla } from './flotilla.ts';

// `flotilla shadow report --file`: the comparison of a file of log lines, as text and as JSON.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-shadow-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The fixture's lines as a log file: some with the prefix a CloudWatch export puts first, and noise. */
function logFile(lines: readonly object[]): string {
  const file = path.join(dir, `lines-${Math.random().toString(36).slice(2)}.log`);
  const text = lines
    .map((l, i) =>
      i % 2 === 0 ? JSON.stringify(l) : `2026-12-03T10:00:00.000Z\tabc-123\t${JSON.stringify(l)}`,
    )
    .join('\n');
  fs.writeFileSync(file, `START RequestId: abc-123 Version: $LATEST\n${text}\nEND RequestId: abc-123\n`);
  return file;
}

describe('flotilla shadow report', () => {
  it('prints the two sides, what Flotilla would have saved, and the differences largest first', async () => {
    const run = await flotilla(['shadow', 'report', '--file', logFile(LINES)]);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    // $2.85 live; Flotilla saves 0.4 + 0.1875 + 1/6 + 7/60 − 0.1 = $0.77 (compare.test.ts).
    expect(run.out).toContain('cost over the window  $2.85');
    expect(run.out).toContain('Flotilla would have saved $0.77 over the window ($9.25 a day at this rate).');
    const differences = run.out.split('\n').filter((l) => /^\s+[+-]\$\d/.test(l));
    expect(differences.map((l) => l.trim().split(/\s+/).slice(0, 2))).toEqual([
      ['+$0.40', 'disruption'],
      ['+$0.19', 'disruption'],
      ['+$0.17', 'cheaper'],
      ['+$0.12', 'launch'],
      ['-$0.10', 'extra'],
    ]);
    expect(run.out).toContain(
      'Flotilla would have replaced k2 (Underutilized, $0.6/h → $0.2/h); the live autoscaler did not',
    );
    expect(run.out).toContain('k9 at 2026-12-03 10:40Z');
  });

  it('gives the comparison as JSON, the same as the use case computes', async () => {
    const run = await flotilla(['shadow', 'report', '--file', logFile(LINES), '--output', 'json']);
    expect(run.code).toBe(0);
    const { unreadableLines, ...comparison } = JSON.parse(run.out) as Record<string, unknown>;
    expect(comparison).toEqual(JSON.parse(JSON.stringify(compareShadow(LINES))));
    // START and END are no JSON.
    expect(unreadableLines).toBe(2);
  });

  it('lists at most --top differences', async () => {
    const run = await flotilla(['shadow', 'report', '--file', logFile(LINES), '--top', '2']);
    expect(run.out).toContain('Top differences (2 of 5');
    expect(run.out.split('\n').filter((l) => /^\s+[+-]\$\d/.test(l))).toHaveLength(2);
  });

  it('refuses lines with no shadow observation, and bad arguments, with exit code 2', async () => {
    const live = LINES.filter((l) => l.decision !== 'observe');
    const none = await flotilla(['shadow', 'report', '--file', logFile(live)]);
    expect(none.code).toBe(2);
    expect(none.err).toContain('no shadow observation');
    for (const args of [
      ['shadow'],
      ['shadow', 'report'],
      ['shadow', 'report', '--file', 'x', '--cluster-name', 'prod'],
      ['shadow', 'report', '--file', 'x', '--since', 'a day'],
      ['shadow', 'report', '--file', 'x', '--output', 'yaml'],
    ]) {
      const run = await flotilla(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
    }
  });

  it('says a file it cannot read is missing, with exit code 1', async () => {
    const run = await flotilla(['shadow', 'report', '--file', path.join(dir, 'absent.log')]);
    expect(run.code).toBe(1);
    expect(run.err).toContain('absent.log');
  });
});
