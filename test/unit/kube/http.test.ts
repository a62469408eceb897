import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeHttpError, makeKubeHttp } from '../../../shared/adapters/kube/http.ts';

// The adapter's HTTP client against a loopback server that records what arrives on the wire.
const received: { method: string; url: string; contentType: string | undefined; body: string }[] = [];
let server: http.Server;
let url = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
        body: Buffer.concat(chunks).toString('utf8'),
      });
      if (req.url?.startsWith('/stalls')) {
        // Half an answer, then nothing.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"kind":"NodeList","items":[');
        return;
      }
      if (req.url?.startsWith('/missing')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', message: 'pods "x" not found', code: 404 }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', status: 'Success' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('the Kubernetes HTTP client', () => {
  it("frames a DELETE's body by its length, so the next request on the connection is read as one", async () => {
    received.length = 0;
    const api = makeKubeHttp({
      server: new URL(url),
      tls: {},
      headers: async () => ({ Authorization: 'Bearer t' }),
    });
    const options = { gracePeriodSeconds: 30, preconditions: { uid: 'u-1' } };
    await api.request({
      method: 'DELETE',
      path: '/api/v1/namespaces/a/pods/p',
      query: { gracePeriodSeconds: 30 },
      body: options,
    });
    await api.request({ method: 'GET', path: '/api/v1/nodes', query: { limit: 500, continue: undefined } });
    await api.request({
      method: 'PATCH',
      path: '/api/v1/nodes/n',
      body: { metadata: { labels: { a: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(received).toEqual([
      {
        method: 'DELETE',
        url: '/api/v1/namespaces/a/pods/p?gracePeriodSeconds=30',
        contentType: 'application/json',
        body: JSON.stringify(options),
      },
      { method: 'GET', url: '/api/v1/nodes?limit=500', contentType: undefined, body: '' },
      {
        method: 'PATCH',
        url: '/api/v1/nodes/n',
        contentType: 'application/merge-patch+json',
        body: '{"metadata":{"labels":{"a":"b"}}}',
      },
    ]);
    expect(api.stats().requests).toBe(3);
  });

  it('rejects with the timeout when it fires while the answer streams in', async () => {
    const api = makeKubeHttp({ server: new URL(url), tls: {}, headers: async () => ({}) });
    const error = await api
      .request({ method: 'GET', path: '/stalls', signal: AbortSignal.timeout(100) })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('TimeoutError');
  });

  it("raises an error answer as a KubeHttpError with the server's status and body", async () => {
    const api = makeKubeHttp({ server: new URL(url), tls: {}, headers: async () => ({}) });
    const error = await api.request({ method: 'GET', path: '/missing' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeHttpError);
    expect((error as KubeHttpError).code).toBe(404);
    expect(JSON.parse((error as KubeHttpError).body)).toMatchObject({ message: 'pods "x" not found' });
  });
});
