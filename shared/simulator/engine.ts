import {
  bundledCatalog,
  type MemoryCloud,
  type MemoryCluster,
  makeMemoryAlarms,
  makeMemoryCloud,
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../adapters/memory/index.ts';
import { type ManualClock, makeManualClock } from '../ports/clock.ts';
import { makeControllers } from './controllers.ts';
import { makeDaemonSets } from './daemonsets.ts';
import { makeDecisionRecorder } from './decision-recorder.ts';
import { makeEc2Events, type QueuedEvent } from './ec2.ts';
import { seedInitialNodes } from './initial-nodes.ts';
import { makeKube } from './kube.ts';
import { makeNodeFailures } from './node-failures.ts';
import type { SimulationRecord } from './record.ts';
import { makeSampler, type SimulationProgress } from './sampler.ts';
import type { Scenario } from './scenario.ts';
import { makeShadow } from './shadow.ts';
import { makeSpecChanges } from './spec-changes.ts';
import { makeVirtualTimers } from './virtual-timers.ts';
import { isActive, makeWorkloads, rawPods, uidOf } from './workloads.ts';

// The simulator: Flotilla's controllers (controllers.ts: the Lambdas' use cases and drivers —
// interruption handling, node termination, provisioner, NodeClaim lifecycle, disruption) run
// against the in-memory cluster, cloud and queues on a virtual clock, while the simulated world
// plays everything around them that a real cluster has: workload controllers (workloads.ts),
// kubelets and kube-scheduler (kube.ts), EC2 warning of spot interruptions and taking the
// instances back two minutes later (ec2.ts), and users and AWS changing NodePools, EC2NodeClasses
// and AMIs (spec-changes.ts). The sampler (sampler.ts) observes what the report shows. A scenario's
// `shadow` runs a shadow Flotilla after the live controllers (shadow.ts), changing nothing. This
// file assembles them and runs the clock. Deterministic: same scenario, same record.

/** Virtual time between two steps of the world. */
const TICK_MS = 1000;
/**
 * Virtual time an EC2 CreateFleet call takes to answer (an instant fleet answers in one to two
 * seconds): launches sent one after another add up, launches sent together overlap.
 */
export const CREATE_FLEET_MS = 1500;

export interface SimulationOptions {
  /** Called at every sample. */
  readonly onProgress?: (progress: SimulationProgress) => void;
  /** Instances are tagged for this cluster. @default 'simulated' */
  readonly clusterName?: string;
  /**
   * Receives every JSON line Flotilla's use cases write, as the Lambdas write them (the live
   * stack's; a shadow Flotilla's lines are its own, compared in the record). @default dropped
   */
  readonly log?: (line: string) => void;
  /**
   * Leave out the offerings whose price the bundled catalog only assumes, so nothing launches
   * at an assumed price. @default false: they are offered, and marked in the reports
   */
  readonly knownPricesOnly?: boolean;
  /**
   * Called once the run is over, with the world as it ends (`flotilla simulate --explain` asks it
   * its questions). @default none
   */
  readonly atEnd?: (world: SimulationWorld) => Promise<void>;
}

/** The simulator's world at the end of a run: the in-memory cluster and cloud, and the time. */
export interface SimulationWorld {
  readonly cluster: MemoryCluster;
  readonly cloud: MemoryCloud;
  readonly nowMs: number;
}

/** Runs a scenario to its end and returns what happened. */
export async function simulate(
  scenario: Scenario,
  options: SimulationOptions = {},
): Promise<SimulationRecord> {
  const engine = await makeEngine(scenario, options);
  return engine.run();
}

async function makeEngine(scenario: Scenario, options: SimulationOptions) {
  const startMs = scenario.startMs;
  const endMs = startMs + scenario.durationMs;
  const clock: ManualClock = makeManualClock(new Date(startMs));
  const nowMs = () => clock.now().getTime();
  const timers = makeVirtualTimers(clock);
  // The decision log records the decisions as values, not the lines read back.
  const recorder = makeDecisionRecorder({
    clock,
    cluster: options.clusterName ?? 'simulated',
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const decisions = recorder.entries;
  const { logger, metrics } = recorder;
  const cluster: MemoryCluster = makeMemoryCluster({ clock });
  const cloud: MemoryCloud = makeMemoryCloud({
    clock,
    clusterName: options.clusterName ?? 'simulated',
    catalog: bundledCatalog(scenario.region, scenario.zones, {
      knownPricesOnly: options.knownPricesOnly === true,
    }),
    bootDelayMs: scenario.bootDelayMs,
    createFleetDelay: () => timers.delay(CREATE_FLEET_MS),
    // Karpenter's AWS settings and ReservedCapacity gate, as the stack gives the Lambdas.
    provider: {
      vmMemoryOverheadPercent: scenario.settings.operator.vmMemoryOverheadPercent,
      reservedENIs: scenario.settings.operator.reservedENIs,
      reservedCapacity: scenario.settings.featureGates.ReservedCapacity,
    },
    capacityWindows: scenario.events.flatMap((e) =>
      e.kind === 'InsufficientCapacity'
        ? [
            {
              ...(e.instanceType === undefined ? {} : { instanceType: e.instanceType }),
              ...(e.zone === undefined ? {} : { zone: e.zone }),
              ...(e.capacityType === undefined ? {} : { capacityType: e.capacityType }),
              from: new Date(startMs + e.fromMs),
              ...(e.untilMs === undefined ? {} : { until: new Date(startMs + e.untilMs) }),
            },
          ]
        : [],
    ),
  });
  const terminationQueue = makeMemoryTerminationQueue(clock);
  /** The interruption queue: EventBridge events on their way to the interruption Lambda. */
  const inbox: QueuedEvent[] = [];

  // The cluster as a user applies it: no status; Flotilla's controllers write it.
  for (const manifest of scenario.ec2NodeClasses) cluster.create(manifest);
  for (const manifest of scenario.nodePools) cluster.create(manifest);
  for (const c of scenario.priorityClasses) {
    cluster.create({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: c.name },
      value: c.value,
      globalDefault: c.globalDefault,
      ...(c.description === undefined ? {} : { description: c.description }),
    });
  }
  for (const manifest of scenario.nodeOverlays) cluster.create(manifest);
  const daemonSets = makeDaemonSets(scenario.daemonSets, cluster);
  const workloads = makeWorkloads(scenario, cluster, nowMs);
  const kube = makeKube(cluster, cloud, nowMs, workloads.bound, {
    rogueTaints: (t) =>
      scenario.events.flatMap((e) =>
        e.kind === 'RogueTaint' &&
        t >= startMs + e.atMs &&
        (e.untilMs === undefined || t < startMs + e.untilMs)
          ? [e.taint]
          : [],
      ),
    startupTaintRemovalMs: scenario.startupTaintRemovalMs,
    scoringStrategy: scenario.scoringStrategy,
  });
  // What the world does in place of EC2 (reclaiming instances) is recorded apart.
  const ec2 = makeEc2Events({
    scenario,
    clock,
    cluster,
    cloud,
    logger: recorder.world,
    inbox,
    workloads,
  });
  const alarms = makeMemoryAlarms();
  const changes = makeSpecChanges({ scenario, clock, cluster, logger: recorder.world, alarms });
  const failures = makeNodeFailures({ scenario, clock, cluster, logger: recorder.world });
  const resolver = makeMemoryNodeClassResolver({
    zones: scenario.zones,
    latestAmis: changes.latestAmis,
    reservedCapacity: scenario.settings.featureGates.ReservedCapacity,
  });
  const controllers = makeControllers({
    clock,
    cluster,
    cloud,
    logger,
    metrics,
    leases: makeMemoryLeaseStore(),
    resolver,
    terminationQueue,
    inbox,
    sleep,
    featureGates: scenario.settings.featureGates,
    operator: scenario.settings.operator,
    schedulingPolicy: {
      minValuesPolicy: scenario.settings.minValuesPolicy,
      preferencePolicy: scenario.settings.preferencePolicy,
      ...(scenario.settings.maxCostPerHour === undefined
        ? {}
        : { maxCostPerHour: scenario.settings.maxCostPerHour }),
    },
    kubeSchedulerScoring: scenario.settings.kubeSchedulerScoring,
    repackConsolidation: scenario.settings.repackConsolidation,
    runawayGuard: scenario.settings.runawayGuard,
    disruption: scenario.settings.disruption,
    alarms,
  });
  // Beside the live controllers, writing nothing; its lines are its own, not the decision log's.
  const shadow =
    scenario.shadow === undefined
      ? undefined
      : makeShadow({
          clock,
          cluster,
          cloud,
          resolver,
          clusterName: options.clusterName ?? 'simulated',
          settings: scenario.shadow.settings,
        });
  await timers.drive(controllers.controllersPass(clock.now()));
  if (scenario.nodes.length > 0) {
    // The nodes there at the start join before anything else happens.
    await seedInitialNodes({
      scenario,
      cluster,
      cloud,
      clusterName: options.clusterName ?? 'simulated',
      nowMs: nowMs(),
    });
    await kube.kubelets();
    await timers.drive(controllers.controllersPass(clock.now()));
    await kube.kubelets();
  }
  /** Why the disruption controller deleted a NodeClaim, as a termination reason. */
  const disruptionReasons = {
    get: (nodeClaim: string) =>
      controllers.disrupted.find((d) => d.nodeClaim === nodeClaim)?.reason.toLowerCase(),
  };
  // The price each NodeClaim launched at, from the launch decisions (read as they are written).
  const launchedAt = new Map<string, number>();
  let launchesRead = 0;
  const launchPrice = (nodeClaim: string) => {
    for (; launchesRead < decisions.length; launchesRead += 1) {
      const d = decisions[launchesRead];
      if (
        d?.['decision'] === 'launch' &&
        d['outcome'] === 'launched' &&
        typeof d['pricePerHour'] === 'number'
      )
        launchedAt.set(String(d['nodeClaim']), d['pricePerHour']);
    }
    return launchedAt.get(nodeClaim);
  };
  const sampler = await makeSampler({
    scenario,
    cluster,
    cloud,
    nowMs,
    launchPrice,
    terminationReason: (instance) =>
      ec2.reasonOf(instance.instanceId) ??
      disruptionReasons.get(instance.nodeClaimName ?? '') ??
      controllers.claimDeleteReasons.get(instance.nodeClaimName ?? '') ??
      'terminated',
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });

  /** One step of everything that is not Flotilla: EC2, workloads, kubelets, kube-scheduler. */
  async function stepWorld(): Promise<void> {
    changes.step();
    await failures.step();
    await ec2.step();
    await workloads.step();
    await kube.kubelets();
    await daemonSets.step();
    await kube.schedule();
    await sampler.observe();
    sampler.take();
  }

  /** Batching waits advance virtual time, and the world moves on meanwhile. */
  async function sleep(ms: number): Promise<void> {
    for (let waited = 0; waited < ms; waited += TICK_MS) {
      clock.advance(Math.min(TICK_MS, ms - waited));
      await stepWorld();
    }
  }

  /**
   * Nothing is moving: no event waits, no pod terminates, no instance boots, and every pod still
   * waiting was left there by kube-scheduler and is known to the provisioner (the live one and a
   * shadow's), which looks at them again on its schedule, with nothing changed by the controllers
   * since the world's step (a launch, say). Returns the instants the waiting pods bring (those
   * schedules), or undefined when something is moving.
   */
  function idle(controllersChanged: boolean): readonly number[] | undefined {
    if (inbox.length > 0) return undefined;
    const pods = rawPods(cluster);
    if (pods.some((p) => p.metadata?.deletionTimestamp !== undefined)) return undefined;
    if ([...sampler.live.values()].some((i) => !kube.registered(i.providerId))) return undefined;
    const waiting = pods.flatMap((p) => (isActive(p) && !p.spec?.nodeName ? [uidOf(p)] : []));
    if (waiting.length === 0) return [];
    if (controllersChanged) return undefined;
    const runs = [
      controllers.provisionerNextRunMs(waiting),
      ...(shadow === undefined ? [] : [shadow.provisionerNextRunMs(waiting)]),
    ];
    return runs.every((r) => r !== 'news') ? runs : undefined;
  }

  /**
   * The next instant something is due when idle: an event, a scale step, a job, a controller's
   * schedule or queued work, the provisioner's look at waiting pods, the end. Work due now or
   * overdue is due at the next tick. Samples are not in it: they observe the world and never
   * decide when it moves.
   */
  function nextWakeMs(waitingPodsDue: readonly number[]): number {
    const next = nowMs() + TICK_MS;
    const due = [
      endMs,
      ...waitingPodsDue,
      ...ec2.wakeTimes(),
      ...changes.wakeTimes(),
      ...failures.wakeTimes(),
      ...controllers.wakeTimes(),
      ...workloads.wakeTimes(),
      ...kube.wakeTimes(),
    ];
    return Math.min(...due.map((t) => Math.max(t, next)));
  }

  async function run(): Promise<SimulationRecord> {
    while (nowMs() < endMs) {
      await stepWorld();
      const worldRevision = cluster.revision();
      // The shadow decides first, at the tick's instant: the live side's calls take virtual time.
      if (shadow !== undefined) await timers.drive(shadow.run(clock.now()));
      for (const controller of controllers.all) await timers.drive(controller.run(clock.now()));
      const waitingPodsDue = idle(cluster.revision() !== worldRevision);
      if (waitingPodsDue !== undefined) {
        const wakeMs = nextWakeMs(waitingPodsDue);
        // Nothing moves until then: the samples due meanwhile see the world as it is now.
        sampler.take(wakeMs - 1);
        clock.set(new Date(wakeMs));
      } else {
        // On to the next tick of the run's grid: a call that took time (a CreateFleet) may have
        // left the clock between two ticks.
        clock.set(new Date(startMs + (Math.floor((nowMs() - startMs) / TICK_MS) + 1) * TICK_MS));
      }
    }
    // Batching may have carried the clock past the end; time never runs backwards.
    if (nowMs() < endMs) clock.set(new Date(endMs));
    await stepWorld();
    await options.atEnd?.({ cluster, cloud, nowMs: nowMs() });

    return {
      scenario: {
        name: scenario.name,
        ...(scenario.description === undefined ? {} : { description: scenario.description }),
        region: scenario.region,
        startMs,
        durationMs: scenario.durationMs,
        ...(options.knownPricesOnly === true ? { knownPricesOnly: true } : {}),
        ...(scenario.nodes.length === 0
          ? {}
          : {
              initialNodes: {
                flotilla: scenario.nodes.filter((n) => n.nodePool !== undefined).length,
                foreign: scenario.nodes.filter((n) => n.nodePool === undefined).length,
              },
            }),
      },
      samples: [...sampler.samples],
      billedUsd: sampler.billedUsd(startMs + scenario.durationMs),
      launches: [...sampler.launches],
      terminations: [...sampler.terminations],
      interruptions: [...workloads.interruptions((instanceId) => sampler.live.has(instanceId))],
      disruptions: controllers.disrupted.map((d) => ({ ...d })),
      podWaitsMs: [...workloads.podWaitsMs],
      podWaitsNotStartedMs: [...workloads.waitingMs()],
      unschedulable: [...workloads.unschedulable(controllers.lastReasons)],
      decisions,
      metrics: [...recorder.points],
      ...(shadow === undefined ? {} : { shadow: shadow.comparison() }),
    };
  }

  return { run };
}
