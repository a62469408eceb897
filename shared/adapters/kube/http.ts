import http from 'node:http';
import https from 'node:https';
import { createGunzip } from 'node:zlib';

// JSON over HTTPS to the API server without @kubernetes/client-node's object model: the adapter's
// large reads and the shim's watches go through here, so that a list is parsed item by item as
// plain JSON (no class instances, no Date objects), converted into domain objects and dropped.
// Responses are gzipped by the API server when asked (APIResponseCompression). Nothing here depends
// on client-node, so the shim's bundle can do without it; raw.ts binds it to a client-node
// KubeConfig for the Lambdas. A status of 400 or more is a KubeHttpError (code, body, headers),
// which the adapter's one translation (errors.ts) reads as it reads client-node's ApiException.

/**
 * What zlib hands back at a time from a gzipped answer: a large list comes in tens of MB, which
 * zlib's default 16 KiB would hand over in thousands of callbacks.
 */
const GUNZIP_CHUNK_BYTES = 256 * 1024;

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
  /** Fails the request when no byte arrives for this long (a server that stopped answering). */
  readonly idleTimeoutMs?: number;
}

/** What was sent and received so far, for benchmarks and logs. */
export interface RawStats {
  readonly requests: number;
  /** Bytes of response bodies as they came over the wire (compressed when gzipped). */
  readonly bytesOnWire: number;
  /** Bytes of response bodies once decompressed. */
  readonly bytesDecoded: number;
}

/** What a list says besides its items. */
export interface ListHead {
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
}

export interface RawApi {
  /**
   * Sends the request and returns the parsed JSON body.
   * @throws KubeHttpError with the HTTP status, the body and the headers for a status of 400 or more;
   *   the network's error (or an AbortError) when no answer came.
   */
  request(request: RawRequest): Promise<unknown>;
  /**
   * GETs a list and hands each item to `onItem` as it arrives, parsed on its own: the memory a list
   * takes is that of its largest item, whatever its length. Returns the rest of the list (its
   * resourceVersion). When `onItem` throws, the request is aborted and the error rethrown.
   * @throws as `request`.
   */
  list(request: Omit<RawRequest, 'method' | 'body'>, onItem: (item: unknown) => void): Promise<ListHead>;
  /**
   * GETs a stream of JSON lines (a watch) and hands each line to `onLine` until the server ends it
   * or `request.signal` aborts it (which resolves, not rejects).
   * @throws as `request`, for the response's status; a dropped connection rejects.
   */
  stream(request: Omit<RawRequest, 'method' | 'body'>, onLine: (line: unknown) => void): Promise<void>;
  stats(): RawStats;
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
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

/** An HTTP error answer of the API server. */
export class KubeHttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly body: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'KubeHttpError';
  }
}

/** How to reach an API server: its address, its TLS material, and a request's credentials. */
export interface KubeAccess {
  readonly server: URL;
  readonly tls: {
    readonly ca?: string | Buffer;
    readonly cert?: string | Buffer;
    readonly key?: string | Buffer;
    readonly rejectUnauthorized?: boolean;
    /** The name the server's certificate is checked against, when not the server's host. */
    readonly servername?: string;
  };
  /** The headers that authenticate one request (a bearer token), applied to every request. */
  headers(request: RawRequest, url: string): Promise<Readonly<Record<string, string>>>;
}

