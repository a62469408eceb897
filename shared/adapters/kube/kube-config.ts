import { KubeConfig, type RequestContext, type User } from '@kubernetes/client-node';
import type { Clock } from '../../ports/clock.ts';
import { type Credentials, makeEksToken } from './eks-token.ts';

/** How to reach the API server: a kubeconfig file (local runs, tests) or an EKS cluster (Lambda). */
export type KubeConfigSource =
  | {
      readonly kind: 'file';
      /** Path of the kubeconfig; @default the KUBECONFIG environment variable, then ~/.kube/config. */
      readonly path?: string;
    }
  | {
      readonly kind: 'eks';
      readonly clusterName: string;
      readonly region: string;
      /** `https://…eks.amazonaws.com` */
      readonly endpoint: string;
      /** The cluster's certificate authority, base64 PEM (DescribeCluster `certificateAuthority.data`). */
      readonly caData: string;
      readonly credentials: Credentials;
      readonly stsEndpoint?: string;
      /** @default the system clock */
      readonly clock?: Clock;
      /** Make a new token once the current one is this old. @default 600 (EKS accepts 900) */
      readonly refreshAfterSeconds?: number;
      /** Token maker; @default makeEksToken (replaceable in tests). */
      readonly makeToken?: typeof makeEksToken;
    };

const EKS_USER = 'flotilla-eks';

/** Builds the client configuration for either source; its clients reuse their connections. */
export function makeKubeConfig(source: KubeConfigSource): KubeConfig {
  const kc = new KubeConfig();
  reuseConnections(kc);
  if (source.kind === 'file') {
    if (source.path === undefined) kc.loadFromDefault();
    else kc.loadFromFile(source.path);
    return kc;
  }
  kc.loadFromClusterAndUser(
    { name: source.clusterName, server: source.endpoint, caData: source.caData, skipTLSVerify: false },
    { name: EKS_USER },
  );
  const tokens = makeTokenCache({
    clock: source.clock ?? { now: () => new Date() },
    refreshAfterMs: (source.refreshAfterSeconds ?? 600) * 1000,
    make: (now) =>
      (source.makeToken ?? makeEksToken)({
        clusterName: source.clusterName,
        region: source.region,
        credentials: source.credentials,
        now,
        ...(source.stsEndpoint === undefined ? {} : { stsEndpoint: source.stsEndpoint }),
      }),
  });
  kc.addAuthenticator({
    isAuthProvider: (user: User) => user.name === EKS_USER,
    applyAuthentication: async (_user, opts) => {
      opts.headers = { ...opts.headers, Authorization: `Bearer ${await tokens.get()}` };
    },
  });
  return kc;
}

/**
 * Makes every request of `kc`'s clients go through one connection pool. @kubernetes/client-node
 * (2.0) gives each request a new dispatcher of its own, so each request opened a TCP connection and
 * made a TLS handshake: a disruption pass of 2,000 requests opened 2,000 connections (`npm run
 * bench:scale`). The first dispatcher it makes is kept and handed to every later request; the
 * credentials are headers applied per request, and the TLS options (CA, client certificate) are
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

/** A bearer token reused until it is `refreshAfterMs` old; concurrent callers share one refresh. */
export interface TokenCache {
  get(): Promise<string>;
}

export function makeTokenCache(options: {
  readonly clock: Clock;
  readonly refreshAfterMs: number;
  readonly make: (now: Date) => Promise<string>;
}): TokenCache {
  let current: { token: Promise<string>; madeAtMs: number } | undefined;
  return {
    get() {
      const now = options.clock.now();
      if (current === undefined || now.getTime() - current.madeAtMs >= options.refreshAfterMs) {
        const made = { token: options.make(now), madeAtMs: now.getTime() };
        // A failed refresh is not cached: the next call tries again.
        made.token.catch(() => {
          if (current === made) current = undefined;
        });
        current = made;
      }
      return current.token;
    },
  };
}
