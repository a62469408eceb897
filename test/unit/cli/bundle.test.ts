import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The bin runs the CLI from one bundled module (bin/cli-bundle.js), kept in .cache/cli while the
// sources it was built from are unchanged. In a copy of the project (its packages linked), a
// source edited after a run must show in the next run, files read relative to a source must be
// found, and a checkout where no bundle can be stored must still run (through tsx).

const repo = path.resolve(import.meta.dirname, '../../..');
let copy: string;

beforeAll(() => {
  copy = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-cli-'));
  for (const part of ['bin', 'shared', 'infra/crds', 'package.json', 'tsconfig.json', 'tsconfig.base.json']) {
    fs.cpSync(path.join(repo, part), path.join(copy, part), { recursive: true });
  }
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
});

afterAll(() => {
  fs.rmSync(copy, { recursive: true, force: true });
});

const run = (...args: string[]) =>
  execFileSync(process.execPath, [path.join(copy, 'bin', 'flotilla.js'), ...args], {
    cwd: copy,
    encoding: 'utf8',
    timeout: 60_000,
  });
const { version } = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  version: string;
};

describe('the bundled CLI', () => {
  it('is built on the first run and rebuilt when a source it was built from changes', () => {
    expect(run('version').trim()).toBe(version);
    const cache = path.join(copy, '.cache', 'cli');
    const bundles = () => fs.readdirSync(cache).filter((f) => /^main-[0-9a-f]+\.mjs$/.test(f));
    expect(bundles()).toHaveLength(1);
    const manifest = JSON.parse(fs.readFileSync(path.join(cache, 'inputs.json'), 'utf8')) as {
      sources: string[];
    };
    expect(manifest.sources).toContain('shared/cli/project.ts');
    const [first] = bundles();

    // An edit that keeps the file's size and modification time (as a copy that preserves times
    // can): the bundle is keyed by what the sources hold, so it is built again.
    const source = path.join(copy, 'shared', 'cli', 'project.ts');
    const before = fs.statSync(source);
    const text = fs.readFileSync(source, 'utf8');
    expect(text).toContain('return manifest.version;');
    fs.writeFileSync(source, text.replace('return manifest.version;', "return 'edited-version';"));
    fs.utimesSync(source, before.atime, before.mtime);
    expect(fs.statSync(source).size).toBe(before.size);
    expect(run('version').trim()).toBe('edited-version');
    // The older bundle is gone; the new one is used from then on.
    expect(bundles()).toHaveLength(1);
    expect(bundles()[0]).not.toBe(first);
    expect(run('version').trim()).toBe('edited-version');
  });

  it("reads files next to its sources where they are (a source's import.meta.dirname is its own)", () => {
    // The CRDs are read from infra/crds beside shared/, not beside the bundle.
    expect(run('crds')).toContain('name: nodepools.karpenter.sh');
  });

  it('runs through tsx where no bundle can be stored', () => {
    fs.rmSync(path.join(copy, '.cache'), { recursive: true, force: true });
    // A file where the bundle's folder would be: nothing can be written there.
    fs.mkdirSync(path.join(copy, '.cache'));
    fs.writeFileSync(path.join(copy, '.cache', 'cli'), 'not a folder');
    const source = path.join(copy, 'shared', 'cli', 'project.ts');
    fs.writeFileSync(
      source,
      fs.readFileSync(source, 'utf8').replace(/return .*;\n}\n$/, "return 'from tsx';\n}\n"),
    );
    expect(run('version').trim()).toBe('from tsx');
    expect(fs.statSync(path.join(copy, '.cache', 'cli')).isFile()).toBe(true);
  });
});
