import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The floors of shared/usecases, as its README's table declares them: a folder imports only
// folders on a lower floor. Read from the sources as they are, so an import that runs sideways or
// back up between controller folders fails here (file-level import cycles are biome's
// `noImportCycles`, see lint-fences.test.ts).

const projectRoot = path.resolve(import.meta.dirname, '..', '..');
const useCases = path.join(projectRoot, 'shared', 'usecases');

/** Folder → floor, from the README's table (`| 6 | \`provisioning\`, \`disruption\` | … |`). */
function readFloors(readme: string): Map<string, number> {
  const floors = new Map<string, number>();
  for (const line of readme.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|([^|]+)\|/.exec(line);
    if (row === null) continue;
    for (const folder of row[2]?.matchAll(/`([^`]+)`/g) ?? []) floors.set(folder[1] ?? '', Number(row[1]));
  }
  return floors;
}

/** Every `.ts` file under shared/usecases, by its path inside it, with its text. */
function readSources(): Map<string, string> {
  const sources = new Map<string, string>();
  for (const entry of fs.readdirSync(useCases, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    sources.set(path.relative(useCases, file).split(path.sep).join('/'), fs.readFileSync(file, 'utf8'));
  }
  return sources;
}

const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/**
 * What breaks the floors: each import from one folder into another that is not on a lower floor,
 * and each file that stands in no folder of the table. Pure.
 */
function floorViolations(
  sources: ReadonlyMap<string, string>,
  floors: ReadonlyMap<string, number>,
): string[] {
  const out: string[] = [];
  const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : undefined);
  for (const [file, text] of sources) {
    const from = folderOf(file);
    const fromFloor = from === undefined ? undefined : floors.get(from);
    if (fromFloor === undefined) {
      out.push(`${file}: stands in no folder of the README's floors`);
      continue;
    }
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? '';
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      if (target.startsWith('../')) continue; // outside shared/usecases: the lint fences' business
      const to = folderOf(target);
      if (to === undefined || to === from) continue;
      const toFloor = floors.get(to);
      if (toFloor === undefined || toFloor >= fromFloor) {
        out.push(
          `${file} (${from}, floor ${fromFloor}) imports ${target} (${to}, floor ${toFloor ?? 'none'})`,
        );
      }
    }
  }
  return out.sort();
}

const floors = readFloors(fs.readFileSync(path.join(useCases, 'README.md'), 'utf8'));
const sources = readSources();

describe('use-case floors', () => {
  it('names a floor for every folder of shared/usecases', () => {
    const folders = fs
      .readdirSync(useCases, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect([...floors.keys()].sort()).toEqual(folders);
  });

  it('has no import between folders that is not to a lower floor', () => {
    expect(floorViolations(sources, floors)).toEqual([]);
  });

  it.each([
    [
      'back up',
      'state/probe.ts',
      "import { provision } from '../provisioning/provision.ts';\n",
      'state/probe.ts (state, floor 0) imports provisioning/provision.ts (provisioning, floor 6)',
    ],
    [
      'sideways',
      'disruption/probe.ts',
      "export { provision } from '../provisioning/provision.ts';\n",
      'disruption/probe.ts (disruption, floor 6) imports provisioning/provision.ts (provisioning, floor 6)',
    ],
    [
      'back up, by a dynamic import',
      'termination/probe.ts',
      "const lazy = () => import('../lifecycle/lifecycle.ts');\n",
      'termination/probe.ts (termination, floor 2) imports lifecycle/lifecycle.ts (lifecycle, floor 5)',
    ],
    [
      'into a folder the table does not name',
      'provisioning/probe.ts',
      "import type { X } from '../elsewhere/x.ts';\n",
      'provisioning/probe.ts (provisioning, floor 6) imports elsewhere/x.ts (elsewhere, floor none)',
    ],
    [
      'from a file beside the folders',
      'loose.ts',
      "import { z } from './state/batch.ts';\n",
      "loose.ts: stands in no folder of the README's floors",
    ],
  ])('refuses an import that runs %s', (_, file, text, expected) => {
    const probed = new Map([...sources, [file, text]]);
    expect(floorViolations(probed, floors)).toEqual([expected]);
  });

  it('allows an import to a lower floor and within a folder', () => {
    const probed = new Map([
      ...sources,
      ['explain/probe.ts', "import { a } from '../state/batch.ts';\nimport { b } from './pod.ts';\n"],
    ]);
    expect(floorViolations(probed, floors)).toEqual([]);
  });
});
