import { MemoryTag, makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import type { TerminationSweepDeps } from '../../../../shared/usecases/termination/driver.ts';
import { setUpTermination } from '../../../../shared/usecases/termination/setup.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// A cluster with terminating NodeClaims on the in-memory twins, and the termination drive set up on
// them as the termination Lambda's handler sets it up (setUpTermination), on a virtual clock: a
// sleep advances the clock, and the kubelet removes pods whose grace period has run out.

export const CLUSTER = 'drive-test';
const T0 = Date.parse('2026-11-21T10:00:00Z');

export interface TerminatingClaim {
  /** Running pods on its Node. @default 0 */
  readonly pods?: number;
  /** A PodDisruptionBudget allowing no eviction of those pods. */
  readonly blockedByBudget?: boolean;
  /** Its instance was not launched by Flotilla (so terminating it is refused). */
  readonly foreignInstance?: boolean;
  /** The NodeClaim's `spec.terminationGracePeriod`. */
  readonly terminationGracePeriod?: string;
  /** What the user deleted: the NodeClaim, its Node, or nothing yet. @default 'nodeClaim' */
  readonly deleted?: 'nodeClaim' | 'node' | 'nothing';
}

export function makeTerminationWorld(budgetMs = 10_000) {
  const { clock, memory: cluster, cloud, lines, logger, metrics } = memoryWorld(CLUSTER, new Date(T0));
  const queue = makeMemoryTerminationQueue(clock);
  const passes: string[] = [];

  /** The kubelet: a terminating pod is gone once its grace period has run out. */
  function kubelet(): void {
    for (const raw of cluster.list('Pod')) {
      const meta = raw['metadata'] as {
        name: string;
        namespace: string;
        deletionTimestamp?: string;
        deletionGracePeriodSeconds?: number;
      };
      if (meta.deletionTimestamp === undefined) continue;
      const goneAt = Date.parse(meta.deletionTimestamp) + (meta.deletionGracePeriodSeconds ?? 0) * 1000;
      if (clock.now().getTime() >= goneAt) cluster.removePod(meta.namespace, meta.name);
    }
  }

  // The termination Lambda as its handler sets it up, each pass over a NodeClaim remembered.
  const termination = setUpTermination(
    {
      cluster,
      cloud,
      logger,
      metrics,
      terminationQueue: queue,
      clock,
      sleep: async (ms) => {
        clock.advance(ms);
        kubelet();
      },
    },
    { budgetMs },
  );
  const deps: TerminationSweepDeps = {
    ...termination,
    terminate: (name) => {
      passes.push(name);
      return termination.terminate(name);
    },
  };

  /** A NodeClaim with its instance, Node and pods, deleted by a user: its termination is due. */
  async function terminatingClaim(name: string, options: TerminatingClaim = {}): Promise<void> {
    const instance = cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      tags: options.foreignInstance
        ? {}
        : {
            [MemoryTag.cluster(CLUSTER)]: 'owned',
            [MemoryTag.nodePool]: 'default',
            [MemoryTag.nodeClaim]: name,
          },
    });
    // As the provisioner creates it for its one offering.
    await cluster.createNodeClaim(
      newNodeClaim(name, {
        labels: { 'karpenter.sh/capacity-type': 'on-demand', 'topology.kubernetes.io/zone': 'us-east-1a' },
        ...(options.terminationGracePeriod === undefined
          ? {}
          : { terminationGracePeriod: options.terminationGracePeriod }),
      }),
    );
    const nodeName = `node-${name}`;
    cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: nodeName, finalizers: ['karpenter.sh/termination'] },
      spec: { providerID: instance.providerId },
    });
    cluster.setNodeReady(nodeName, true);
    await cluster.patchNodeClaimStatus(name, { providerId: instance.providerId, nodeName, conditions: [] });
    for (let i = 0; i < (options.pods ?? 0); i++) {
      const pod = `${name}-pod-${i}`;
      cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, namespace: 'default', labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'app' }], terminationGracePeriodSeconds: 2 },
      });
      cluster.bindPod('default', pod, nodeName);
      cluster.setPodPhase('default', pod, 'Running');
    }
    if (options.blockedByBudget) {
      cluster.create({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name, namespace: 'default' },
        spec: { maxUnavailable: 0, selector: { matchLabels: { app: name } } },
      });
    }
    // By a user: `kubectl delete nodeclaim` (the default) or `kubectl delete node`.
    if (options.deleted === 'node') await cluster.deleteNode(nodeName);
    else if (options.deleted !== 'nothing') await cluster.deleteNodeClaim(name);
  }

  return {
    clock,
    cluster,
    cloud,
    queue,
    lines,
    metrics,
    deps,
    passes,
    terminatingClaim,
    elapsedMs: () => clock.now().getTime() - T0,
    logged: (message: string) => lines.filter((l) => l['message'] === message),
  };
}
