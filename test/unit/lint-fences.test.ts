import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The layer fences in biome.json, exercised: probe files placed in each layer of a scratch copy of
// the project's lint configuration must be refused (or allowed) with the layer's own message.

const projectRoot = path.resolve(import.meta.dirname, '..', '..');
const biome = path.join(projectRoot, 'node_modules', '.bin', 'biome');

interface Probe {
  readonly file: string;
  readonly source: string;
  /** The fence message expected, or undefined when the import is allowed. */
  readonly refusedWith: RegExp | undefined;
}

const importOf = (specifier: string) => `import * as m from '${specifier}';\nexport const probe = m;\n`;

const probes: readonly Probe[] = [
  { file: 'shared/core/p1.ts', source: importOf('node:fs'), refusedWith: /shared\/core is pure/ },
  {
    file: 'shared/core/p2.ts',
    source: importOf('../ports/cloud.ts'),
    refusedWith: /shared\/core imports nothing/,
  },
  {
    file: 'shared/apis/p1.ts',
    source: importOf('@aws-sdk/client-ec2'),
    refusedWith: /AWS belongs to the adapters/,
  },
  {
    file: 'shared/apis/p2.ts',
    source: importOf('../usecases/provision.ts'),
    refusedWith: /only on the core/,
  },
  { file: 'shared/apis/p3.ts', source: importOf('../ports/cluster.ts'), refusedWith: undefined },
  {
    file: 'shared/ports/p1.ts',
    source: importOf('../adapters/kube/call.ts'),
    refusedWith: /Ports depend only/,
  },
  {
    file: 'shared/ports/p2.ts',
    source: importOf('@kubernetes/client-node'),
    refusedWith: /Ports are interfaces/,
  },
  { file: 'shared/usecases/p1.ts', source: importOf('../adapters/aws/launch.ts'), refusedWith: /see ports/ },
  { file: 'shared/usecases/p2.ts', source: importOf('../simulator/engine.ts'), refusedWith: /see ports/ },
  { file: 'shared/usecases/p3.ts', source: importOf('node:fs'), refusedWith: /no I\/O of their own/ },
  { file: 'shared/usecases/p4.ts', source: importOf('node:crypto'), refusedWith: undefined },
  {
    file: 'shared/usecases/p5.ts',
    source: importOf('@aws-sdk/client-ec2'),
    refusedWith: /only through ports/,
  },
  {
    file: 'shared/usecases/p6.ts',
    source: importOf('../../lambdas/common/sqs.ts'),
    refusedWith: /never the other way/,
  },
  {
    file: 'shared/adapters/memory/p1.ts',
    source: importOf('../kube/errors.ts'),
    refusedWith: /on their own/,
  },
  {
    file: 'shared/adapters/memory/p2.ts',
    source: importOf('../../usecases/provision.ts'),
    refusedWith: /on their own/,
  },
  {
    file: 'shared/adapters/memory/p3.ts',
    source: importOf('../../ports/cluster.ts'),
    refusedWith: undefined,
  },
  {
    file: 'shared/simulator/p1.ts',
    source: importOf('../adapters/aws/launch.ts'),
    refusedWith: /in-memory twins/,
  },
  { file: 'shared/simulator/p2.ts', source: importOf('@aws-sdk/client-ec2'), refusedWith: /without AWS/ },
  { file: 'shared/simulator/p3.ts', source: importOf('../usecases/provision.ts'), refusedWith: undefined },
  {
    file: 'shared/simulator/p4.ts',
    source: importOf('../adapters/memory/cloud.ts'),
    refusedWith: /through shared\/adapters\/memory\/index.ts/,
  },
  { file: 'shared/simulator/p5.ts', source: importOf('../adapters/memory/index.ts'), refusedWith: undefined },
  { file: 'shared/simulator/p7.ts', source: importOf('../adapters/shadow-cloud.ts'), refusedWith: undefined },
  {
    file: 'shared/simulator/p6.ts',
    source: importOf('../cli/main.ts'),
    refusedWith: /CLI runs the simulator/,
  },
  {
    file: 'shared/adapters/aws/p1.ts',
    source: importOf('../kube/errors.ts'),
    refusedWith: /AWS adapter stands alone/,
  },
  {
    file: 'shared/adapters/aws/p2.ts',
    source: importOf('../memory/cloud.ts'),
    refusedWith: /AWS adapter stands alone/,
  },
  {
    file: 'shared/adapters/kube/p1.ts',
    source: importOf('../aws/errors.ts'),
    refusedWith: /Kubernetes adapter stands alone/,
  },
  { file: 'shared/adapters/kube/p2.ts', source: importOf('../../ports/errors.ts'), refusedWith: undefined },
  {
    file: 'shared/cli/p1.ts',
    source: importOf('../adapters/aws/launch.ts'),
    refusedWith: /in-memory twins through their index/,
  },
  {
    file: 'infra/p1.ts',
    source: importOf('../shared/adapters/aws/dynamo-state.ts'),
    refusedWith: /never adapter or use-case internals/,
  },
  { file: 'infra/p2.ts', source: importOf('../shared/apis/state-table.ts'), refusedWith: undefined },
  {
    file: 'infra/shim/p1.ts',
    source: importOf('../../shared/adapters/aws/dynamo-state.ts'),
    refusedWith: /never other adapters or use cases/,
  },
  {
    file: 'infra/shim/p2.ts',
    source: importOf('../../shared/adapters/kube/http.ts'),
    refusedWith: undefined,
  },
  {
    file: 'shared/messages/p1.ts',
    source: importOf('../adapters/aws/launch.ts'),
    refusedWith: /only on the core/,
  },
  {
    file: 'shared/runtime/p1.ts',
    source: importOf('../../infra/policies.ts'),
    refusedWith: /never the other way/,
  },
];

