import fs from 'node:fs';
import { parse } from 'yaml';
import type { KubeAccess } from '../../shared/adapters/kube/http.ts';

// How the shim reaches the API server without @kubernetes/client-node (whose size would not fit the
// ConfigMap the shim ships in): in a pod, with its ServiceAccount's token (re-read as the kubelet
// rotates it) and the cluster's CA; elsewhere (tests, a laptop), from a kubeconfig file that names
// a server, a CA and a token.

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A token file is read again after this long (projected tokens rotate hourly). */
const TOKEN_REREAD_MS = 60_000;

function tokenFrom(file: string): () => string {
  let token = '';
  let readAtMs = 0;
  return () => {
    if (token === '' || Date.now() - readAtMs > TOKEN_REREAD_MS) {
      token = fs.readFileSync(file, 'utf8').trim();
      readAtMs = Date.now();
    }
    return token;
  };
}

const bearer =
  (token: () => string): KubeAccess['headers'] =>
  async () => ({
    Authorization: `Bearer ${token()}`,
  });

/** The pod's own ServiceAccount, as client-go's in-cluster configuration reads it. */
function inCluster(env: NodeJS.ProcessEnv): KubeAccess {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (host === undefined)
    throw new Error('not in a pod (KUBERNETES_SERVICE_HOST is unset) and KUBECONFIG is unset');
  return {
    server: new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`),
    tls: { ca: fs.readFileSync(`${SERVICE_ACCOUNT_DIR}/ca.crt`) },
    headers: bearer(tokenFrom(`${SERVICE_ACCOUNT_DIR}/token`)),
  };
}

interface NamedEntry<T> {
  readonly name?: string;
  readonly cluster?: T;
  readonly user?: T;
  readonly context?: T;
}

/** A kubeconfig's current context: server, CA (file or data), token (inline or file). */
function fromKubeconfig(file: string): KubeAccess {
  const config = (parse(fs.readFileSync(file, 'utf8')) ?? {}) as {
    readonly 'current-context'?: string;
    readonly contexts?: readonly NamedEntry<{ readonly cluster?: string; readonly user?: string }>[];
    readonly clusters?: readonly NamedEntry<Record<string, string | boolean | undefined>>[];
    readonly users?: readonly NamedEntry<Record<string, string | undefined>>[];
  };
  const context = config.contexts?.find((c) => c.name === config['current-context'])?.context;
  const cluster = config.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = config.users?.find((u) => u.name === context?.user)?.user;
  const server = cluster?.['server'];
  if (typeof server !== 'string')
    throw new Error(`${file}: the current context names no cluster with a server`);
  const caFile = cluster?.['certificate-authority'];
  const caData = cluster?.['certificate-authority-data'];
  const token = user?.['token'];
  const tokenFile = user?.['tokenFile'];
  if (token === undefined && tokenFile === undefined) {
    throw new Error(
      `${file}: the shim authenticates with a token (token or tokenFile), and the current user has none`,
    );
  }
  return {
    server: new URL(server),
    tls: {
      ...(typeof caFile === 'string' ? { ca: fs.readFileSync(caFile) } : {}),
      ...(typeof caData === 'string' ? { ca: Buffer.from(caData, 'base64') } : {}),
      ...(cluster?.['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    },
    headers: bearer(token !== undefined ? () => token : tokenFrom(tokenFile ?? '')),
  };
}

/** The API server the shim talks to: KUBECONFIG when set, else the pod's ServiceAccount. */
export function loadKubeAccess(env: NodeJS.ProcessEnv): KubeAccess {
  const kubeconfig = env['KUBECONFIG'];
  return kubeconfig === undefined || kubeconfig === '' ? inCluster(env) : fromKubeconfig(kubeconfig);
}