/** A RawApi over one keep-alive connection pool to the API server `access` names. */
export function makeKubeHttp(access: KubeAccess): RawApi {
  const server = access.server;
  const secure = server.protocol === 'https:';
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: 16, ...access.tls })
    : new http.Agent({ keepAlive: true, maxSockets: 16 });
  const basePath = server.pathname.replace(/\/$/, '');
  let requests = 0;
  let bytesOnWire = 0;
  let bytesDecoded = 0;

  async function options(request: RawRequest, payload?: string): Promise<https.RequestOptions> {
    const path = `${basePath}${requestPath(request)}`;
    const headers: Record<string, string> = {
      ...(await access.headers(request, `${server.origin}${path}`)),
      Accept: 'application/json',
      'Accept-Encoding': 'gzip',
    };
    if (payload !== undefined) {
      headers['Content-Type'] = request.contentType ?? 'application/json';
      // Node sends a DELETE's body unframed (no chunked encoding for that method): without its
      // length, the API server would read it as the connection's next request.
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return {
      method: request.method,
      // An IPv6 address comes bracketed in a URL, and without brackets to the resolver.
      hostname: server.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: server.port === '' ? undefined : Number(server.port),
      path,
      headers,
      agent,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    };
  }

  /** Sends a GET and feeds the decoded body to `feed` as text; rejects with KubeHttpError on ≥ 400. */
  async function streamBody(request: RawRequest, feed: (text: string) => void): Promise<void> {
    const opts = await options(request);
    requests += 1;
    await new Promise<void>((resolve, reject) => {
      const req = (secure ? https : http).request(opts, (res) => {
        const status = res.statusCode ?? 0;
        const gzipped = res.headers['content-encoding'] === 'gzip';
        res.on('data', (chunk: Buffer) => {
          bytesOnWire += chunk.length;
        });
        const body = gzipped ? res.pipe(createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES })) : res;
        body.setEncoding('utf8');
        const failed: string[] = [];
        body.on('data', (text: string) => {
          bytesDecoded += Buffer.byteLength(text);
          if (status >= 400) {
            failed.push(text);
            return;
          }
          try {
            feed(text);
          } catch (error) {
            req.destroy();
            reject(error);
          }
        });
        body.on('end', () => {
          if (status < 400) {
            resolve();
            return;
          }
          reject(
            new KubeHttpError(
              status,
              `${request.method} ${request.path}: HTTP ${status}`,
              failed.join('').slice(0, 2_000),
              flatHeaders(res.headers),
            ),
          );
        });
        body.on('error', (error) => (request.signal?.aborted === true ? resolve() : reject(error)));
        res.on('error', (error) => (request.signal?.aborted === true ? resolve() : reject(error)));
      });
      req.on('error', (error) => (request.signal?.aborted === true ? resolve() : reject(error)));
      if (request.idleTimeoutMs !== undefined) {
        const ms = request.idleTimeoutMs;
        req.setTimeout(ms, () => {
          const error = new Error(`no answer from the API server for ${ms} ms`);
          error.name = 'TimeoutError';
          req.destroy(error);
        });
      }
      req.end();
    });
  }

  return {
    async list(request, onItem) {
      const splitter = new ListItemSplitter((json) => onItem(JSON.parse(json)));
      await streamBody({ ...request, method: 'GET' }, (text) => splitter.push(text));
      // A list cut short is never taken for a whole one: its head does not parse.
      if (request.signal?.aborted === true) throw request.signal.reason;
      return JSON.parse(splitter.head()) as ListHead;
    },

    async stream(request, onLine) {
      let rest = '';
      // Once the caller aborts, nothing more is handed over: not the lines still in the chunk, and
      // not the line cut short at the end, which is no error of the stream's.
      const stopped = () => request.signal?.aborted === true;
      await streamBody({ ...request, method: 'GET' }, (text) => {
        if (stopped()) return;
        const lines = (rest + text).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (stopped()) return;
          if (line.trim() !== '') onLine(JSON.parse(line));
        }
      });
      if (!stopped() && rest.trim() !== '') onLine(JSON.parse(rest));
    },

    async request(request) {
      const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
      const opts = await options(request, payload);
      requests += 1;
      const { status, headers, text } = await new Promise<{
        status: number;
        headers: http.IncomingHttpHeaders;
        text: string;
      }>((resolve, reject) => {
        // A timeout that fires while the answer streams in breaks the response with a plain
        // "aborted": the signal's reason says it was the timeout.
        const fail = (error: unknown) =>
          reject(request.signal?.aborted === true ? request.signal.reason : error);
        const req = (secure ? https : http).request(opts, (res) => {
          const chunks: Buffer[] = [];
          const gzipped = res.headers['content-encoding'] === 'gzip';
          res.on('data', (chunk: Buffer) => {
            bytesOnWire += chunk.length;
          });
          const body = gzipped ? res.pipe(createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES })) : res;
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
          body.on('error', fail);
          res.on('error', fail);
        });
        req.on('error', fail);
        if (payload !== undefined) req.write(payload);
        req.end();
      });
      if (status >= 400) {
        throw new KubeHttpError(
          status,
          `${request.method} ${request.path}: HTTP ${status}`,
          text.slice(0, 2_000),
          flatHeaders(headers),
        );
      }
      return text === '' ? undefined : JSON.parse(text);
    },
    stats: () => ({ requests, bytesOnWire, bytesDecoded }),
  };
}

/**
 * Cuts the items out of a list's JSON as it streams in (`{"kind":…,"metadata":{…},"items":[{…},…]}`):
 * each item's text is handed over whole, and nothing but the current item is held, so a list of any
 * size is read in the memory of its largest object. Strings (with escapes) are honoured. What is
 * not an item (kind, metadata) is kept for `head()`.
 */
export class ListItemSplitter {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Inside the `items` array. */
  private inItems = false;
  /** Inside one item: its text so far (whole chunks are sliced, not copied char by char). */
  private inItem = false;
  private item = '';
  private outside = '';

  constructor(private readonly onItem: (json: string) => void) {}

  /** Feeds the next piece of the document. */
  push(chunk: string): void {
    let itemFrom = this.inItem ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk.charCodeAt(i);
      if (!this.inItems) this.outside += chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (ch === 92)
          this.escaped = true; // backslash
        else if (ch === 34) this.inString = false; // quote
        continue;
      }
      if (ch === 34) {
        this.inString = true;
      } else if (ch === 123 || ch === 91) {
        // { or [
        this.depth += 1;
        if (!this.inItems && ch === 91 && this.depth === 2 && /"items"\s*:\s*\[$/.test(this.outside)) {
          this.inItems = true;
        } else if (this.inItems && this.depth === 3 && !this.inItem) {
          this.inItem = true;
          itemFrom = i;
        }
      } else if (ch === 125 || ch === 93) {
        // } or ]
        if (this.inItem && this.depth === 3) {
          this.onItem(this.item + chunk.slice(itemFrom, i + 1));
          this.item = '';
          this.inItem = false;
          itemFrom = -1;
        } else if (this.inItems && this.depth === 2 && ch === 93) {
          this.inItems = false;
          this.outside += ']';
        }
        this.depth -= 1;
      }
    }
    if (this.inItem && itemFrom >= 0) this.item += chunk.slice(itemFrom);
  }

  /** The document without its items, e.g. `{"kind":"PodList",…,"items":[]}`. */
  head(): string {
    return this.outside;
  }
}
