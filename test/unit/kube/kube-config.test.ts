import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeKubeAccess, makeTokenCache } from '../../../shared/adapters/kube/kube-config.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';

describe('makeTokenCache', () => {
  it('reuses a token until it is refreshAfter old, then makes a new one', async () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const madeAt: string[] = [];
    const cache = makeTokenCache({
      clock,
      refreshAfterMs: 600_000,
      make: async (now) => {
        madeAt.push(now.toISOString());
        return `token-${madeAt.length}`;
      },
    });
    expect(await cache.get()).toBe('token-1');
    clock.advance(599_999);
    expect(await cache.get()).toBe('token-1');
    clock.advance(1);
    expect(await cache.get()).toBe('token-2');
    expect(madeAt).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:10:00.000Z']);
  });

  it('shares one refresh between concurrent callers and retries after a failed one', async () => {
    const clock = makeManualClock();
    let calls = 0;
    const cache = makeTokenCache({
      clock,
      refreshAfterMs: 1000,
      make: async () => {
        calls++;
        if (calls === 1) throw new Error('sts down');
        return `token-${calls}`;
      },
    });
    await expect(cache.get()).rejects.toThrow('sts down');
    const [a, b] = await Promise.all([cache.get(), cache.get()]);
    expect([a, b, calls]).toEqual(['token-2', 'token-2', 2]);
  });
});

describe('makeKubeAccess', () => {
  it('for EKS, sends a bearer token that is refreshed after ten minutes, and trusts the cluster CA', async () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const signedAt: (Date | undefined)[] = [];
    const access = makeKubeAccess({
      kind: 'eks',
      clusterName: 'prod',
      region: 'us-west-2',
      endpoint: 'https://ABC.gr7.us-west-2.eks.amazonaws.com',
      caData: Buffer.from('not a real CA').toString('base64'),
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      clock,
      makeToken: async (options) => {
        signedAt.push(options.now);
        return `k8s-aws-v1.${options.clusterName}-${signedAt.length}`;
      },
    });
    const header = async () =>
      (await access.headers({ method: 'GET', path: '/api' }, `${access.server.origin}/api`))['Authorization'];
    expect(access.server.href).toBe('https://abc.gr7.us-west-2.eks.amazonaws.com/');
    expect(String(access.tls.ca)).toBe('not a real CA');
    expect(signedAt).toEqual([]);
    expect(await header()).toBe('Bearer k8s-aws-v1.prod-1');
    clock.advance(9 * 60_000);
    expect(await header()).toBe('Bearer k8s-aws-v1.prod-1');
    clock.advance(60_000);
    expect(await header()).toBe('Bearer k8s-aws-v1.prod-2');
    expect(signedAt.map((d) => d?.toISOString())).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:10:00.000Z',
    ]);
  });
});

describe('makeKubeAccess from a kubeconfig file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
  const write = (
    name: string,
    user: string,
    cluster = '    server: https://127.0.0.1:6443\n    certificate-authority: ca.crt',
  ) => {
    const file = path.join(dir, name);
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: here',
        'contexts:',
        '- name: other',
        '  context: { cluster: far, user: far }',
        '- name: here',
        '  context: { cluster: near, user: me }',
        'clusters:',
        '- name: far',
        '  cluster: { server: https://far.example }',
        '- name: near',
        '  cluster:',
        cluster,
        'users:',
        '- name: far',
        '  user: { token: far-token }',
        '- name: me',
        '  user:',
        user,
        '',
      ].join('\n'),
    );
    return file;
  };
  fs.writeFileSync(path.join(dir, 'ca.crt'), 'the CA');
  fs.writeFileSync(path.join(dir, 'token'), 'file-token\n');
  fs.writeFileSync(path.join(dir, 'client.crt'), 'the cert');
  const auth = async (file: string) =>
    (await makeKubeAccess({ kind: 'file', path: file }).headers({ method: 'GET', path: '/' }, ''))[
      'Authorization'
    ];

  it("reads the current context's server, CA (relative to the file) and token", async () => {
    const file = write('token.yaml', '    token: inline-token');
    const access = makeKubeAccess({ kind: 'file', path: file });
    expect(access.server.href).toBe('https://127.0.0.1:6443/');
    expect(String(access.tls.ca)).toBe('the CA');
    expect(await auth(file)).toBe('Bearer inline-token');
    expect(await auth(write('token-file.yaml', '    tokenFile: token'))).toBe('Bearer file-token');
  });

  it('takes a client certificate and key, as files or data, and CA data', async () => {
    const file = write(
      'cert.yaml',
      `    client-certificate: client.crt\n    client-key-data: ${Buffer.from('the key').toString('base64')}`,
      `    server: https://127.0.0.1:6443\n    tls-server-name: kubernetes.default\n    certificate-authority-data: ${Buffer.from('inline CA').toString('base64')}`,
    );
    const access = makeKubeAccess({ kind: 'file', path: file });
    expect([String(access.tls.cert), String(access.tls.key), String(access.tls.ca)]).toEqual([
      'the cert',
      'the key',
      'inline CA',
    ]);
    expect(access.tls.servername).toBe('kubernetes.default');
    expect(await auth(file)).toBeUndefined();
  });

  it('refuses a user it cannot authenticate as, naming how that user authenticates', () => {
    const exec = write('exec.yaml', '    exec: { command: aws, args: [eks, get-token] }');
    expect(() => makeKubeAccess({ kind: 'file', path: exec })).toThrow(/sets exec, which is not supported/);
    const impersonating = write('as.yaml', '    token: t\n    as: admin');
    expect(() => makeKubeAccess({ kind: 'file', path: impersonating })).toThrow(
      /sets as, which is not supported/,
    );
    const none = write('none.yaml', '    {}');
    expect(() => makeKubeAccess({ kind: 'file', path: none })).toThrow(/no credentials/);
    const half = write('half.yaml', '    client-certificate: client.crt');
    expect(() => makeKubeAccess({ kind: 'file', path: half })).toThrow(/without the other/);
  });
});
