import fs from 'node:fs';
import path from 'node:path';
import { type Command, parseCommandArgs } from './command.ts';

// Commands that print what ships with Flotilla: the CRDs and the version.

const root = path.resolve(import.meta.dirname, '..', '..');

export const crdsCommand: Command = {
  name: 'crds',
  summary: `  crds       print Flotilla's CustomResourceDefinitions (Karpenter v1 NodePool, NodeClaim,
             EC2NodeClass) as one YAML stream, for \`flotilla crds | kubectl apply -f -\`
`,
  usage: `Usage: flotilla crds

Prints Flotilla's CustomResourceDefinitions (Karpenter v1 NodePool, NodeClaim, EC2NodeClass) as
one YAML stream: \`flotilla crds | kubectl apply -f -\`. Takes no arguments.
`,
  run: async (args, io) => {
    const parsed = parseCommandArgs(args, {}, 0);
    if ('problem' in parsed) {
      io.err(`flotilla crds: crds takes no arguments, got: ${args.join(' ')}\n`);
      return 2;
    }
    io.out(crdManifests());
    return 0;
  },
};

export const versionCommand: Command = {
  name: 'version',
  summary: '  version    print the version\n',
  usage: 'Usage: flotilla version\n\nPrints the version of Flotilla (also `flotilla --version`).\n',
  run: async (args, io) => {
    if (args.length > 0) {
      io.err(`flotilla version: version takes no arguments, got: ${args.join(' ')}\n`);
      return 2;
    }
    io.out(`${packageVersion()}\n`);
    return 0;
  },
};

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
