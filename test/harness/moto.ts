import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HarnessError } from './errors.ts';
import { cacheDir } from './paths.ts';
import { freePort, progress, runLogged, secondsSince, startDaemon, waitFor } from './proc.ts';
import { sharedService } from './services.ts';

/** Connection details of the moto server of this test run. */
export interface Moto {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Seconds it took to start, install included. */
  readonly startSeconds: number;
}

const requirements = path.join(import.meta.dirname, 'requirements.txt');
const venv = path.join(cacheDir, 'venv');
const motoServer = path.join(venv, 'bin', 'moto_server');
/** moto's server with DynamoDB requests serialised, as DynamoDB applies conditional writes atomically. */
const launcher = path.join(import.meta.dirname, 'moto_server.py');

/**
 * The moto server (EC2, SQS, EventBridge, DynamoDB, SSM, STS, IAM on one endpoint), installed
 * into a git-ignored virtualenv on first use and started on a free loopback port.
 */
export function moto(): Promise<Moto> {
  return sharedService('moto', startMoto, 10 * 60_000);
}

/** The Python of the harness's virtualenv (moto, boto3 and botocore are installed there). */
export async function harnessPython(): Promise<string> {
  await moto();
  return path.join(venv, 'bin', 'python');
}

/** Clears every resource in moto, so each test starts from an empty account. */
export async function resetMoto(server: Moto): Promise<void> {
  const response = await fetch(`${server.endpoint}/moto-api/reset`, { method: 'POST' });
  if (!response.ok) throw new HarnessError(`moto reset failed with HTTP ${response.status}`);
}

/** SDK client settings for talking to moto: endpoint, region, static test credentials, retries. */
export function awsClientConfig(server: Moto) {
  return {
    endpoint: server.endpoint,
    region: server.region,
    credentials: { ...server.credentials },
    maxAttempts: 3,
  };
}

async function startMoto(dir: string): Promise<Moto> {
  const began = Date.now();
  await ensureVenv(dir);
  const port = await freePort();
  const daemon = startDaemon(
    dir,
    'moto',
    path.join(venv, 'bin', 'python'),
    [launcher, '127.0.0.1', String(port)],
    {
      env: { ...process.env, MOTO_PORT: String(port) },
    },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    `moto on ${endpoint} (log: ${daemon.logFile})`,
    async () => ((await fetch(`${endpoint}/moto-api/`)).ok ? true : undefined),
    { timeoutMs: 60_000 },
  );
  const startSeconds = secondsSince(began);
  progress(`moto ready on ${endpoint} in ${startSeconds}s`);
  return {
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    startSeconds,
  };
}

/** Installs the pinned requirements into .cache/venv unless the same set is already there. */
async function ensureVenv(dir: string): Promise<void> {
  const wanted = createHash('sha256').update(fs.readFileSync(requirements)).digest('hex');
  const stamp = path.join(venv, '.requirements.sha256');
  if (fs.existsSync(motoServer) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === wanted) return;
  const python = process.env['PYTHON'] ?? 'python3';
  const logFile = path.join(dir, 'logs', 'pip.log');
  const began = Date.now();
  progress(`installing moto into ${venv} with ${python} -m venv and pip (first run only; log: ${logFile})`);
  await runLogged(
    python,
    ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "moto needs Python 3.10 or newer")'],
    { logFile },
  );
  fs.rmSync(venv, { recursive: true, force: true });
  await runLogged(python, ['-m', 'venv', venv], { logFile });
  await runLogged(
    path.join(venv, 'bin', 'pip'),
    ['install', '--disable-pip-version-check', '-r', requirements],
    {
      logFile,
    },
  );
  fs.writeFileSync(stamp, wanted);
  progress(`moto installed in ${secondsSince(began)}s`);
}
