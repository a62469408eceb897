import path from 'node:path';
import {
  bundledCatalog,
  type MemoryCloudOptions,
  type MemoryCluster,
  makeMemoryCloud,
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
} from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { Logger } from '../../../../shared/runtime/logger.ts';
import { loadScenario } from '../../../../shared/simulator/scenario.ts';
import type { MetricsSink } from '../../../../shared/usecases/decisions/decision.ts';
import { reconcileLifecycle } from '../../../../shared/usecases/lifecycle/lifecycle.ts';
import { provision } from '../../../../shared/usecases/provisioning/provision.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';

// The in-memory cluster and cloud a provisioning run is tested on: the NodePools and EC2NodeClasses
// of an example scenario, created as a user applies them.

const examples = path.resolve(import.meta.dirname, '../../../../examples');

export function scenarioWorld(
  file = 'steady-web.yaml',
  cloudOptions: Pick<MemoryCloudOptions, 'noSpotServiceLinkedRole'> = {},
) {
  const scenario = loadScenario(path.join(examples, file));
  const clock = makeManualClock(new Date(scenario.startMs));
  const cluster = makeMemoryCluster({ clock });
  const cloud = makeMemoryCloud({
    clock,
    clusterName: 'simulated',
    catalog: bundledCatalog(scenario.region, scenario.zones),
    bootDelayMs: scenario.bootDelayMs,
    ...cloudOptions,
  });
  const resolver = makeMemoryNodeClassResolver({ zones: scenario.zones });
  for (const manifest of scenario.ec2NodeClasses) cluster.create(manifest);
  for (const manifest of scenario.nodePools) cluster.create(manifest);
  return { scenario, clock, cluster, cloud, resolver };
}

/** A pod kube-scheduler found no node for (500m cpu, 512Mi), in namespace `default`. */
export function addPendingPod(cluster: MemoryCluster, name: string): void {
  cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: '500m', memory: '512Mi' } } }],
    },
  });
  cluster.markPodUnschedulable('default', name, '0/0 nodes are available');
}

/**
 * The provisioner Lambda's two steps over a world, as its handler wires them: the provisioning run
 * and the lifecycle (and EC2NodeClass) pass, sharing one lease store.
 */
export function provisionerSteps(
  world: ReturnType<typeof scenarioWorld>,
  logger: Logger,
  metrics: MetricsSink = quietMetrics,
) {
  const { clock, cluster, cloud, resolver } = world;
  const leases = makeMemoryLeaseStore();
  return {
    provision: (holder: string) =>
      provision(
        {
          cluster,
          cloud,
          leases,
          clock,
          sleep: async (ms) => clock.advance(ms),
          logger,
          metrics,
          nodeClassResolver: resolver,
        },
        { holder },
      ),
    reconcileLifecycle: (holder: string) =>
      reconcileLifecycle(
        { cluster, logger, metrics, nodeClasses: { resolver, leases, clock, holder } },
        clock.now(),
      ),
  };
}
