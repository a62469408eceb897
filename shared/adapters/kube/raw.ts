import { KubeConfig, RequestContext } from '@kubernetes/client-node';
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

// The bridge from a @kubernetes/client-node KubeConfig, for `flotilla explain` on a user's machine
// (whose kubeconfig may authenticate by running a command, as `aws eks get-token`, which the Lambdas'
// own reader, kubeconfig-file.ts, does not do) and for tests that act as a recording or throttled
// identity. The Lambdas do without it (kube-config.ts).

/** The kubeconfig at `path` (@default KUBECONFIG, then ~/.kube/config); its clients share connections. */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  reuseConnections(kc);
  if (path === undefined) kc.loadFromDefault();
  else kc.loadFromFile(path);
  return kc;
}

/**
 * Makes every request of `kc`'s clients go through one connection pool. @kubernetes/client-node
 * (2.0) gives each request a new dispatcher of its own, so each request opened a TCP connection and
 * made a TLS handshake. The first dispatcher it makes is kept and handed to every later request;
 * the credentials are headers applied per request, and the TLS options (CA, client certificate) are
 * those of the kubeconfig, the same for every request.
 */
function reuseConnections(kc: KubeConfig): void {
  const apply = kc.applySecurityAuthentication.bind(kc);
  let shared: ReturnType<RequestContext['getDispatcher']>;
  kc.applySecurityAuthentication = async (context: RequestContext) => {
    await apply(context);
    const made = context.getDispatcher();
    if (made === undefined) return;
    if (shared === undefined) shared = made;
    else if (made !== shared) context.setDispatcher(shared);
  };
}

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
