import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { METRIC_SPECS } from '../../../shared/runtime/metrics.ts';

// The README's metric table and the catalog are one list: neither may drift from the other.

const readme = readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');

/** The rows of the table under `### Metrics`, as cells. */
function tableRows(): string[][] {
  const start = readme.indexOf('\n### Metrics\n');
  if (start < 0) throw new Error('README.md has no "### Metrics" section');
  const next = readme.indexOf('\n#', start + 1);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

describe('the README’s metric table', () => {
  it('lists every catalog metric, in order, with its kind, unit, dimension sets and Karpenter counterpart', () => {
    const rows = tableRows();
    expect(rows.map((r) => r.slice(0, 5))).toEqual(
      METRIC_SPECS.map((s) => [
        `\`${s.name}\``,
        s.kind,
        s.unit,
        s.dimensionSets.map((set) => set.join(', ')).join('; '),
        s.karpenter === null ? "Flotilla's own" : `\`${s.karpenter}\``,
      ]),
    );
    for (const row of rows) expect(row[5], row[0]).toMatch(/\S/);
  });
});
