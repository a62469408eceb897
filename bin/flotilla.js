#!/usr/bin/env node
// Entry point of the `flotilla` command: loads the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

// A reader that stops early (`flotilla crds | head -1`) closes the pipe: the command ends quietly
// with exit code 0, as Unix tools do. A closed standard error only silences the progress lines.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`flotilla: cannot write to standard output: ${error.message}\n`);
  process.exit(1);
});
process.stderr.on('error', () => {});

register();
const { main } = await import('../shared/cli/main.ts');
process.exitCode = await main(process.argv.slice(2), {
  out: (text) => {
    if (!process.stdout.destroyed) process.stdout.write(text);
  },
  err: (text) => {
    if (!process.stderr.destroyed) process.stderr.write(text);
  },
});
