import { makeMemoryLeaseStore } from '../adapters/memory/index.ts';
import { shadowCloud } from '../adapters/shadow-cloud.ts';
import type { Clock } from '../ports/clock.ts';
import type { Cloud, NodeClassResolver } from '../ports/cloud.ts';
import type { Cluster } from '../ports/cluster.ts';
import { makeLogger } from '../runtime/logger.ts';
import type { MetricsSink } from '../usecases/decisions/decision.ts';
import { setUpDisruption, shadowQueues } from '../usecases/disruption/setup.ts';
import { ignoringWrites } from '../usecases/explain/read-only.ts';
import { runProvisioner } from '../usecases/provisioning/driver.ts';
import { setUpProvisioner } from '../usecases/provisioning/setup.ts';
import { compareShadow, type ShadowComparison } from '../usecases/shadow/compare.ts';
import { DISRUPTION_SCHEDULE_MS } from './controllers.ts';
import { makeProvisionTrigger } from './provision-trigger.ts';
import type { ShadowSettings } from './scenario-types.ts';

// A shadow Flotilla in the simulator, as a FlotillaCluster in shadow mode runs beside a cluster's
// autoscaler: its provisioner and disruption Lambdas, set up by the Lambdas' own set-up functions
// with `shadow: true`, over the simulated cluster and cloud behind the views a shadow stack's
// wiring puts there (writes that resolve and are never sent, an EC2 that launches nothing), with a
// lease store and queues of its own. It runs after the live controllers at the ticks the world
// visits anyway, and never asks for one of its own: a tick it added would move the live side's
// schedules, so its disruption schedule is the live one's. Its batching waits do not wait either:
// virtual time only passes by stepping the world, which a shadow must not do; it plans on the pods
// the live provisioner's batch took. Its lines, marked `shadow: true` at virtual time, are kept
// apart from the live decision log and compared at the end (shared/usecases/shadow/compare.ts).

export interface ShadowOptions {
  readonly clock: Clock;
  /** The simulated cluster and cloud, as the live controllers use them. */
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  /** The live stack's: a shadow provisioner resolves no EC2NodeClass (setUpProvisioner drops it). */
  readonly resolver: NodeClassResolver;
  /** The cluster its lines name. */
  readonly clusterName: string;
  readonly settings: ShadowSettings;
}

export interface SimShadow {
  /** The shadow's controllers due at `now`, run after the live controllers of the same tick. */
  run(now: Date): Promise<void>;
  /** With these pods pending and nothing changing, its provisioner's next run (its trigger's). */
  provisionerNextRunMs(pendingUids: readonly string[]): number | 'news';
  /** Its lines so far, as JSON objects (every one `shadow: true`, with its virtual `time`). */
  readonly lines: readonly Readonly<Record<string, unknown>>[];
  /** What its lines add up to against the live side (compareShadow over them). */
  comparison(): ShadowComparison;
}

export function makeShadow(options: ShadowOptions): SimShadow {
  const { clock, settings } = options;
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger(
    { component: 'flotilla', cluster: options.clusterName, shadow: true },
    { now: () => clock.now(), sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  // Its points would go to a series of their own (`<cluster>/shadow`); the record keeps none.
  const metrics: MetricsSink = { cluster: undefined, now: () => clock.now(), publish: () => {} };
  const cluster = ignoringWrites(options.cluster);
  const cloud = shadowCloud(options.cloud, () => clock.now());
  const leases = makeMemoryLeaseStore();
  const sleep = async () => {};
  const solveOptions = {
    solveOptions: { minValuesPolicy: settings.minValuesPolicy, preferencePolicy: settings.preferencePolicy },
  };
  const gates = settings.featureGates;
  const provisioner = setUpProvisioner(
    { cluster, cloud, leases, clock, sleep, logger, metrics, nodeClassResolver: options.resolver },
    {
      ...solveOptions,
      shadow: true,
      nodeOverlay: gates.NodeOverlay,
      staticCapacity: gates.StaticCapacity,
      runawayGuard: settings.runawayGuard,
    },
  );
  const disruption = setUpDisruption(
    { cluster, cloud, leases, clock, sleep, logger, metrics, ...shadowQueues() },
    {
      solveOptions: { ...solveOptions.solveOptions, kubeSchedulerScoring: settings.kubeSchedulerScoring },
      shadow: true,
      spotToSpotConsolidation: gates.SpotToSpotConsolidation,
      repackConsolidation: settings.repackConsolidation,
      runawayGuard: settings.runawayGuard,
      nodeOverlay: gates.NodeOverlay,
    },
  );
  const trigger = makeProvisionTrigger();
  let provisionRuns = 0;
  let disruptionPasses = 0;
  let nextDisruptionMs = clock.now().getTime() + DISRUPTION_SCHEDULE_MS;

  return {
    async run(now) {
      // The live order: disruption, then the provisioner.
      if (now.getTime() >= nextDisruptionMs) {
        while (nextDisruptionMs <= now.getTime()) nextDisruptionMs += DISRUPTION_SCHEDULE_MS;
        await disruption.pass(`shadow-disruption-${++disruptionPasses}`);
      }
      // The provisioner's triggers but a launch request: its own disruption sends none.
      const pending = (await cluster.provisionablePods()).items;
      if (!trigger.due(pending, false, now.getTime())) return;
      await runProvisioner(provisioner, `shadow-${++provisionRuns}`);
      trigger.ran(now.getTime(), pending, (await cluster.provisionablePods()).items);
    },
    provisionerNextRunMs: (pendingUids) => trigger.nextRunMs(pendingUids),
    lines,
    comparison: () => compareShadow(lines),
  };
}
