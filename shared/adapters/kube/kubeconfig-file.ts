import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { KubeAccess } from './http.ts';

// A kubeconfig file read without @kubernetes/client-node, whose size would fill a Lambda's cold
// start and not fit the ConfigMap the shim ships in. Its current context gives the server, the CA
// (a file or data), and the user's credentials: a token (inline or a file, read again as it
// rotates) or a client certificate and key (files or data). A user authenticated any other way
// (exec, an auth provider, a password) or acting as another (impersonation) is refused by name:
// nothing here runs a command. `tls-server-name` is honoured; a proxy is not.

/** A token file is read again after this long (projected tokens rotate hourly). */
const TOKEN_REREAD_MS = 60_000;

/** A token read from `file`, again once it is a minute old. */
export function tokenFromFile(file: string): () => string {
  let token = '';
  let readAtMs = 0;
  return () => {
    if (token === '' || Date.now() - readAtMs > TOKEN_REREAD_MS) {
      token = fs.readFileSync(file, 'utf8').trim();
      readAtMs = Date.now();
    }
    return token;
  };
}

/** Headers that carry a bearer token. */
export const bearer =
  (token: () => string): KubeAccess['headers'] =>
  async () => ({ Authorization: `Bearer ${token()}` });

interface NamedEntry<T> {
  readonly name?: string;
  readonly cluster?: T;
  readonly user?: T;
  readonly context?: T;
}

type Fields = Readonly<Record<string, unknown>>;

/** Ways of authenticating, or of acting as another user, that this reader does not carry out. */
const UNSUPPORTED_USER_FIELDS = [
  'exec',
  'auth-provider',
  'username',
  'password',
  'as',
  'as-uid',
  'as-groups',
  'as-user-extra',
];

/** The API server and credentials of the current context of the kubeconfig at `file`. */
export function readKubeconfigFile(file: string): KubeAccess {
  const config = (parse(fs.readFileSync(file, 'utf8')) ?? {}) as {
    readonly 'current-context'?: string;
    readonly contexts?: readonly NamedEntry<{ readonly cluster?: string; readonly user?: string }>[];
    readonly clusters?: readonly NamedEntry<Fields>[];
    readonly users?: readonly NamedEntry<Fields>[];
  };
  const dir = path.dirname(path.resolve(file));
  // Relative paths in a kubeconfig are relative to the file, as kubectl reads them.
  const read = (value: unknown) => fs.readFileSync(path.resolve(dir, String(value)));
  const context = config.contexts?.find((c) => c.name === config['current-context'])?.context;
  const cluster = config.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = config.users?.find((u) => u.name === context?.user)?.user ?? {};
  const server = cluster?.['server'];
  if (typeof server !== 'string')
    throw new Error(`${file}: the current context names no cluster with a server`);
  const unsupported = UNSUPPORTED_USER_FIELDS.filter(
    (field) => user[field] !== undefined && user[field] !== null,
  );
  if (unsupported.length > 0) {
    throw new Error(
      `${file}: the current user sets ${unsupported.join(', ')}, which is not supported here: only a token (token, tokenFile) or a client certificate (client-certificate, client-key), as itself`,
    );
  }
  const text = (fields: Fields | undefined, key: string) =>
    typeof fields?.[key] === 'string' && fields[key] !== '' ? (fields[key] as string) : undefined;
  const data = (key: string) => {
    const inline = text(user, `${key}-data`);
    const file = text(user, key);
    return inline !== undefined ? Buffer.from(inline, 'base64') : file === undefined ? undefined : read(file);
  };
  const cert = data('client-certificate');
  const key = data('client-key');
  if ((cert === undefined) !== (key === undefined))
    throw new Error(`${file}: the current user has a client certificate or key without the other`);
  const token = text(user, 'token');
  const tokenFile = text(user, 'tokenFile');
  if (token === undefined && tokenFile === undefined && cert === undefined) {
    throw new Error(
      `${file}: the current user has no credentials (token, tokenFile or a client certificate)`,
    );
  }
  const caFile = text(cluster, 'certificate-authority');
  const caData = text(cluster, 'certificate-authority-data');
  const serverName = text(cluster, 'tls-server-name');
  return {
    server: new URL(server),
    tls: {
      ...(caFile !== undefined ? { ca: read(caFile) } : {}),
      ...(caData !== undefined ? { ca: Buffer.from(caData, 'base64') } : {}),
      ...(cluster?.['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
      ...(serverName === undefined ? {} : { servername: serverName }),
      ...(cert !== undefined && key !== undefined ? { cert, key } : {}),
    },
    headers:
      token !== undefined
        ? bearer(() => token)
        : tokenFile !== undefined
          ? bearer(tokenFromFile(path.resolve(dir, tokenFile)))
          : async () => ({}),
  };
}
