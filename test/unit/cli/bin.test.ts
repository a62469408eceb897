import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { flotilla, flotillaProcess } from './flotilla.ts';

// The `flotilla` command as a user runs it: help for every command, and user errors told in one
// line with no stack trace. What the bin adds to the CLI's entry (the Node version check, a closed
// pipe, what reaches the terminal) runs in a process of its own; the rest through the entry.

const dir = mkdtempSync(path.join(tmpdir(), 'flotilla-bin-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const examples = path.resolve(import.meta.dirname, '../../../examples');
const fixtures = path.resolve(import.meta.dirname, '../../fixtures/plan');

/** Node's uncaught-error output: a stack frame or the runtime's version banner. */
const STACK = /^\s+at |^Node\.js v\d/m;

describe('flotilla help', () => {
  it.each(['crds', 'simulate', 'plan', 'version'])(
    'prints the help of %s for `<command> --help` and `help <command>`, exit 0',
    async (command) => {
      const viaFlag = await flotilla([command, '--help']);
      expect(viaFlag).toMatchObject({ code: 0, err: '' });
      expect(viaFlag.out).toMatch(new RegExp(`^Usage:\\s+flotilla ${command}`));
      const viaHelp = await flotilla(['help', command]);
      expect(viaHelp).toEqual(viaFlag);
    },
  );

  it('prints the general help for `help` alone and refuses `help` of an unknown command', async () => {
    const general = await flotillaProcess(['help']);
    expect(general.code).toBe(0);
    expect(general.out).toMatch(/^Usage: flotilla <command>/);
    const unknown = await flotilla(['help', 'deploy']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/^flotilla help: unknown command "deploy"/);
  });
});

describe('an older Node.js', () => {
  // The process reports itself as Node 20 before the command loads anything, as the system Node
  // of many machines is; the Kubernetes client's HTTP library fails on it deep in its imports.
  const asNode = (version: string) => [
    '--import',
    `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`,
  ];

  it.each(['20.20.2', '22.18.0'])('is named in one line, exit 2, on Node %s', async (version) => {
    const run = await flotillaProcess(['--help'], { nodeArgs: asNode(version) });
    expect(run).toEqual({
      code: 2,
      out: '',
      err: `flotilla: needs Node.js 22.19 or newer, this is ${version} (npm start and npx flotilla use the Node 22 that npm ci installs)\n`,
    });
  });

  it('runs on Node 22.19', async () => {
    const run = await flotillaProcess(['version'], { nodeArgs: asNode('22.19.0') });
    expect(run).toMatchObject({ code: 0, err: '' });
  });
});

describe('a closed standard output', () => {
  it('ends `flotilla crds` quietly with exit code 0', async () => {
    expect(await flotillaProcess(['crds'], { closeStdout: true })).toEqual({ code: 0, out: '', err: '' });
  });

  it('ends `flotilla simulate` quietly with exit code 0 once the reports are written', async () => {
    const out = path.join(dir, 'closed');
    const run = await flotillaProcess(['simulate', path.join(examples, 'gpu-jobs.yaml'), '--out', out], {
      closeStdout: true,
    });
    expect(run.code).toBe(0);
    expect(run.err).toMatch(/^Simulating gpu-jobs/);
    expect(run.err).not.toMatch(STACK);
    expect(readFileSync(path.join(out, 'summary.txt'), 'utf8')).toMatch(/^Flotilla simulation "gpu-jobs"/);
  }, 180_000);
});

describe('user errors', () => {
  it('refuses an --out that names a file before simulating, exit 2, the file untouched', async () => {
    const file = path.join(dir, 'taken.txt');
    writeFileSync(file, 'keep me\n');
    const run = await flotilla(['simulate', path.join(examples, 'gpu-jobs.yaml'), '--out', file]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(
      /^flotilla simulate: --out .*taken\.txt is a file, not a directory; name a directory/,
    );
    expect(run.err).not.toMatch(/Simulating/);
    expect(run.err).not.toMatch(STACK);
    expect(readFileSync(file, 'utf8')).toBe('keep me\n');
  });

  it('refuses an --out below a file, exit 2', async () => {
    const file = path.join(dir, 'plain.txt');
    writeFileSync(file, '');
    const run = await flotilla(['simulate', '--out', path.join(file, 'reports')]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/^flotilla simulate: --out .*plain\.txt\/reports (is a file|cannot be used)/);
    expect(run.err).not.toMatch(STACK);
  });

  it('says a scenario or snapshot cannot be read, exit 2 (bad input), no stack trace', async () => {
    const scenario = await flotillaProcess(['simulate', path.join(dir, 'absent.yaml'), '--out', dir]);
    expect(scenario.code).toBe(2);
    expect(scenario.err).toMatch(/absent\.yaml: cannot read the scenario: no such file/);
    expect(scenario.err).not.toMatch(STACK);
    const snapshot = await flotillaProcess([
      'plan',
      '--cluster',
      dir,
      '--nodepools',
      path.join(fixtures, 'nodepools.yaml'),
    ]);
    expect(snapshot.code).toBe(2);
    expect(snapshot.err).toMatch(/^flotilla plan: cannot read the --cluster file .*: EISDIR/);
    expect(snapshot.err).not.toMatch(STACK);
  });
});
