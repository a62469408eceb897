import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { flotilla } from './flotilla.ts';

/** `flotilla <args>` through the command's entry, in this process. */
const run = (...args: string[]) => flotilla(args);

describe('flotilla CLI', () => {
  it('prints every CRD as one YAML stream', async () => {
    const { code, out } = await run('crds');
    expect(code).toBe(0);
    const kinds = parseAllDocuments(out).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
    expect(kinds.map((k) => k.kind)).toEqual(Array(kinds.length).fill('CustomResourceDefinition'));
    expect(kinds.map((k) => k.metadata.name)).toEqual(
      expect.arrayContaining([
        'nodepools.karpenter.sh',
        'nodeclaims.karpenter.sh',
        'ec2nodeclasses.karpenter.k8s.aws',
      ]),
    );
  });

  it('refuses unknown commands with usage and exit code 2', async () => {
    const { code, err } = await run('launch-everything');
    expect(code).toBe(2);
    expect(err).toMatch(/unknown command "launch-everything"/);
    expect(err).toMatch(/Usage: flotilla/);
  });

  it('runs as the package bin', () => {
    const bin = path.resolve(import.meta.dirname, '../../../bin/flotilla.js');
    const version = execFileSync(process.execPath, [bin, 'version'], { encoding: 'utf8' });
    expect(version.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
