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
import { makeKube } from '../../../../shared/simulator/kube.ts';
import { loadScenario } from '../../../../shared/simulator/scenario.ts';
import type { ProvisionTrigger } from '../../../../shared/usecases/provisioning/driver.ts';
import {
  type ProvisionerConfig,
  type ProvisionerPorts,
  setUpProvisioner,
} from '../../../../shared/usecases/provisioning/setup.ts';
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

/** What a test changes of the provisioner it runs over a world. */
export interface ProvisionerStepsOptions {
  /** Ports in place of the world's (a cluster that counts its reads, a recording metrics sink). */
  readonly ports?: Partial<ProvisionerPorts>;
  /** Settings beside the set-up's defaults (no batching wait, say). */
  readonly config?: ProvisionerConfig;
}

/**
 * The provisioner Lambda over a world, set up as its handler sets it up (setUpProvisioner) on the
 * world's cluster, cloud and NodeClass resolver, one lease store, no metrics, and a sleep that
 * advances the clock; `options` replaces ports and adds settings. Its two steps run on their own:
 * `provision`, the provisioning run (on the schedule's trigger unless told), and
 * `reconcileLifecycle`, the controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools,
 * NodeOverlays) at the clock's time.
 */
export function provisionerSteps(
  world: ReturnType<typeof scenarioWorld>,
  logger: Logger,
  options: ProvisionerStepsOptions = {},
) {
  const { clock, cluster, cloud, resolver } = world;
  const provisioner = setUpProvisioner(
    {
      cluster,
      cloud,
      leases: makeMemoryLeaseStore(),
      clock,
      sleep: async (ms) => clock.advance(ms),
      logger,
      metrics: quietMetrics,
      nodeClassResolver: resolver,
      ...options.ports,
    },
    options.config,
  );
  return {
    ...provisioner,
    provision: (holder: string, trigger: ProvisionTrigger = 'schedule', podEventAtMs?: number) =>
      provisioner.provision(holder, trigger, podEventAtMs),
    reconcileLifecycle: (holder: string) => provisioner.controllersPass(holder, clock.now()),
  };
}

/**
 * The kubelets of the world's running instances register their Nodes, `afterMs` after now (the
 * clock moves on by that much first).
 */
export async function joinNodes(world: ReturnType<typeof scenarioWorld>, afterMs = 120_000): Promise<void> {
  const { clock, cluster, cloud } = world;
  const kube = makeKube(
    cluster,
    cloud,
    () => clock.now().getTime(),
    () => {},
  );
  clock.advance(afterMs);
  await kube.kubelets();
}
