import http from 'node:http';
import https from 'node:https';
import { createGunzip } from 'node:zlib';
import { ApiException, type KubeConfig } from '@kubernetes/client-node';

// JSON over HTTPS to the API server without @kubernetes/client-node's object model: the reads of
// large lists go through here, so that a page is parsed once as plain JSON (no class instances,
// no Date objects), converted into domain objects and dropped. Responses are gzipped by the API
// server when asked (APIResponseCompression). Errors are client-node's ApiException, so the
// adapter's one translation (errors.ts) and retries (call.ts) apply to both paths alike.

/** One request to the API server. */
export interface RawRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. `/api/v1/pods`. */
  readonly path: string;
  /** Query parameters; undefined ones are left out. */
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** Serialised as JSON. */
  readonly body?: unknown;
  /** @default 'application/json' */
  readonly contentType?: string;
  /** Aborts the request (a timeout, the caller's deadline). */
  readonly signal?: AbortSignal;
}

/** What was sent and received so far, for benchmarks and logs. */
export interface RawStats {
  readonly requests: number;
  /** Bytes of response bodies as they came over the wire (compressed when gzipped). */
  readonly bytesOnWire: number;
  /** Bytes of response bodies once decompressed. */
  readonly bytesDecoded: number;
}

export interface RawApi {
  /**
   * Sends the request and returns the parsed JSON body.
   * @throws ApiException with the HTTP status, the body and the headers for a status of 400 or more;
   *   the network's error (or an AbortError) when no answer came.
   */
  request(request: RawRequest): Promise<unknown>;
  stats(): RawStats;
}

/** The path and query of a request, encoded. */
export function requestPath(request: Pick<RawRequest, 'path' | 'query'>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) params.set(key, String(value));
  }
  const query = params.toString();
  return query === '' ? request.path : `${request.path}?${query}`;
}

/**
 * A RawApi for the kubeconfig's current cluster and user. The TLS material is read once (one
 * keep-alive connection pool); credentials are applied to every request, so a refreshed token
 * (EKS) is used as soon as it is made.
 */
export function makeRawApi(kubeConfig: KubeConfig): RawApi {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const server = new URL(cluster.server);
  const secure = server.protocol === 'https:';
  let agent: http.Agent | undefined;
  let requests = 0;
  let bytesOnWire = 0;
  let bytesDecoded = 0;

  async function options(request: RawRequest): Promise<https.RequestOptions> {
    const opts: https.RequestOptions = {};
    await kubeConfig.applyToHTTPSOptions(opts);
    if (agent === undefined) {
      agent = secure
        ? new https.Agent({
            keepAlive: true,
            maxSockets: 16,
            ...(opts.ca === undefined ? {} : { ca: opts.ca }),
            ...(opts.cert === undefined ? {} : { cert: opts.cert }),
            ...(opts.key === undefined ? {} : { key: opts.key }),
            ...(opts.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: opts.rejectUnauthorized }),
          })
        : new http.Agent({ keepAlive: true, maxSockets: 16 });
    }
    const headers: Record<string, string> = {
      ...((opts.headers ?? {}) as Record<string, string>),
      Accept: 'application/json',
      'Accept-Encoding': 'gzip',
    };
    if (request.body !== undefined) headers['Content-Type'] = request.contentType ?? 'application/json';
    const basePath = server.pathname.replace(/\/$/, '');
    return {
      method: request.method,
      hostname: server.hostname,
      port: server.port === '' ? undefined : Number(server.port),
      path: `${basePath}${requestPath(request)}`,
      headers,
      agent,
      ...(opts.auth === undefined ? {} : { auth: opts.auth }),
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    };
  }

  return {
    async request(request) {
      const opts = await options(request);
      const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
      requests += 1;
      const { status, headers, text } = await new Promise<{
        status: number;
        headers: http.IncomingHttpHeaders;
        text: string;
      }>((resolve, reject) => {
        const req = (secure ? https : http).request(opts, (res) => {
          const chunks: Buffer[] = [];
          const gzipped = res.headers['content-encoding'] === 'gzip';
          res.on('data', (chunk: Buffer) => {
            bytesOnWire += chunk.length;
          });
          const body = gzipped ? res.pipe(createGunzip()) : res;
          body.on('data', (chunk: Buffer) => {
            bytesDecoded += chunk.length;
            chunks.push(chunk);
          });
          body.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          body.on('error', reject);
          res.on('error', reject);
        });
        req.on('error', reject);
        if (payload !== undefined) req.write(payload);
        req.end();
      });
      if (status >= 400) {
        const flat: Record<string, string> = {};
        for (const [key, value] of Object.entries(headers)) {
          if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(', ') : value;
        }
        throw new ApiException(
          status,
          `${request.method} ${request.path}: HTTP ${status}`,
          text.slice(0, 2_000),
          flat,
        );
      }
      return text === '' ? undefined : JSON.parse(text);
    },
    stats: () => ({ requests, bytesOnWire, bytesDecoded }),
  };
}
