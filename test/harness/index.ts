import { KubeConfig } from '@kubernetes/client-node';
import { type KubeCluster, startKube } from './kube/cluster.ts';
import { sharedService } from './services.ts';

export { describeApiError } from './kube/cluster.ts';
export { awsClientConfig, harnessPython, type Moto, moto, resetMoto } from './moto.ts';

/** The run's Kubernetes control plane, with a client configuration for it. */
export interface Kube extends KubeCluster {
  readonly kubeConfig: KubeConfig;
}

/**
 * The real control plane of this test run (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler), started on first use with Flotilla's CRDs applied. A cold first run builds
 * the binaries with `go build`, which can take several minutes.
 */
export async function kube(): Promise<Kube> {
  const cluster = await sharedService('kube', startKube, 30 * 60_000);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(cluster.kubeconfigPath);
  return { ...cluster, kubeConfig };
}
