import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterTimeoutError, makeKubeCluster, makeKubeHttp } from '../../../shared/adapters/kube/index.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';

// A loopback server that accepts requests and never answers: each call must give up on its own.
let server: http.Server;
let url = '';

beforeAll(async () => {
  server = http.createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('call timeout', () => {
  it('aborts a call the API server does not answer and says which call', async () => {
    const cluster = makeKubeCluster({
      connection: makeKubeHttp({ server: new URL(url), tls: {}, headers: async () => ({}) }),
      logger: makeLogger({}, { sink: () => {} }),
      callTimeoutMs: 200,
      listIdleTimeoutMs: 200,
      // A timed-out call is retried once here; test/unit/kube/retry.test.ts covers the policy.
      retry: { maxAttempts: 2, baseDelayMs: 10 },
    });
    const started = Date.now();
    const error = await cluster.nodePools().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterTimeoutError);
    expect((error as Error).message).toContain('list nodepools');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
