import fs from 'node:fs';
import path from 'node:path';
import { PLAN_USAGE, planCommand } from './plan.ts';
import { runSimulate } from './simulate.ts';

/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const root = path.resolve(import.meta.dirname, '..', '..');

const usage = `Usage: flotilla <command>

Commands:
  crds       print Flotilla's CustomResourceDefinitions (Karpenter v1 NodePool, NodeClaim,
             EC2NodeClass) as one YAML stream, for \`flotilla crds | kubectl apply -f -\`
  simulate   run a scenario (default: examples/steady-web.yaml) on a virtual clock, no AWS or
             cluster needed: \`flotilla simulate [scenario.yaml] [--out <dir>]\`
${PLAN_USAGE}  version    print the version
  help       print this help
`;

/** Runs one CLI command and returns the process exit code. */
export async function main(args: readonly string[], io: CliIo): Promise<number> {
  const [command = 'help', ...rest] = args;
  switch (command) {
    case 'crds':
      if (rest.length > 0) return refuse(io, `crds takes no arguments, got: ${rest.join(' ')}`);
      io.out(crdManifests());
      return 0;
    case 'plan':
      return planCommand(rest, io);
    case 'simulate':
      return runSimulate(rest, io);
    case 'version':
    case '--version':
      io.out(`${packageVersion()}\n`);
      return 0;
    case 'help':
    case '--help':
    case '-h':
      io.out(usage);
      return 0;
    default:
      return refuse(io, `unknown command "${command}"`);
  }
}

function refuse(io: CliIo, problem: string): number {
  io.err(`flotilla: ${problem}\n\n${usage}`);
  return 2;
}

function crdManifests(): string {
  const dir = path.join(root, 'infra', 'crds');
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => fs.readFileSync(path.join(dir, name), 'utf8').trimEnd())
    .map((text) => (text.startsWith('---') || /^---$/m.test(text) ? text : `---\n${text}`))
    .join('\n')
    .concat('\n');
}

function packageVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
