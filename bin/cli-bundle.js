// The CLI as one JavaScript module, built from its TypeScript sources with esbuild and kept in
// .cache/cli while the sources it was built from are unchanged, so a run loads one file instead of
// translating a few hundred modules through tsx. Packages stay outside it, loaded from
// node_modules as usual. A source's `import.meta.dirname` and `import.meta.url` become the
// source's own, so files read relative to a source are found where they are.
//
// The bundle is used only when every source it was built from has the size and modification time
// it had then; else it is built again (a few hundred milliseconds). When it cannot be built or
// stored (no esbuild, a read-only checkout), the caller falls back to tsx.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const dir = path.join(root, '.cache', 'cli');
const bundle = path.join(dir, 'main.mjs');
const manifest = path.join(dir, 'inputs.json');
const entry = 'shared/cli/main.ts';

/** Whether the bundle was built from the sources as they are now. */
function current() {
  let recorded;
  try {
    recorded = JSON.parse(fs.readFileSync(manifest, 'utf8'));
  } catch {
    return false;
  }
  if (recorded?.node !== process.version || !Array.isArray(recorded.inputs) || !fs.existsSync(bundle)) {
    return false;
  }
  for (const [file, size, mtimeMs] of recorded.inputs) {
    const stat = fs.statSync(path.join(root, file), { throwIfNoEntry: false });
    if (stat === undefined || stat.size !== size || stat.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

/** A TypeScript source with its import.meta paths made its own. */
const ownPaths = {
  name: 'own-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await fs.promises.readFile(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: 'ts' };
    });
  },
};

async function build() {
  const esbuild = await import('esbuild');
  const startedMs = Date.now();
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    write: false,
    outfile: bundle,
    plugins: [ownPaths],
    logLevel: 'silent',
  });
  // Written under a name of this process's own, then renamed: a run never loads half a file, and
  // two runs building at once each leave a whole one.
  fs.mkdirSync(dir, { recursive: true });
  for (const out of result.outputFiles) {
    const temporary = `${out.path}.${process.pid}`;
    fs.writeFileSync(temporary, out.contents);
    fs.renameSync(temporary, out.path);
  }
  const inputs = Object.keys(result.metafile.inputs).map((file) => {
    const stat = fs.statSync(path.join(root, file));
    return [file, stat.size, stat.mtimeMs];
  });
  // A source saved while the build read it may be in the bundle as it was: the next run builds again.
  if (inputs.some(([, , mtimeMs]) => mtimeMs >= startedMs)) return;
  const temporary = `${manifest}.${process.pid}`;
  fs.writeFileSync(temporary, JSON.stringify({ node: process.version, inputs }));
  fs.renameSync(temporary, manifest);
}

/**
 * The CLI's `main`, from the bundle (built first when the sources changed), or undefined when no
 * bundle can be had here.
 */
export async function bundledMain() {
  if (!current()) {
    try {
      await build();
    } catch {
      return undefined;
    }
  }
  // Stack traces name the TypeScript sources.
  process.setSourceMapsEnabled(true);
  const { main } = await import(pathToFileURL(bundle).href);
  return main;
}
