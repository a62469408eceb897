import { describe, expect, it } from 'vitest';
import { makeMemoryLeaseStore } from '../../../shared/adapters/memory/index.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { provision } from '../../../shared/usecases/provision.ts';
import { addPendingPod, scenarioWorld } from './provision-world.ts';

// When a provisioning run reads what: the cluster's objects and the offering catalog while the batch
// window is open, the pods once more when it closes, and nothing of it again before the plan.

interface WorldOptions {
  /** A read that fails. */
  readonly fail?: { readonly method: keyof Cluster; readonly error: Error };
  /** What happens in the cluster during the first batch wait. */
  readonly duringWait?: () => void;
}

function makeWorld({ fail, duringWait }: WorldOptions = {}) {
  const { clock, cluster: memory, cloud, resolver } = scenarioWorld();
  const calls: string[] = [];
  const cluster = new Proxy(memory, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]) => {
        calls.push(key);
        if (fail?.method === key) return Promise.reject(fail.error);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const instanceTypes = cloud.instanceTypes.bind(cloud);
  const pendingPod = (name: string) => addPendingPod(memory, name);
  const run = () =>
    provision(
      {
        cluster,
        cloud: {
          ...cloud,
          instanceTypes: (nodeClass) => {
            calls.push('instanceTypes');
            return instanceTypes(nodeClass);
          },
        },
        leases: makeMemoryLeaseStore(),
        clock,
        sleep: async (ms) => {
          if (!calls.includes('batch wait')) duringWait?.();
          calls.push('batch wait');
          // The reads started before the wait run while it lasts.
          await new Promise((resolve) => setTimeout(resolve, 5));
          clock.advance(ms);
        },
        logger: makeLogger({}, { sink: () => {} }),
        nodeClassResolver: resolver,
      },
      { holder: 'run-1' },
    );
  return { calls, pendingPod, run, memory };
}

describe('a provisioning run reads during its batch window', () => {
  it('reads the cluster objects and the catalog while the window is open, and the pods only as the batch polls them', async () => {
    const w = makeWorld();
    w.pendingPod('web-1');
    const result = await w.run();
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.claims.filter((c) => c.kind === 'launched')).toHaveLength(1);

    const wait = w.calls.indexOf('batch wait');
    const before = w.calls.slice(0, wait);
    // The first poll, then every read of the state, then the catalog, all before the window closed.
    expect(before[0]).toBe('provisionablePods');
    for (const read of ['nodes', 'nodePools', 'nodeClasses', 'nodeClaims', 'daemonSets', 'namespaceLabels']) {
      expect(before).toContain(read);
    }
    expect(w.calls.slice(0, w.calls.indexOf('instanceTypes'))).toContain('nodeClaims');
    // The poll that closed the batch is the one the plan uses: two pod reads in all.
    expect(w.calls.filter((c) => c === 'provisionablePods')).toHaveLength(2);
    const after = w.calls.slice(wait + 1);
    expect(after.slice(0, after.indexOf('createNodeClaim'))).not.toContain('nodeClaims');
  });

  it('plans for the pods of the last poll: a pod gone by then is not planned for', async () => {
    const w = makeWorld({
      // Gone while the window is open (bound elsewhere, or deleted).
      duringWait: () => w.memory.removePod('default', 'web-2'),
    });
    w.pendingPod('web-1');
    w.pendingPod('web-2');
    const run = w.run();
    const result = await run;
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.pods).toBe(1);
  });

  it('fails with the read error of the objects when one fails while the window is open', async () => {
    const error = new Error('nodes could not be listed');
    const w = makeWorld({ fail: { method: 'nodes', error } });
    w.pendingPod('web-1');
    await expect(w.run()).rejects.toBe(error);
  });
});
