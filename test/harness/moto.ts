import path from 'node:path';
import { HarnessError } from './errors.ts';
import { motoInstalled, motoVenv } from './prepare.ts';
import { freePort, progress, secondsSince, startDaemon, waitFor } from './proc.ts';
import { sharedService } from './services.ts';

/** Connection details of the moto server of this test worker. */
export interface Moto {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Seconds it took to start. */
  readonly startSeconds: number;
}

const python = path.join(motoVenv, 'bin', 'python');
/** moto's server with DynamoDB requests serialised, as DynamoDB applies conditional writes atomically. */
const launcher = path.join(import.meta.dirname, 'moto_server.py');

/**
 * The moto server (EC2, SQS, EventBridge, DynamoDB, SSM, STS, IAM on one endpoint), started on a
 * free loopback port the first time a test asks for it. The global setup installed it
 * (prepare.ts).
 */
export function moto(): Promise<Moto> {
  return sharedService('moto', startMoto, 3 * 60_000, { perWorker: true });
}

/** The Python of the harness's virtualenv (moto, boto3 and botocore are installed there). */
export async function harnessPython(): Promise<string> {
  await moto();
  return python;
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
  if (!motoInstalled()) {
    throw new HarnessError(
      `moto is not installed in ${motoVenv}: the harness's global setup (test/harness/global-setup.ts) ` +
        'installs it before any test file runs; run the tests with vitest',
    );
  }
  const port = await freePort();
  const daemon = startDaemon(dir, 'moto', python, [launcher, '127.0.0.1', String(port)], {
    env: { ...process.env, MOTO_PORT: String(port) },
  });
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
