import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/** AWS credentials, or a provider of them, as the SDK's signer takes them. */
export type Credentials = ConstructorParameters<typeof SignatureV4>[0]['credentials'];

/** Options of {@link makeEksToken}. */
export interface EksTokenOptions {
  readonly clusterName: string;
  readonly region: string;
  readonly credentials: Credentials;
  /** STS endpoint; defaults to the regional one. */
  readonly stsEndpoint?: string;
  /** Signing time; defaults to now. */
  readonly now?: Date;
}

/** Seconds an EKS token is accepted after signing: the presigned URL's lifetime. */
export const eksTokenLifetimeSeconds = 60;

/**
 * A bearer token for the EKS API server, made as `aws eks get-token` makes it: a presigned STS
 * GetCallerIdentity URL that names the cluster in the signed `x-k8s-aws-id` header, base64url
 * encoded behind `k8s-aws-v1.`. EKS checks it by calling the URL; the identity it returns is
 * mapped to Kubernetes groups by the cluster's access entries. The server accepts the token for
 * 15 minutes; callers should make a new one well before that.
 */
export async function makeEksToken(options: EksTokenOptions): Promise<string> {
  const endpoint = new URL(options.stsEndpoint ?? `https://sts.${options.region}.amazonaws.com/`);
  const signer = new SignatureV4({
    service: 'sts',
    region: options.region,
    credentials: options.credentials,
    sha256: Sha256,
    uriEscapePath: true,
  });
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
      path: endpoint.pathname,
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: endpoint.host, 'x-k8s-aws-id': options.clusterName },
    },
    { expiresIn: eksTokenLifetimeSeconds, ...(options.now ? { signingDate: options.now } : {}) },
  );
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([key, value]) => (Array.isArray(value) ? value.map((v) => [key, v]) : [[key, value ?? '']]))
    .map(([key, value]) => `${encodeURIComponent(String(key))}=${encodeURIComponent(String(value))}`)
    .join('&');
  const url = `${endpoint.protocol}//${endpoint.host}${presigned.path}?${query}`;
  return `k8s-aws-v1.${Buffer.from(url).toString('base64url')}`;
}

/** SHA-256 (and HMAC-SHA-256 when given a secret) in the shape SignatureV4 expects. */
class Sha256 {
  private readonly hash;

  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }

  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(toBuffer(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

function toBuffer(data: string | ArrayBuffer | ArrayBufferView): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}
