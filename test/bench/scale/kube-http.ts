import fs from 'node:fs';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { controllerOwnedWrite } from '../../harness/kube/guard.ts';

// A small JSON client for bulk loading: one keep-alive agent, no object model (client-node's
// serialisation of a 12 KB pod costs more CPU than the API server spends storing it, and the loader
// sends tens of thousands). Writes go through the harness's guard, as the admin kubeconfig's do:
// set-up never writes what a Flotilla controller owns.

export class KubeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly body: string,
  ) {
    super(`${method} ${path}: HTTP ${status}: ${body.slice(0, 400)}`);
  }
}

export interface KubeHttp {
  readonly server: string;
  /** Sends one request; JSON in and out. Throws KubeHttpError on a status of 400 or more. */
  request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; body: T; bytes: number }>;
  /** The response body as text (for /metrics). */
  text(path: string): Promise<string>;
  close(): void;
}

/** A client authenticated as the kubeconfig's user (bearer token, the cluster's CA). */
export function makeKubeHttp(kubeconfigPath: string, options: { readonly guarded: boolean }): KubeHttp {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const cluster = config.getCurrentCluster();
  const user = config.getCurrentUser();
  if (cluster === null || user === null || user.token === undefined)
    throw new Error(`${kubeconfigPath}: no cluster or token`);
  const ca = cluster.caFile !== undefined ? fs.readFileSync(cluster.caFile) : undefined;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 96, ...(ca ? { ca } : {}) });
  const url = new URL(cluster.server);
  const token = user.token;

  function send(method: string, path: string, payload: string | undefined, contentType: string) {
    return new Promise<{ status: number; text: string; bytes: number }>((resolve, reject) => {
      const request = https.request(
        {
          host: url.hostname,
          port: url.port,
          path,
          method,
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }),
          },
          timeout: 120_000,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const buffer = Buffer.concat(chunks);
            resolve({
              status: response.statusCode ?? 0,
              text: buffer.toString('utf8'),
              bytes: buffer.length,
            });
          });
          response.on('error', reject);
        },
      );
      request.once('timeout', () => request.destroy(new Error(`timeout: ${method} ${path}`)));
      request.once('error', reject);
      if (payload !== undefined) request.write(payload);
      request.end();
    });
  }

  return {
    server: cluster.server,
    async request<T>(method: string, path: string, body?: unknown, contentType = 'application/json') {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      if (options.guarded) {
        const why = controllerOwnedWrite(method, path.split('?')[0] ?? path, payload);
        if (why !== undefined) throw new Error(`bench set-up tried ${method} ${path}: ${why}`);
      }
      for (let attempt = 1; ; attempt += 1) {
        let response: { status: number; text: string; bytes: number };
        try {
          response = await send(method, path, payload, contentType);
        } catch (error) {
          // A reset connection under load: the request is retried (every load write is idempotent
          // or tolerates 409).
          if (attempt >= 5) throw error;
          await new Promise((r) => setTimeout(r, 200 * attempt));
          continue;
        }
        if ((response.status === 429 || response.status >= 500) && attempt < 5) {
          await new Promise((r) => setTimeout(r, 200 * attempt));
          continue;
        }
        if (response.status >= 400) throw new KubeHttpError(response.status, method, path, response.text);
        return {
          status: response.status,
          body: (response.text === '' ? undefined : JSON.parse(response.text)) as T,
          bytes: response.bytes,
        };
      }
    },
    async text(path: string) {
      const response = await send('GET', path, undefined, '');
      if (response.status >= 400) throw new KubeHttpError(response.status, 'GET', path, response.text);
      return response.text;
    },
    close: () => agent.destroy(),
  };
}

/** True for a 409 Conflict / AlreadyExists. */
export function isConflict(error: unknown): boolean {
  return error instanceof KubeHttpError && error.status === 409;
}

/** True for a 404. */
export function isNotFound(error: unknown): boolean {
  return error instanceof KubeHttpError && error.status === 404;
}
