import fs from 'node:fs';
import type { KubeAccess } from '../../shared/adapters/kube/http.ts';
import { bearer, readKubeconfigFile, tokenFromFile } from '../../shared/adapters/kube/kubeconfig-file.ts';

// How the shim reaches the API server without @kubernetes/client-node (whose size would not fit the
// ConfigMap the shim ships in): in a pod, with its ServiceAccount's token (re-read as the kubelet
// rotates it) and the cluster's CA; elsewhere (tests, a laptop), from a kubeconfig file.

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The pod's own ServiceAccount, as client-go's in-cluster configuration reads it. */
function inCluster(env: NodeJS.ProcessEnv): KubeAccess {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (host === undefined)
    throw new Error('not in a pod (KUBERNETES_SERVICE_HOST is unset) and KUBECONFIG is unset');
  return {
    server: new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`),
    tls: { ca: fs.readFileSync(`${SERVICE_ACCOUNT_DIR}/ca.crt`) },
    headers: bearer(tokenFromFile(`${SERVICE_ACCOUNT_DIR}/token`)),
  };
}

/** The API server the shim talks to: KUBECONFIG when set, else the pod's ServiceAccount. */
export function loadKubeAccess(env: NodeJS.ProcessEnv): KubeAccess {
  const kubeconfig = env['KUBECONFIG'];
  return kubeconfig === undefined || kubeconfig === '' ? inCluster(env) : readKubeconfigFile(kubeconfig);
}
