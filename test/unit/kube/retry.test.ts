import { describe, expect, it } from 'vitest';
import { makeCaller, makeLimiter } from '../../../shared/adapters/kube/call.ts';
import { ClusterApiError, ClusterNotFoundError } from '../../../shared/adapters/kube/errors.ts';
import { KubeHttpError } from '../../../shared/adapters/kube/http.ts';

// The retry policy of the Kubernetes adapter, with the answers an API server gives as the adapter's
// HTTP client raises them. That the adapter really gets through a throttling API server is shown on
// the harness's kube-apiserver (test/integration/kube/throttling.test.ts).

const answer = (code: number, headers: Record<string, string> = {}) =>
  new KubeHttpError(code, `HTTP ${code}`, JSON.stringify({ message: `answer ${code}` }), headers);

function caller(options: { deadlineMs?: number; maxAttempts?: number } = {}) {
  const waits: number[] = [];
  const retries: { attempt: number; httpStatus: number | undefined }[] = [];
  const api = makeCaller(makeLimiter(4), 1_000, {
    random: () => 0.5,
    sleep: async (ms) => void waits.push(ms),
    onRetry: (r) => retries.push({ attempt: r.attempt, httpStatus: r.httpStatus }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: () => options.deadlineMs }),
  });
  return { api, waits, retries };
}

/** A call that fails with `failures` in turn, then answers `ok`. */
function failing(failures: readonly unknown[]) {
  let calls = 0;
  return {
    run: async () => {
      const next = failures[calls];
      calls += 1;
      if (next !== undefined) throw next;
      return 'ok';
    },
    calls: () => calls,
  };
}

describe('Kubernetes API retries', () => {
  it('retries 429 after its Retry-After, and 500, 502, 503, 504, with growing jittered waits', async () => {
    const { api, waits, retries } = caller();
    const call = failing([answer(429, { 'retry-after': '1' }), answer(500), answer(503), answer(504)]);
    await expect(api.call('list nodes', call.run)).resolves.toBe('ok');
    expect(call.calls()).toBe(5);
    expect(retries.map((r) => r.httpStatus)).toEqual([429, 500, 503, 504]);
    // Retry-After (1 s) outweighs the first backoff; the others are half of base·2^n (random 0.5).
    expect(waits).toEqual([1000, 200, 400, 800]);
  });

  it('retries a call that got no answer (timeout or dropped connection)', async () => {
    const { api } = caller();
    const dropped = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const call = failing([dropped]);
    await expect(api.call('get node "a"', call.run)).resolves.toBe('ok');
    expect(call.calls()).toBe(2);
  });

  it('gives up after the last attempt with the typed error', async () => {
    const { api } = caller({ maxAttempts: 3 });
    const call = failing([answer(503), answer(503), answer(503), answer(503)]);
    const error = await api.call('list pods', call.run).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterApiError);
    expect((error as ClusterApiError).httpStatus).toBe(503);
    expect(call.calls()).toBe(3);
  });

  it('does not retry answers: 404, 409, 403, and the 429 of a PodDisruptionBudget', async () => {
    for (const code of [404, 409, 403, 422]) {
      const { api } = caller();
      const call = failing([answer(code)]);
      await expect(api.call('patch node "a"', call.run)).rejects.toBeInstanceOf(ClusterApiError);
      expect(call.calls()).toBe(1);
    }
    const { api } = caller();
    const eviction = failing([answer(429)]);
    const error = await api
      .call('evict pod "a/b"', eviction.run, { tooManyRequestsIsAnswer: true })
      .catch((e: unknown) => e);
    expect((error as ClusterApiError).httpStatus).toBe(429);
    expect(eviction.calls()).toBe(1);
    expect(await api.call('get x', failing([answer(404)]).run).catch((e: unknown) => e)).toBeInstanceOf(
      ClusterNotFoundError,
    );
  });

  it('starts no retry that would run past the deadline', async () => {
    const { api, waits } = caller({ deadlineMs: Date.now() + 300 });
    const call = failing([answer(503), answer(429, { 'retry-after': '2' })]);
    const error = await api.call('list nodes', call.run).catch((e: unknown) => e);
    // The first wait (100 ms) fits; the second (Retry-After 2 s) would not.
    expect(waits).toEqual([100]);
    expect((error as ClusterApiError).httpStatus).toBe(429);
  });
});
