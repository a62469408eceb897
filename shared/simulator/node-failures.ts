import type { MemoryCluster } from '../adapters/memory/index.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Scenario, ScenarioEvent } from './scenario.ts';

// Kubelets failing in the simulated world: each NodeNotReady event makes the kubelets of `count`
// Ready nodes (of its NodePool, by name) report NotReady from its time on. They never recover:
// either node repair replaces the nodes or they stay, serving nothing.

type NodeNotReady = Extract<ScenarioEvent, { kind: 'NodeNotReady' }>;

export interface NodeFailures {
  /** Applies the events whose time has come. */
  step(): Promise<void>;
  /** When the next event is due. */
  wakeTimes(): readonly number[];
}

export function makeNodeFailures(options: {
  readonly scenario: Scenario;
  readonly clock: Clock;
  readonly cluster: MemoryCluster;
  /** The world's log (what happens to Flotilla, not what it decides). */
  readonly logger: Logger;
}): NodeFailures {
  const { scenario, clock, cluster, logger } = options;
  const pending = scenario.events.filter((e): e is NodeNotReady => e.kind === 'NodeNotReady');
  const dueMs = (e: NodeNotReady) => scenario.startMs + e.atMs;
  return {
    async step() {
      const now = clock.now().getTime();
      for (const event of pending.filter((e) => dueMs(e) <= now)) {
        pending.splice(pending.indexOf(event), 1);
        const nodes = (await cluster.nodeInfos()).items
          .filter((n) => n.ready && !n.deleting)
          .filter((n) => event.nodePool === undefined || n.nodePoolName === event.nodePool)
          .map((n) => n.name)
          .sort()
          .slice(0, event.count);
        for (const name of nodes) cluster.setNodeReady(name, false);
        logger.info('kubelets report NotReady', {
          nodes,
          ...(event.nodePool === undefined ? {} : { nodePool: event.nodePool }),
        });
      }
    },
    wakeTimes: () => pending.map(dueMs),
  };
}
