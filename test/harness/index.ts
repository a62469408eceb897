import type { KubeConfig } from '@kubernetes/client-node';
import { makeKubeHttp, type RawApi } from '../../shared/adapters/kube/http.ts';
import { makeKubeAccess } from '../../shared/adapters/kube/kube-config.ts';
import { loadKubeConfig } from '../../shared/adapters/kube/raw.ts';
import { type KubeCluster, startKube } from './kube/cluster.ts';
import { UserKubeConfig } from './kube/guard.ts';
import { sharedService } from './services.ts';

export { describeApiError } from './kube/crds.ts';
export { ControllerOwnedWriteError } from './kube/guard.ts';
export { awsClientConfig, harnessPython, type Moto, moto, resetMoto } from './moto.ts';

/** The run's Kubernetes control plane, with a client configuration per identity. */
export interface Kube extends KubeCluster {
  /**
   * A cluster administrator, for set-up that plays a user, a kubelet or kube-controller-manager.
   * Its clients refuse writes of what Flotilla's controllers own (see kube/guard.ts).
   */
  readonly userKubeConfig: KubeConfig;
  /** `flotilla-controller` in the `flotilla:controller` group, bound by the rendered RBAC: Flotilla's Lambdas. */
  readonly controllerKubeConfig: KubeConfig;
  /**
   * A new connection as `flotilla-controller`, made from its kubeconfig as the Lambdas make theirs
   * (`makeKubeAccess`), for Flotilla's kube adapter (`makeKubeCluster`).
   */
  controllerConnection(): RawApi;
  /** The shim's ServiceAccount, bound by the rendered RBAC. */
  readonly shimKubeConfig: KubeConfig;
  /**
   * A cluster administrator that plays Karpenter v1, the autoscaler a cluster ran before Flotilla
   * took it over: it writes what Karpenter's controllers wrote (NodeClaims, their status, labels and
   * finalizers), so it is never refused. Only for set-up before Flotilla runs (takeover tests).
   */
  readonly karpenterKubeConfig: KubeConfig;
}

/**
 * The real control plane of this test worker (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler), started on first use with Flotilla's CRDs and rendered cluster manifests
 * applied: seconds, as the global setup built the binaries before any test file ran.
 */
export async function kube(): Promise<Kube> {
  const cluster = await sharedService('kube', startKube, 3 * 60_000, { perWorker: true });
  const userKubeConfig = new UserKubeConfig();
  userKubeConfig.loadFromFile(cluster.userKubeconfigPath);
  return {
    ...cluster,
    userKubeConfig,
    controllerKubeConfig: load(cluster.controllerKubeconfigPath),
    controllerConnection: () =>
      makeKubeHttp(makeKubeAccess({ kind: 'file', path: cluster.controllerKubeconfigPath })),
    shimKubeConfig: load(cluster.shimKubeconfigPath),
    karpenterKubeConfig: load(cluster.userKubeconfigPath),
  };
}

/** A Flotilla identity's client-node configuration, for a test's own checks of what it may do. */
function load(file: string): KubeConfig {
  return loadKubeConfig(file);
}
