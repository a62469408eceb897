import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { renderClusterManifests } from '../../../infra/manifests.ts';
import { HarnessError } from '../errors.ts';
import { freePort, progress, secondsSince, startDaemon, waitFor } from '../proc.ts';
import { kubeBinaries } from './binaries.ts';
import { generateCredentials, SHADOW_CONTROLLER_USER } from './certs.ts';
import { describeApiError, flotillaCrds, installCrds } from './crds.ts';

/** What a test needs to reach the control plane of this run, and how long it took to start. */
export interface KubeCluster {
  readonly server: string;
  /**
   * Kubeconfig of a cluster administrator, for test set-up that plays a user, a kubelet or
   * kube-controller-manager. Never for Flotilla's own code.
   */
  readonly userKubeconfigPath: string;
  /** Kubeconfig of `flotilla-controller`, a user in the `flotilla:controller` group: Flotilla's Lambdas. */
  readonly controllerKubeconfigPath: string;
  /** Kubeconfig of `flotilla-throttled` (controller group, tiny API Priority and Fairness share). */
  readonly throttledKubeconfigPath: string;
  /** Kubeconfig of the shim's ServiceAccount (`flotilla/flotilla-shim`), with a bound token. */
  readonly shimKubeconfigPath: string;
  /**
   * Kubeconfig of `flotilla-shadow-controller`, in a shadow stack's group (`flotilla-shadow:controller`),
   * bound by the shadow stack's rendered read-only RBAC.
   */
  readonly shadowKubeconfigPath: string;
  /**
   * The API server's audit log of that user's requests (JSON lines, one per request, at the
   * Metadata level): what a shadow stack asked of the API server, as the server saw it.
   */
  readonly shadowAuditLogPath: string;
  readonly caFile: string;
  readonly kubernetesVersion: string;
  readonly timings: {
    readonly etcdSeconds: number;
    readonly apiserverSeconds: number;
    readonly crdSeconds: number;
    readonly controllersSeconds: number;
    readonly totalSeconds: number;
  };
}

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler on free loopback
 * ports, applies Flotilla's CRDs and waits until they are Established, the controllers are
 * healthy and the `default` ServiceAccount exists (so pods can be created). It takes
 * seconds: the global setup built the binaries before any test file ran (binaries.ts).
 */
