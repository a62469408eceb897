import { type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { makeKubeHttp, type RawApi } from './http.ts';

export {
  KubeHttpError,
  type ListHead,
  ListItemSplitter,
  makeKubeHttp,
  type RawApi,
  type RawRequest,
  type RawStats,
  requestPath,
} from './http.ts';

/**
 * A RawApi (http.ts) for a client-node KubeConfig's current cluster and user: TLS material read
 * once; credentials applied to every request as client-node applies them to its own (a refreshed
 * EKS token, and whatever a KubeConfig subclass checks or records about the request).
 */
export function makeRawApi(kubeConfig: KubeConfig): RawApi {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const tls: {
    ca?: string | Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    rejectUnauthorized?: boolean;
  } = {};
  // Read on the first request, not here: at a Lambda's cold start the credentials (an EKS token
  // made from the role's) may not be there yet, and nothing may be asked of them before it is needed.
  const readTls = async () => {
    const opts: { ca?: unknown; cert?: unknown; key?: unknown; rejectUnauthorized?: boolean } = {};
    await kubeConfig.applyToHTTPSOptions(opts as never);
    if (opts.ca !== undefined) tls.ca = opts.ca as Buffer;
    if (opts.cert !== undefined) tls.cert = opts.cert as Buffer;
    if (opts.key !== undefined) tls.key = opts.key as Buffer;
    if (opts.rejectUnauthorized !== undefined) tls.rejectUnauthorized = opts.rejectUnauthorized;
  };
  let http: RawApi | undefined;
  const api = async (): Promise<RawApi> => {
    if (http !== undefined) return http;
    await readTls();
    http ??= makeKubeHttp({
      server: new URL(cluster.server),
      tls,
      headers: async (request, url) => {
        const context = new RequestContext(
          url,
          request.method as ConstructorParameters<typeof RequestContext>[1],
        );
        if (request.body !== undefined) context.setBody(JSON.stringify(request.body));
        await kubeConfig.applySecurityAuthentication(context);
        return context.getHeaders();
      },
    });
    return http;
  };
  return {
    request: async (request) => (await api()).request(request),
    list: async (request, onItem) => (await api()).list(request, onItem),
    stream: async (request, onLine) => (await api()).stream(request, onLine),
    stats: () => http?.stats() ?? { requests: 0, bytesOnWire: 0, bytesDecoded: 0 },
  };
}
