// The CLI as one JavaScript module, built from its TypeScript sources with esbuild and kept in
// .cache/cli while the sources it was built from are unchanged, so a run loads one file instead of
// translating a few hundred modules through tsx. Packages stay outside it, loaded from
// node_modules as usual. A source's `import.meta.dirname` and `import.meta.url` become the
// source's own (a textual replacement: no source of the CLI has either inside a string).
//
// The bundle is named by a hash of what it was built from: the bytes of every source as esbuild
// compiled them, this file, the TypeScript configurations, the installed esbuild's version, Node's
// version, and the project's folder (the bundle holds absolute paths). A run hashes the sources
// the manifest lists as they are now and uses the bundle only when the hash is the same; else it
// builds again (a few hundred milliseconds). When no bundle can be built or stored (no esbuild, a
// read-only checkout), or it was removed meanwhile, the caller falls back to tsx.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const dir = path.join(root, '.cache', 'cli');
const manifest = path.join(dir, 'inputs.json');
const entry = 'shared/cli/main.ts';
const LOADERS = { '.ts': 'ts', '.js': 'js', '.mjs': 'js', '.json': 'json' };
/** What esbuild reads besides the sources: the TypeScript configurations of the project. */
const CONFIGS = ['tsconfig.json', 'tsconfig.base.json', 'shared/core/tsconfig.json'];

/** The version of the esbuild installed now. */
function esbuildVersion() {
  const file = createRequire(import.meta.url).resolve('esbuild/package.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

/** The hash of a build from `sources` (path relative to the project → bytes) by that esbuild. */
function buildKey(sources, bundlerVersion) {
  const hash = createHash('sha256');
  const part = (label, bytes) => {
    hash.update(`${label}\0${bytes.length}\0`);
    hash.update(bytes);
  };
  part('root', Buffer.from(root));
  part('node', Buffer.from(process.version));
  part('esbuild', Buffer.from(bundlerVersion));
  for (const file of [
    path.join(import.meta.dirname, 'cli-bundle.js'),
    ...CONFIGS.map((c) => path.join(root, c)),
  ]) {
    part(file, fs.existsSync(file) ? fs.readFileSync(file) : Buffer.from('absent'));
  }
  for (const [file, bytes] of [...sources].sort(([a], [b]) => (a < b ? -1 : 1))) part(file, bytes);
  return hash.digest('hex').slice(0, 32);
}

/** The bundle built from the sources as they are now, or undefined. */
function currentBundle() {
  let recorded;
  try {
    recorded = JSON.parse(fs.readFileSync(manifest, 'utf8'));
    const sources = new Map(recorded.sources.map((file) => [file, fs.readFileSync(path.join(root, file))]));
    const file = path.join(dir, `main-${buildKey(sources, esbuildVersion())}.mjs`);
    return fs.existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

async function build() {
  // Where nothing can be stored, nothing is built.
  fs.mkdirSync(dir, { recursive: true });
  fs.accessSync(dir, fs.constants.W_OK);
  const esbuild = await import('esbuild');
  // The bytes each source was compiled from, as the plugin read them.
  const sources = new Map();
  const ownPaths = {
    name: 'own-import-meta',
    setup(build) {
      build.onLoad({ filter: /.*/ }, async (args) => {
        const loader = LOADERS[path.extname(args.path)];
        if (loader === undefined)
          throw new Error(`the CLI imports ${args.path}, which the bundle does not load`);
        const bytes = await fs.promises.readFile(args.path);
        sources.set(path.relative(root, args.path), bytes);
        const contents = bytes
          .toString('utf8')
          .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
        return { contents, loader };
      });
    },
  };
  const key = () => buildKey(sources, esbuild.version);
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    // Class names as written: errors name themselves after their class.
    keepNames: true,
    write: false,
    outfile: path.join(dir, 'main.mjs'),
    plugins: [ownPaths],
    logLevel: 'silent',
  });
  const name = `main-${key()}`;
  // Each file is written under a name of its own, then renamed: a run never loads half a file,
  // and builds running at once each leave whole ones. The bundle's name is its hash, so the manifest
  // (renamed last) never points at a bundle built from other sources.
  const unique = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const place = (file, contents) => {
    fs.writeFileSync(`${file}.${unique}`, contents);
    fs.renameSync(`${file}.${unique}`, file);
  };
  for (const out of result.outputFiles) {
    const isMap = out.path.endsWith('.map');
    const text = isMap
      ? out.text
      : out.text.replace('//# sourceMappingURL=main.mjs.map', `//# sourceMappingURL=${name}.mjs.map`);
    place(path.join(dir, `${name}.mjs${isMap ? '.map' : ''}`), text);
  }
  place(manifest, JSON.stringify({ sources: [...sources.keys()] }));
  // Bundles of older sources go (a run loading one now has it open already, or falls back to tsx).
  for (const old of fs.readdirSync(dir)) {
    if (old.startsWith('main-') && !old.startsWith(name)) fs.rmSync(path.join(dir, old), { force: true });
  }
  return path.join(dir, `${name}.mjs`);
}

/**
 * The CLI's `main`, from the bundle (built first when the sources changed), or undefined when no
 * bundle can be had here.
 */
export async function bundledMain() {
  let file;
  try {
    file = currentBundle() ?? (await build());
  } catch {
    return undefined;
  }
  // Stack traces name the TypeScript sources.
  process.setSourceMapsEnabled(true);
  try {
    return (await import(pathToFileURL(file).href)).main;
  } catch (error) {
    // Removed meanwhile by a build from newer sources: tsx reads those. Any other error is the
    // CLI's own and is thrown as tsx would have thrown it.
    if (error?.code === 'ERR_MODULE_NOT_FOUND' && !fs.existsSync(file)) return undefined;
    throw error;
  }
}
