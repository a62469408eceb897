import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CONTROLLER_GROUP, SHADOW_CONTROLLER_GROUP } from '../../../infra/manifests.ts';
import { runLogged } from '../proc.ts';

/** Files the control plane authenticates with, generated fresh for each run. */
export interface ClusterCredentials {
  readonly caCert: string;
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  /** RSA key that signs service-account tokens, and its public half. */
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
  /** Static bearer token of a cluster admin (group system:masters): test set-up playing a user. */
  readonly adminToken: string;
  /** Static bearer token of `flotilla-controller`, in Flotilla's controller group. */
  readonly controllerToken: string;
  /**
   * Static bearer token of `flotilla-throttled`, also in the controller group; the throttling
   * test gives this user alone a tiny API Priority and Fairness share.
   */
  readonly throttledToken: string;
  /** Static bearer token of `flotilla-shadow-controller`, in a shadow stack's read-only group. */
  readonly shadowToken: string;
  readonly tokenFile: string;
}

/**
 * Generates, with openssl, a throwaway CA, a serving certificate for 127.0.0.1 and the in-cluster
 * names of the API server signed by it, the service-account signing key pair, and an admin
 * bearer token.
 */
export async function generateCredentials(dir: string, logFile: string): Promise<ClusterCredentials> {
  fs.mkdirSync(dir, { recursive: true });
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => runLogged('openssl', args, { logFile });
  const creds: ClusterCredentials = {
    caCert: file('ca.crt'),
    caKey: file('ca.key'),
    servingCert: file('apiserver.crt'),
    servingKey: file('apiserver.key'),
    serviceAccountKey: file('sa.key'),
    serviceAccountPub: file('sa.pub'),
    adminToken: randomBytes(24).toString('hex'),
    controllerToken: randomBytes(24).toString('hex'),
    throttledToken: randomBytes(24).toString('hex'),
    shadowToken: randomBytes(24).toString('hex'),
    tokenFile: file('tokens.csv'),
  };
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '3',
    '-subj',
    '/CN=flotilla-test-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-keyout',
    creds.caKey,
    '-out',
    creds.caCert,
  );
  const extFile = file('apiserver.ext');
  fs.writeFileSync(
    extFile,
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
      '',
    ].join('\n'),
  );
  await openssl(
    'req',
    '-new',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=kube-apiserver',
    '-keyout',
    creds.servingKey,
    '-out',
    file('apiserver.csr'),
  );
  await openssl(
    'x509',
    '-req',
    '-in',
    file('apiserver.csr'),
    '-CA',
    creds.caCert,
    '-CAkey',
    creds.caKey,
    '-CAcreateserial',
    '-days',
    '3',
    '-extfile',
    extFile,
    '-out',
    creds.servingCert,
  );
  await openssl('genrsa', '-out', creds.serviceAccountKey, '2048');
  await openssl('rsa', '-in', creds.serviceAccountKey, '-pubout', '-out', creds.serviceAccountPub);
  fs.writeFileSync(
    creds.tokenFile,
    [
      `${creds.adminToken},flotilla-test-admin,flotilla-test-admin,"system:masters"`,
      `${creds.controllerToken},flotilla-controller,flotilla-controller,"${CONTROLLER_GROUP}"`,
      `${creds.throttledToken},flotilla-throttled,flotilla-throttled,"${CONTROLLER_GROUP}"`,
      `${creds.shadowToken},${SHADOW_CONTROLLER_USER},${SHADOW_CONTROLLER_USER},"${SHADOW_CONTROLLER_GROUP}"`,
      '',
    ].join('\n'),
  );
  return creds;
}

/** The user a shadow stack's Lambdas are in the harness (in SHADOW_CONTROLLER_GROUP). */
export const SHADOW_CONTROLLER_USER = 'flotilla-shadow-controller';
