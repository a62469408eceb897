export { type Limiter, makeLimiter, retryOnConflict } from './call.ts';
export {
  ClusterApiError,
  ClusterConflictError,
  ClusterNotFoundError,
  ClusterTimeoutError,
} from './errors.ts';
export { type KubeClusterOptions, makeKubeCluster } from './kube-cluster.ts';
export { type KubeConfigSource, makeKubeConfig, makeTokenCache, type TokenCache } from './kube-config.ts';
