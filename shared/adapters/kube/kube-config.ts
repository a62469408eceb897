import type { Clock } from '../../ports/clock.ts';
import { type Credentials, makeEksToken } from './eks-token.ts';
import type { KubeAccess } from './http.ts';
import { readKubeconfigFile } from './kubeconfig-file.ts';

// How the Lambdas reach the API server, without @kubernetes/client-node (whose 2.3 MB of code
// and dependencies were most of each bundle and of its cold start): an EKS token made from the
// function's role, or a kubeconfig file in local runs and tests (kubeconfig-file.ts).

/** How to reach the API server: a kubeconfig file (local runs, tests) or an EKS cluster (Lambda). */
export type KubeConfigSource =
  | {
      readonly kind: 'file';
      /** Path of the kubeconfig. */
      readonly path: string;
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

/** The address, TLS material and credentials of either source; tokens are made as they are needed. */
export function makeKubeAccess(source: KubeConfigSource): KubeAccess {
  if (source.kind === 'file') return readKubeconfigFile(source.path);
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
  return {
    server: new URL(source.endpoint),
    tls: { ca: Buffer.from(source.caData, 'base64') },
    headers: async () => ({ Authorization: `Bearer ${await tokens.get()}` }),
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
