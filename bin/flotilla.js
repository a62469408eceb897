#!/usr/bin/env node
// Entry point of the `flotilla` command: loads the TypeScript CLI, bundled (cli-bundle.js) or through tsx.

// The Kubernetes client's HTTP library needs Node.js 22.19 or newer: on an older Node the command
// says so in one line, before anything is loaded, instead of failing deep inside a dependency.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `flotilla: needs Node.js 22.19 or newer, this is ${process.versions.node} (npm start and npx flotilla use the Node 22 that npm ci installs)\n`,
  );
  process.exit(2);
}

// A reader that stops early (`flotilla crds | head -1`) closes the pipe: the command ends quietly
// with exit code 0, as Unix tools do. A closed standard error only silences the progress lines.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`flotilla: cannot write to standard output: ${error.message}\n`);
  process.exit(1);
});
process.stderr.on('error', () => {});

// V8 keeps the code it compiles for each module (in the system's temporary folder, or
// NODE_COMPILE_CACHE), so a later run does not compile the CLI's modules again (a tenth of
// `npm start`'s CPU). The cache is checked against each module's source; a stale entry is unused.
const { enableCompileCache } = await import('node:module');
enableCompileCache();
// The CLI built into one module (cli-bundle.js) loads in a fraction of the time tsx takes to
// translate its sources one by one; tsx is the way when no bundle can be built here.
const { bundledMain } = await import('./cli-bundle.js');
const main = (await bundledMain()) ?? (await loadWithTsx());
async function loadWithTsx() {
  const { register } = await import('tsx/esm/api');
  register();
  return (await import('../shared/cli/main.ts')).main;
}
process.exitCode = await main(process.argv.slice(2), {
  out: (text) => {
    if (!process.stdout.destroyed) process.stdout.write(text);
  },
  err: (text) => {
    if (!process.stderr.destroyed) process.stderr.write(text);
  },
});
