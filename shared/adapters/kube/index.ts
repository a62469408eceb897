export { type Limiter, makeLimiter, retryOnConflict } from './call.ts';
export {
  ClusterApiError,
  ClusterConflictError,
  ClusterNotFoundError,
  ClusterTimeoutError,
} from './errors.ts';
export { type KubeAccess, makeKubeHttp, type RawApi } from './http.ts';
export { type KubeClusterOptions, makeKubeCluster } from './kube-cluster.ts';
export { type KubeConfigSource, makeKubeAccess, makeTokenCache, type TokenCache } from './kube-config.ts';