export async function startKube(
  runDir: string,
  options: {
    /** More flags for kube-controller-manager (the scale bench's, which plays thousands of kubelets). */
    readonly controllerManagerArgs?: readonly string[];
  } = {},
): Promise<KubeCluster> {
  const began = Date.now();
  const dir = path.join(runDir, 'kube');
  const logDir = path.join(runDir, 'logs');
  const bins = kubeBinaries();
  const creds = await generateCredentials(path.join(dir, 'pki'), path.join(logDir, 'openssl.log'));
  const [etcdClient, etcdPeer, apiPort, cmPort, schedPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);

  let phase = Date.now();
  const etcd = startDaemon(runDir, 'etcd', bins.etcd, [
    '--name=flotilla-test',
    `--data-dir=${path.join(dir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=flotilla-test=http://127.0.0.1:${etcdPeer}`,
    '--unsafe-no-fsync',
    '--log-level=warn',
  ]);
  await waitFor(
    `etcd (log: ${etcd.logFile})`,
    async () => {
      const response = await fetch(`http://127.0.0.1:${etcdClient}/health`);
      const body = (await response.json()) as { health?: string };
      return body.health === 'true' ? true : undefined;
    },
    { timeoutMs: 30_000 },
  );
  const etcdSeconds = secondsSince(phase);

  phase = Date.now();
  const server = `https://127.0.0.1:${apiPort}`;
  const apiserver = startDaemon(runDir, 'kube-apiserver', bins.kubeApiserver, [
    `--etcd-servers=http://127.0.0.1:${etcdClient}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--tls-cert-file=${creds.servingCert}`,
    `--tls-private-key-file=${creds.servingKey}`,
    `--client-ca-file=${creds.caCert}`,
    `--token-auth-file=${creds.tokenFile}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${creds.serviceAccountPub}`,
    `--service-account-signing-key-file=${creds.serviceAccountKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    // On, as in every real cluster: the throttling test gives one user a tiny share.
    '--enable-priority-and-fairness=true',
    '--profiling=false',
    ...auditFlags(dir),
    '--v=1',
  ]);
  const ca = fs.readFileSync(creds.caCert);
  await waitFor(
    `kube-apiserver /readyz on ${server} (log: ${apiserver.logFile})`,
    async () =>
      (await httpsGet(`${server}/readyz`, { ca, token: creds.adminToken })) === 200 ? true : undefined,
    { timeoutMs: 90_000, intervalMs: 200 },
  );
  const apiserverSeconds = secondsSince(phase);

  const kubeconfigPath = path.join(dir, 'kubeconfig');
  fs.writeFileSync(
    kubeconfigPath,
    kubeconfigYaml(server, creds.caCert, 'flotilla-test-admin', creds.adminToken),
  );
  const controllerKubeconfigPath = path.join(dir, 'controller.kubeconfig');
  fs.writeFileSync(
    controllerKubeconfigPath,
    kubeconfigYaml(server, creds.caCert, 'flotilla-controller', creds.controllerToken),
  );
  const shadowKubeconfigPath = path.join(dir, 'shadow.kubeconfig');
  fs.writeFileSync(
    shadowKubeconfigPath,
    kubeconfigYaml(server, creds.caCert, SHADOW_CONTROLLER_USER, creds.shadowToken),
  );
  const throttledKubeconfigPath = path.join(dir, 'throttled.kubeconfig');
  fs.writeFileSync(
    throttledKubeconfigPath,
    kubeconfigYaml(server, creds.caCert, 'flotilla-throttled', creds.throttledToken),
  );
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);

  // Controllers start while the CRDs are applied: both take a few seconds.
  phase = Date.now();
  const componentArgs = [
    `--kubeconfig=${kubeconfigPath}`,
    `--authentication-kubeconfig=${kubeconfigPath}`,
    `--authorization-kubeconfig=${kubeconfigPath}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
  ];
  const controllerManager = startDaemon(runDir, 'kube-controller-manager', bins.kubeControllerManager, [
    ...componentArgs,
    `--secure-port=${cmPort}`,
    `--service-account-private-key-file=${creds.serviceAccountKey}`,
    `--root-ca-file=${creds.caCert}`,
    '--use-service-account-credentials=false',
    '--controllers=*',
    '--v=1',
    ...(options.controllerManagerArgs ?? []),
  ]);
  const scheduler = startDaemon(runDir, 'kube-scheduler', bins.kubeScheduler, [
    ...componentArgs,
    `--secure-port=${schedPort}`,
    '--v=1',
  ]);
  const crdStart = Date.now();
  await installCrds(kubeConfig, flotillaCrds());
  const crdSeconds = secondsSince(crdStart);
  // What a user applies after `cdk deploy`: the namespace, RBAC and the shim's ServiceAccount.
  const shimAccount = await applyClusterManifests(kubeConfig);
  for (const [component, port] of [
    [controllerManager, cmPort],
    [scheduler, schedPort],
  ] as const) {
    await waitFor(
      `${component.name} /healthz (log: ${component.logFile})`,
      async () =>
        (await httpsGet(`https://127.0.0.1:${port}/healthz`, { insecure: true })) === 200 ? true : undefined,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await waitFor(
    `the default ServiceAccount (made by kube-controller-manager; log: ${controllerManager.logFile})`,
    async () =>
      (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' })) ? true : undefined,
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  const controllersSeconds = secondsSince(phase);
  const shimKubeconfigPath = path.join(dir, 'shim.kubeconfig');
  const shimToken = await core.createNamespacedServiceAccountToken({
    name: shimAccount.name,
    namespace: shimAccount.namespace,
    body: { spec: { expirationSeconds: 24 * 3600, audiences: [] } },
  });
  fs.writeFileSync(
    shimKubeconfigPath,
    kubeconfigYaml(server, creds.caCert, 'flotilla-shim', shimToken.status?.token ?? ''),
  );
  const totalSeconds = secondsSince(began);
  progress(
    `Kubernetes ${bins.kubernetesVersion} ready on ${server} in ${totalSeconds}s ` +
      `(etcd ${etcdSeconds}s, apiserver ${apiserverSeconds}s, CRDs ${crdSeconds}s, controllers ${controllersSeconds}s)`,
  );
  return {
    server,
    userKubeconfigPath: kubeconfigPath,
    controllerKubeconfigPath,
    throttledKubeconfigPath,
    shimKubeconfigPath,
    shadowKubeconfigPath,
    shadowAuditLogPath: path.join(dir, AUDIT_LOG),
    caFile: creds.caCert,
    kubernetesVersion: bins.kubernetesVersion,
    timings: {
      etcdSeconds,
      apiserverSeconds,
      crdSeconds,
      controllersSeconds,
      totalSeconds,
    },
  };
}

/**
 * Applies the cluster manifests the stack renders (infra/manifests.ts), as a user's `kubectl apply`
 * after `cdk deploy`: everything but the CRDs, which installCrds already created from the same files.
 * Returns the shim's ServiceAccount.
 */
async function applyClusterManifests(
  kubeConfig: KubeConfig,
): Promise<{ readonly name: string; readonly namespace: string }> {
  const objects = kubeConfig.makeApiClient(KubernetesObjectApi);
  let shim: { name: string; namespace: string } | undefined;
  // The live stack's, then a shadow stack's beside it (its own namespace, shim and read-only group).
  const documents = [
    ...parseAllDocuments(renderClusterManifests()),
    ...parseAllDocuments(renderClusterManifests({ mode: 'shadow' })),
  ];
  for (const document of documents) {
    const object = document.toJS() as {
      kind?: string;
      metadata?: { name?: string; namespace?: string };
    } | null;
    if (object === null || object.kind === undefined || object.kind === 'CustomResourceDefinition') continue;
    try {
      await objects.create(loadYaml<KubernetesObject>(JSON.stringify(object)));
    } catch (error) {
      throw new HarnessError(
        `applying the rendered ${object.kind} "${object.metadata?.name}" failed: ${describeApiError(error)}`,
        { cause: error },
      );
    }
    if (
      shim === undefined &&
      object.kind === 'ServiceAccount' &&
      object.metadata?.name &&
      object.metadata.namespace
    ) {
      shim = { name: object.metadata.name, namespace: object.metadata.namespace };
    }
  }
  if (shim === undefined)
    throw new HarnessError('the rendered cluster manifests have no ServiceAccount for the shim');
  return shim;
}

function httpsGet(
  url: string,
  options: { readonly ca?: Buffer; readonly token?: string; readonly insecure?: boolean },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = https.get(
      url,
      {
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.insecure ? { rejectUnauthorized: false } : {}),
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
        timeout: 2_000,
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.once('timeout', () => request.destroy(new Error(`timeout on ${url}`)));
    request.once('error', reject);
  });
}

function kubeconfigYaml(server: string, caFile: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: flotilla-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: flotilla-test',
    '  context:',
    '    cluster: flotilla-test',
    `    user: ${user}`,
    'current-context: flotilla-test',
    '',
  ].join('\n');
}

const AUDIT_LOG = 'audit.log';

/**
 * The API server's audit of the shadow user alone (every other request at level None): written
 * as each request completes, so a test reads what it sent once its calls have returned.
 */
function auditFlags(dir: string): string[] {
  const policy = path.join(dir, 'audit-policy.yaml');
  fs.writeFileSync(
    policy,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: ["RequestReceived"]',
      'rules:',
      `  - level: Metadata`,
      `    users: ["${SHADOW_CONTROLLER_USER}"]`,
      '  - level: None',
      '',
    ].join('\n'),
  );
  return [
    `--audit-policy-file=${policy}`,
    `--audit-log-path=${path.join(dir, AUDIT_LOG)}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
  ];
}
