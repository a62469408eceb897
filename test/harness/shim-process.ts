import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renderShimObjects } from '../../infra/shim/manifests.ts';
import { lambdaCredentials } from './aws/identity.ts';
import { STACK_NAMES } from './aws/stack.ts';
import type { Moto } from './moto.ts';
import { waitFor } from './proc.ts';

export interface ShimConfigMap {
  readonly data: { readonly 'boot.mjs': string };
  readonly binaryData: { readonly 'shim.mjs.gz': string };
}
interface ShimDeployment {
  readonly spec: { template: { spec: { containers: [{ env: { name: string; value: string }[] }] } } };
}

/** The pod-event shim running as its own process. */
export interface ShimProcess {
  readonly child: ChildProcess;
  /** Everything it printed so far (its JSON log lines). */
  output(): string;
  stop(): void;
}

/**
 * Starts the shim from the very ConfigMap and Deployment the cluster gets: the boot script and
 * the gzipped bundle land in a folder as the volume mount would put them, and the process gets
 * the Deployment's environment. What the cluster provides instead is given here: a kubeconfig for
 * the in-cluster service account (the shim's own: `kube().shimKubeconfigPath`) and moto's endpoint
 * (for SQS and S3) and the shim role's keys for EKS Pod Identity.
 */
export async function startShimProcess(options: {
  readonly server: Moto;
  readonly kubeconfigPath: string;
  readonly clusterName: string;
  readonly queueUrl: string;
  /**
   * Where it publishes the cluster summary (the Deployment's `FLOTILLA_SUMMARY_BUCKET`).
   * @default the summary bucket `deployStack` creates
   */
  readonly summaryBucket?: string;
}): Promise<ShimProcess> {
  const [configMap, deployment] = renderShimObjects({
    namespace: 'flotilla',
    serviceAccount: 'flotilla-shim',
    clusterName: options.clusterName,
    queueUrl: options.queueUrl,
    summaryBucket: options.summaryBucket ?? STACK_NAMES.summaryBucket,
    region: options.server.region,
  }) as [ShimConfigMap, ShimDeployment];
  const container = deployment.spec.template.spec.containers[0];
  return spawnShim(configMap, container.env, options);
}

/**
 * Runs a rendered shim: the ConfigMap's files in a folder as the volume mount would put them, the
 * Deployment's environment (`heapMb` replaces its NODE_OPTIONS), the shim's kubeconfig, moto and the
 * shim role's keys; resolves once it started.
 */
export async function spawnShim(
  configMap: ShimConfigMap,
  env: readonly { name: string; value: string }[],
  options: { readonly server: Moto; readonly kubeconfigPath: string; readonly heapMb?: number },
): Promise<ShimProcess> {
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-shim-mount-'));
  fs.writeFileSync(path.join(mount, 'boot.mjs'), configMap.data['boot.mjs']);
  fs.writeFileSync(
    path.join(mount, 'shim.mjs.gz'),
    Buffer.from(configMap.binaryData['shim.mjs.gz'], 'base64'),
  );
  const deploymentEnv = Object.fromEntries(env.map((e) => [e.name, e.value]));
  const child = spawn(process.execPath, [path.join(mount, 'boot.mjs')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      ...deploymentEnv,
      ...(options.heapMb === undefined ? {} : { NODE_OPTIONS: `--max-old-space-size=${options.heapMb}` }),
      KUBECONFIG: options.kubeconfigPath,
      AWS_ENDPOINT_URL_SQS: options.server.endpoint,
      // moto's endpoint is an IP address, so the SDK addresses buckets by path, as moto needs on its
      // one endpoint for every service.
      AWS_ENDPOINT_URL_S3: options.server.endpoint,
      // The shim's Pod Identity role (its bundle carries its own SDK, out of the IAM check's reach;
      // test/infra/stack.test.ts pins that role to sending to the pod-event queue and writing the
      // summary object).
      AWS_ACCESS_KEY_ID: lambdaCredentials('shim').accessKeyId,
      AWS_SECRET_ACCESS_KEY: lambdaCredentials('shim').secretAccessKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor('the shim to start', async () => (output.includes('shim started') ? true : undefined), {
    timeoutMs: 30_000,
  });
  return {
    child,
    output: () => output,
    stop: () => {
      child.kill('SIGTERM');
      fs.rmSync(mount, { recursive: true, force: true });
    },
  };
}
