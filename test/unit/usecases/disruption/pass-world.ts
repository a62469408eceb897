import {
  makeMemoryLeaseStore,
  makeMemoryTerminationQueue,
} from '../../../../shared/adapters/memory/index.ts';
import { type Logger, makeLogger } from '../../../../shared/runtime/logger.ts';
import { makeControllers } from '../../../../shared/simulator/controllers.ts';
import { makeKube } from '../../../../shared/simulator/kube.ts';
import type { MetricsSink } from '../../../../shared/usecases/decisions/decision.ts';
import type { DisruptionPorts } from '../../../../shared/usecases/disruption/index.ts';
import { type DisruptionConfig, setUpDisruption } from '../../../../shared/usecases/disruption/setup.ts';
import { forgedSummaryOnce } from '../../../fixtures/forged-summary.ts';
import { quietMetrics, recordingMetrics } from '../../../fixtures/metrics.ts';
import { scenarioWorld } from '../provisioning/world.ts';

// A small world for whole disruption passes: the simulator's kubelets and kube-scheduler, the
// provisioner and lifecycle controllers, and the in-memory cluster and cloud.

const TICK_MS = 5_000;

/** The simulator's controllers over a world, with their lease store and termination queue. */
export function simulatedControllers(
  world: ReturnType<typeof scenarioWorld>,
  logger: Logger,
  sleep: (ms: number) => Promise<void>,
  metrics: MetricsSink = quietMetrics,
) {
  const { clock, cluster, cloud, resolver } = world;
  const leases = makeMemoryLeaseStore();
  const terminationQueue = makeMemoryTerminationQueue(clock);
  const controllers = makeControllers({
    clock,
    cluster,
    cloud,
    logger,
    metrics,
    leases,
    resolver,
    terminationQueue,
    inbox: [],
    sleep,
  });
  return { leases, terminationQueue, controllers };
}

/**
 * Three pods that cannot share a node, each on a node the provisioner launched and initialized.
 * The log lines go to `sink` (dropped by default); the metrics to a recording sink.
 */
export async function threeNodes(sink: (line: string) => void = () => {}) {
  const world = scenarioWorld();
  const { clock, cluster, cloud } = world;
  const logger = makeLogger({}, { sink });
  const metrics = recordingMetrics({ cluster: 'simulated', clock });
  const kube = makeKube(
    cluster,
    cloud,
    () => clock.now().getTime(),
    () => {},
  );
  const step = async () => {
    await kube.kubelets();
    await kube.schedule();
  };
  const sleep = async (ms: number) => {
    for (let waited = 0; waited < ms; waited += TICK_MS) {
      clock.advance(Math.min(TICK_MS, ms - waited));
      await step();
    }
  };
  const { leases, terminationQueue, controllers } = simulatedControllers(world, logger, sleep, metrics);
  await controllers.controllersPass(clock.now());
  for (const name of ['a', 'b', 'c']) {
    cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', labels: { app: 'spread' } },
      spec: {
        containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'spread' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    });
  }
  const others = controllers.all.filter((c) => c.name !== 'disruption');
  for (let tick = 0; tick < 120; tick++) {
    await step();
    for (const controller of others) await controller.run(clock.now());
    const pods = cluster.list('Pod') as { spec?: { nodeName?: string } }[];
    const claims = await cluster.nodeClaims();
    const initialized = claims.items.filter((c) =>
      c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
    );
    if (pods.every((p) => p.spec?.nodeName !== undefined) && initialized.length === 3) break;
    clock.advance(TICK_MS);
  }
  return { ...world, leases, terminationQueue, logger, metrics, step };
}

export type World = Awaited<ReturnType<typeof threeNodes>>;

/**
 * One disruption pass over the world, set up as the Lambda's handler sets it up (setUpDisruption,
 * its default settings), with some of its ports replaced.
 */
export function pass(
  world: World,
  ports: Partial<DisruptionPorts> = {},
  config: DisruptionConfig = {},
  holder = 'pass-1',
) {
  return setUpDisruption(
    {
      cluster: world.cluster,
      cloud: world.cloud,
      leases: world.leases,
      clock: world.clock,
      sleep: async (ms) => {
        world.clock.advance(ms);
      },
      logger: world.logger,
      metrics: world.metrics,
      terminationQueue: world.terminationQueue,
      requestLaunch: async () => {},
      ...ports,
    },
    config,
  ).pass(holder);
}

/** A raw object of the forged cluster summary. */
export interface SummaryJson {
  metadata: {
    name?: string;
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/**
 * The cluster as the disruption Lambda wires it, its list reads from the cluster summary (the
 * product's own adapter and document format) that `change` makes of the cluster now.
 */
export function forgedSummary(
  w: World,
  change: (doc: { nodes: SummaryJson[]; nodeClaims: SummaryJson[]; pods: SummaryJson[] }) => void,
) {
  return forgedSummaryOnce<SummaryJson>(w.cluster, w.clock, w.logger, change, { finishedPods: true });
}
