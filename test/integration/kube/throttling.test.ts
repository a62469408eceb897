import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubeAccess, makeKubeCluster, makeKubeHttp } from '../../../shared/adapters/kube/index.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { reconcileLifecycle } from '../../../shared/usecases/lifecycle/lifecycle.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { type Kube, kube } from '../../harness/index.ts';
import { throttleUser } from '../../harness/kube/throttled-user.ts';

// A kube-apiserver that answers 429 to a share of requests, as a busy cluster does: API Priority
// and Fairness gives the user `flotilla-throttled` (in the flotilla:controller group, so with
// Flotilla's RBAC) a priority level of a few seats that rejects what does not fit. Flotilla's
// passes must still complete, retrying what was rejected.

const LEVEL = 'flotilla-throttled';
let cube: Kube;

let unthrottle: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  cube = await kube();
  unthrottle = await throttleUser(cube.userKubeConfig, LEVEL, 500);
});

afterAll(() => unthrottle());

describe('Flotilla against a throttling API server', () => {
  it('completes its passes, retrying the requests the API server rejected with 429', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { level: 'debug', sink: (line) => lines.push(JSON.parse(line)) });
    // Three invocations at once, each with its own client, as concurrent Lambdas would be.
    const clusters = [1, 2, 3].map(() =>
      makeKubeCluster({
        connection: makeKubeHttp(makeKubeAccess({ kind: 'file', path: cube.throttledKubeconfigPath })),
        logger,
        maxConcurrentCalls: 8,
      }),
    );
    const rejected = () =>
      lines.filter((l) => l['message'] === 'kube call retried' && l['httpStatus'] === 429).length;

    let bursts = 0;
    // Until the API server has rejected something (it takes a burst or two to outgrow 3 seats).
    while (rejected() === 0 && bursts < 10) {
      bursts += 1;
      const results = await Promise.all(
        clusters.flatMap((cluster) => [
          reconcileLifecycle({ cluster, logger, metrics: quietMetrics }, new Date()),
          Promise.all([
            cluster.nodes(),
            cluster.provisionablePods(),
            cluster.nodeClaims(),
            cluster.daemonSets(),
            cluster.podDisruptionBudgets(),
            cluster.namespaceLabels(),
          ]),
        ]),
      );
      // Every pass and every read came back whole.
      expect(results).toHaveLength(6);
    }
    expect(rejected(), 'requests the API server rejected with 429 and Flotilla retried').toBeGreaterThan(0);
    expect(lines.filter((l) => l['level'] === 'error')).toEqual([]);
  });
});
