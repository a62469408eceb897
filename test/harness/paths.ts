import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root folder (where package.json is). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Git-ignored folder for everything the harness installs, builds or writes. */
export const cacheDir = process.env['FLOTILLA_CACHE_DIR'] ?? path.join(projectRoot, '.cache');

/** One folder per test run: pid files, logs, generated certificates, service state. */
export const runsDir = path.join(cacheDir, 'harness', 'runs');
