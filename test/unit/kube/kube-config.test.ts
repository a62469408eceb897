import type https from 'node:https';
import { describe, expect, it } from 'vitest';
import { makeKubeConfig, makeTokenCache } from '../../../shared/adapters/kube/kube-config.ts';
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

describe('makeKubeConfig', () => {
  it('for EKS, sends a bearer token that is refreshed after ten minutes', async () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const signedAt: (Date | undefined)[] = [];
    const kc = makeKubeConfig({
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
    const header = async () => {
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      return (opts.headers as Record<string, string> | undefined)?.['Authorization'];
    };
    expect(kc.getCurrentCluster()?.server).toBe('https://ABC.gr7.us-west-2.eks.amazonaws.com');
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
