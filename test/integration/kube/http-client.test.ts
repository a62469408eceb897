import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeHttpError, makeKubeHttp, type RawApi } from '../../../shared/adapters/kube/http.ts';
import { makeKubeAccess } from '../../../shared/adapters/kube/kube-config.ts';
import { kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';

// The Lambdas' and the shim's HTTP client (http.ts) against the harness's kube-apiserver, as the
// identities the stack ships: request bodies framed on a kept-alive connection and the API
// server's error answers (the controller), a timeout that fires while a watch streams (the shim,
// the one identity that watches).

const id = randomBytes(3).toString('hex');
const ns = `http-${id}`;
let core: CoreV1Api;
let api: RawApi;
let shim: RawApi;

beforeAll(async () => {
  const cube = await kube();
  core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  api = cube.controllerConnection();
  shim = makeKubeHttp(makeKubeAccess({ kind: 'file', path: cube.shimKubeconfigPath }));
  await createNamespace(core, ns);
});

afterAll(async () => {
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
});

describe("the Lambdas' Kubernetes HTTP client", () => {
  it("sends a DELETE's body framed, so the API server reads it and the connection's next request as one", async () => {
    // A pod no node may take, created as a user would.
    const pod = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'p' },
        spec: {
          nodeSelector: { 'http-client': id },
          containers: [{ name: 'app', image: 'app' }],
        },
      },
    });
    const path = `/api/v1/namespaces/${ns}/pods/p`;
    const sent = api.stats().requests;
    // The body's UID precondition is read: a wrong one is refused.
    const refused = await api
      .request({
        method: 'DELETE',
        path,
        query: { gracePeriodSeconds: 0 },
        body: { gracePeriodSeconds: 0, preconditions: { uid: 'not-the-pod' } },
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeHttpError);
    expect((refused as KubeHttpError).code).toBe(409);
    await api.request({
      method: 'DELETE',
      path,
      query: { gracePeriodSeconds: 0 },
      body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid } },
    });
    // The next requests on the kept-alive connection are answered as themselves.
    const pods = (await api.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` })) as {
      items: unknown[];
    };
    expect(pods.items).toEqual([]);
    expect(api.stats().requests - sent).toBe(3);
  });

  it("raises an error answer as a KubeHttpError with the server's status and message", async () => {
    const error = await api
      .request({ method: 'GET', path: `/apis/karpenter.sh/v1/nodeclaims/missing-${id}` })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeHttpError);
    expect((error as KubeHttpError).code).toBe(404);
    expect(JSON.parse((error as KubeHttpError).body)).toMatchObject({
      message: `nodeclaims.karpenter.sh "missing-${id}" not found`,
    });
  });

  it('rejects with the timeout when it fires while the answer streams in', async () => {
    // A watch answers at once and then streams for as long as the request lasts.
    const error = await shim
      .request({
        method: 'GET',
        path: '/api/v1/pods',
        query: { watch: 'true' },
        signal: AbortSignal.timeout(1_000),
      })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('TimeoutError');
  });

  it('hands a watch no line after its caller aborts it, and ends without an error', async () => {
    // Twenty pods no node may take, created as a user would, so the watch's initial events arrive
    // several to a chunk.
    for (let i = 0; i < 20; i++) {
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: `w-${i}`, annotations: { filler: 'x'.repeat(2_000) } },
          spec: { nodeSelector: { 'http-client': id }, containers: [{ name: 'app', image: 'app' }] },
        },
      });
    }
    const stop = new AbortController();
    const seen: unknown[] = [];
    await shim.stream(
      {
        path: `/api/v1/namespaces/${ns}/pods`,
        query: { watch: 'true', resourceVersion: '0', timeoutSeconds: 5 },
        signal: stop.signal,
      },
      (line) => {
        seen.push(line);
        stop.abort();
      },
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ type: 'ADDED' });
  });
});