interface Diagnostic {
  readonly category: string;
  readonly message: string;
  readonly location: { readonly path: string };
}

let diagnostics: readonly Diagnostic[] = [];
let scratch = '';

beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-fences-'));
  fs.copyFileSync(path.join(projectRoot, 'biome.json'), path.join(scratch, 'biome.json'));
  for (const probe of probes) {
    fs.mkdirSync(path.dirname(path.join(scratch, probe.file)), { recursive: true });
    fs.writeFileSync(path.join(scratch, probe.file), probe.source);
  }
  const run = spawnSync(
    biome,
    ['lint', '--vcs-enabled=false', '--reporter=json', '--max-diagnostics=200', '.'],
    {
      cwd: scratch,
      encoding: 'utf8',
    },
  );
  const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  diagnostics = report.diagnostics.filter((d) => d.category === 'lint/style/noRestrictedImports');
});

afterAll(() => {
  if (scratch !== '') fs.rmSync(scratch, { recursive: true, force: true });
});

describe('layer fences', () => {
  it.each(probes)('$file: $source', (probe) => {
    const found = diagnostics.filter((d) => d.location.path === probe.file);
    if (probe.refusedWith === undefined) {
      expect(found).toEqual([]);
    } else {
      expect(found.map((d) => d.message)).toEqual([expect.stringMatching(probe.refusedWith)]);
    }
  });

  it('refuses an import cycle', () => {
    const dir = path.join(scratch, 'shared', 'usecases', 'cycle');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'a.ts'),
      "import { b } from './b.ts';\nexport const a = (): unknown => b;\n",
    );
    fs.writeFileSync(
      path.join(dir, 'b.ts'),
      "import { a } from './a.ts';\nexport const b = (): unknown => a;\n",
    );
    const run = spawnSync(
      biome,
      ['lint', '--vcs-enabled=false', '--reporter=json', 'shared/usecases/cycle'],
      {
        cwd: scratch,
        encoding: 'utf8',
      },
    );
    const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
    expect(report.diagnostics.filter((d) => d.category === 'lint/suspicious/noImportCycles')).toHaveLength(2);
  });

  it('refuses an import cycle made of type imports too', () => {
    const dir = path.join(scratch, 'shared', 'ports', 'type-cycle');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'a.ts'),
      "import type { B } from './b.ts';\nexport interface A { b?: B }\n",
    );
    fs.writeFileSync(
      path.join(dir, 'b.ts'),
      "import type { A } from './a.ts';\nexport interface B { a?: A }\n",
    );
    const run = spawnSync(
      biome,
      ['lint', '--vcs-enabled=false', '--reporter=json', 'shared/ports/type-cycle'],
      {
        cwd: scratch,
        encoding: 'utf8',
      },
    );
    const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
    expect(report.diagnostics.filter((d) => d.category === 'lint/suspicious/noImportCycles')).toHaveLength(2);
  });
});
