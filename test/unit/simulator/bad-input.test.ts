import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseScenario, ScenarioError } from '../../../shared/simulator/scenario.ts';
import { BAD_INPUT_DIR, badInputFiles, expectedProblems } from '../../fixtures/bad-input.ts';

// The bad-input corpus through the scenario reader: every declared problem, each at its line and
// column, in file order, and no other.

const files = badInputFiles();

function reported(text: string, file: string): string[] {
  try {
    parseScenario(text, file);
  } catch (error) {
    if (!(error instanceof ScenarioError)) throw error;
    return error.problems.map(
      (p) => `${p.line}:${p.column}: ${p.field === '' ? '' : `${p.field}: `}${p.message}`,
    );
  }
  return [];
}

describe('the bad-input corpus', () => {
  it('has at least 50 files, each declaring at least one problem', () => {
    expect(files.length).toBeGreaterThanOrEqual(50);
    for (const file of files) {
      expect(expectedProblems(readFileSync(path.join(BAD_INPUT_DIR, file), 'utf8')), file).not.toEqual([]);
    }
  });

  it.each(files)('%s: every declared problem, at its line and column, and no other', (file) => {
    const text = readFileSync(path.join(BAD_INPUT_DIR, file), 'utf8');
    expect(reported(text, file)).toEqual(expectedProblems(text));
  });
});
