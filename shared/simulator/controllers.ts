import {
  type MemoryCloud,
  type MemoryCluster,
  type MemoryTerminationQueue,
  makeMemoryWakeUps,
} from '../adapters/memory/index.ts';
import { Finalizer, type FitScoring } from '../core/index.ts';
import type { InterruptionMessage } from '../messages/interruption-event.ts';
import { parseInterruptionEvent } from '../messages/interruption-event.ts';
import type { AlarmReader } from '../ports/alarms.ts';
import type { ManualClock } from '../ports/clock.ts';
import type { NodeClassResolver } from '../ports/cloud.ts';
import type { LeaseStore } from '../ports/lease.ts';
import { DEFAULT_FEATURE_GATES, type FeatureGates } from '../runtime/feature-gates.ts';
import type { Logger } from '../runtime/logger.ts';
import { DEFAULT_OPERATOR_SETTINGS, type OperatorSettings } from '../runtime/operator-settings.ts';
import type { SchedulingPolicy } from '../runtime/scheduling-policy.ts';
import type { MetricsSink } from '../usecases/decisions/decision.ts';
import { makeConsolidationMemo } from '../usecases/disruption/consolidated.ts';
import { setUpDisruption } from '../usecases/disruption/setup.ts';
import { setUpGarbageCollector } from '../usecases/garbage-collection/setup.ts';
import { handleInterruptionBatch } from '../usecases/interruption/driver.ts';
import { setUpInterruption } from '../usecases/interruption/setup.ts';
import type { LifecycleResult } from '../usecases/lifecycle/lifecycle.ts';
import { runProvisioner } from '../usecases/provisioning/driver.ts';
import { setUpProvisioner } from '../usecases/provisioning/setup.ts';
import type { BatchItem } from '../usecases/state/batch.ts';
import { driveTermination } from '../usecases/termination/driver.ts';
import { viaQueue } from '../usecases/termination/handover.ts';
import { setUpTermination } from '../usecases/termination/setup.ts';
import type { QueuedEvent } from './ec2.ts';
import { makeVirtualInvocations } from './invocations.ts';
import { makeProvisionTrigger } from './provision-trigger.ts';
import type { SimDisruption } from './record.ts';

// Flotilla's controllers in the simulator: the Lambdas' use cases and drivers, set up by the
// Lambdas' own set-up functions (shared/usecases/<controller>/setup.ts) on the in-memory cluster,
// cloud and queues, each run on every virtual tick after the world has moved. The
// interruption controller hands the queue's batch to the interruption Lambda's batch driver; the
// termination controller runs the termination Lambda's drive loop, one invocation per NodeClaim,
// on virtual time; the provisioner runs when pods wait or a launch was requested, and the
// controllers pass (the provisioner Lambda's lifecycle pass) after any change. The disruption
// controller runs on its schedule; its commands ask the provisioner to launch their replacements
// as the Lambda's message on the pod-event queue does.

/** The lifecycle runs at least this often (its timeouts), and at once after any change. */
const LIFECYCLE_INTERVAL_MS = 10_000;
/** The garbage-collection schedule's sweep over terminating NodeClaims. */
const TERMINATION_SWEEP_MS = 120_000;
/**
 * How often the disruption Lambda runs a pass with the stack's default `disruptionInterval`: its
 * minute schedule, and the pass each tick asks for half a minute later.
 */
export const DISRUPTION_SCHEDULE_MS = 30_000;

/** A controller that runs on every virtual tick, after the world has moved. */
export interface Controller {
  readonly name: string;
  run(now: Date): Promise<void>;
}

export interface ControllersOptions {
  readonly clock: ManualClock;
  readonly cluster: MemoryCluster;
  readonly cloud: MemoryCloud;
  readonly logger: Logger;
  /** Where the decisions' metrics go (the decision recorder's sink). */
  readonly metrics: MetricsSink;
  readonly leases: LeaseStore;
  readonly resolver: NodeClassResolver;
  readonly terminationQueue: MemoryTerminationQueue;
  /** The interruption queue, which EC2 fills. */
  readonly inbox: QueuedEvent[];
  /** The provisioner's batching waits: virtual time passes and the world moves on meanwhile. */
  readonly sleep: (ms: number) => Promise<void>;
  /**
   * The stack's `featureGates` (Karpenter's): NodeRepair runs the repair pass on the
   * garbage-collection schedule, SpotToSpotConsolidation and NodeOverlay reach disruption,
   * NodeOverlay and StaticCapacity the provisioner. The ReservedCapacity gate is the cloud's and
   * the resolver's. @default Karpenter's defaults
   */
  readonly featureGates?: FeatureGates;
  /** The stack's batch window and AMI refresh interval. @default Karpenter's defaults */
  readonly operator?: Pick<OperatorSettings, 'batchIdleMs' | 'batchMaxMs' | 'amiRefreshMs'>;
  /** The stack's `minValuesPolicy` and `preferencePolicy`. @default Karpenter's, Strict and Respect */
  readonly schedulingPolicy?: SchedulingPolicy;
  /** The stack's `repackConsolidation`. @default false */
  readonly repackConsolidation?: boolean;
  /** The stack's `kubeSchedulerScoring`, what disruption's replay expects of kube-scheduler. @default LeastAllocated */
  readonly kubeSchedulerScoring?: FitScoring;
  /** The stack's `runawayGuard`. @default true */
  readonly runawayGuard?: boolean;
  /** CloudWatch's alarms, as the disruption Lambda reads them. @default none */
  readonly alarms?: AlarmReader;
  /**
   * Whether disruption passes may start commands. Off, they still keep the NodeClaims' conditions
   * and expire NodeClaims past expireAfter (what Karpenter's own controllers do beside its
   * disruption controller) and start none: no emptiness, drift or consolidation, an autoscaler
   * that never consolidates, for a shadow Flotilla to be compared with. The passes still run on
   * their schedule. @default true
   */
  readonly disruption?: boolean;
}

export interface Controllers {
  /** In the order they run each tick. */
  readonly all: readonly Controller[];
  /** The provisioner Lambda's controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools). */
  controllersPass(now: Date): Promise<LifecycleResult>;
  /** The instants the controllers have work due: sleeps ending, queued requests, the next sweep. */
  wakeTimes(): readonly number[];
  /** With these pods pending and nothing changing, the provisioner's next run (its trigger's). */
  provisionerNextRunMs(pendingUids: readonly string[]): number | 'news';
  /** Per pod uid, why the provisioner last left it without a node. */
  readonly lastReasons: ReadonlyMap<string, readonly string[]>;
  /** Per NodeClaim, why the lifecycle deleted it. */
  readonly claimDeleteReasons: ReadonlyMap<string, string>;
  /** Each NodeClaim a disruption pass deleted, in order, with its reason and virtual time. */
  readonly disrupted: readonly SimDisruption[];
}

export function makeControllers(options: ControllersOptions): Controllers {
  const { clock, cluster, cloud, logger, metrics, leases, resolver, terminationQueue, inbox } = options;
  const startMs = clock.now().getTime();
  const lastReasons = new Map<string, readonly string[]>();
  const claimDeleteReasons = new Map<string, string>();
  let passes = 0;
  let provisionRuns = 0;
  const trigger = makeProvisionTrigger();
  let lastLifecycleRevision = -1;
  let lastLifecycleMs = Number.NEGATIVE_INFINITY;
  let lastSweepMs = startMs;
  let nextDisruptionMs = startMs + DISRUPTION_SCHEDULE_MS;
  let disruptionPasses = 0;
  /** A launch request sent to the provisioner's queue and not yet handled. */
  let launchRequested = false;
  const disrupted: SimDisruption[] = [];
  const requestTermination = viaQueue(terminationQueue);
  // What the provisioner and the disruption pass are built with in the Lambdas.
  const common = { cluster, cloud, leases, clock, sleep: options.sleep, logger, metrics };
  const solveOptions =
    options.schedulingPolicy === undefined ? {} : { solveOptions: options.schedulingPolicy };
  // Disruption's replay also binds the pods a command moves as the cluster's kube-scheduler does.
  const disruptionSolveOptions =
    options.kubeSchedulerScoring === undefined
      ? solveOptions
      : { solveOptions: { ...options.schedulingPolicy, kubeSchedulerScoring: options.kubeSchedulerScoring } };
  const gates = options.featureGates ?? DEFAULT_FEATURE_GATES;
  const operator = options.operator ?? DEFAULT_OPERATOR_SETTINGS;
  let nextRepairMs = startMs + TERMINATION_SWEEP_MS;
  // EventBridge Scheduler's NodePool wake-ups: a window that opens or closes runs the provisioner then.
  const wakeUps = makeMemoryWakeUps();
  const provisionerSetUp = setUpProvisioner(
    { ...common, nodeClassResolver: resolver, requestTermination, wakeUps },
    {
      ...solveOptions,
      nodeOverlay: gates.NodeOverlay,
      staticCapacity: gates.StaticCapacity,
      runawayGuard: options.runawayGuard !== false,
      batchIdleMs: operator.batchIdleMs,
      batchMaxMs: operator.batchMaxMs,
      nodeClassRefreshSeconds: operator.amiRefreshMs / 1000,
    },
  );

  const controllersPass = (now: Date) => provisionerSetUp.controllersPass(`simulator-pass-${++passes}`, now);

  /** The controllers pass, remembered so the lifecycle's own schedule does not repeat it at once. */
  async function lifecyclePass(now: Date): Promise<LifecycleResult> {
    const result = await controllersPass(now);
    for (const d of result.deleted) claimDeleteReasons.set(d.name, d.reason.replace('_', '-'));
    lastLifecycleRevision = cluster.revision();
    lastLifecycleMs = now.getTime();
    return result;
  }

  const provisioner: Controller = {
    name: 'provisioner',
    async run(now) {
      const provisionable = (await cluster.provisionablePods()).items;
      const woken = wakeUps.fire(now.getTime());
      if (!trigger.due(provisionable, launchRequested || woken, now.getTime())) return;
      launchRequested = false;
      provisionRuns += 1;
      // The provisioner Lambda's invocation: provisioning, then the controllers pass. Follow-ups
      // are not needed here: the lifecycle's own schedule below registers joining Nodes.
      const result = await runProvisioner(
        { ...provisionerSetUp, reconcileLifecycle: () => lifecyclePass(clock.now()) },
        `simulator-${provisionRuns}`,
      );
      trigger.ran(now.getTime(), provisionable, (await cluster.provisionablePods()).items);
      if (result.kind !== 'provisioned') return;
      for (const claim of result.claims) {
        const why =
          claim.kind === 'insufficientCapacity'
            ? `nodeClaim for nodePool ${claim.nodePool} found no capacity: ${claim.offerings.slice(0, 5).join(', ')}${claim.offerings.length > 5 ? ', …' : ''}`
            : claim.kind === 'failed'
              ? `nodeClaim for nodePool ${claim.nodePool} failed: ${claim.error}`
              : undefined;
        if (why !== undefined) for (const p of claim.pods) lastReasons.set(p.uid, [why]);
      }
      for (const u of result.unschedulable) {
        lastReasons.set(
          u.pod.uid,
          u.reasons.length > 0 ? u.reasons.map((r) => `nodePool ${r.nodePool}: ${r.reason}`) : [u.message],
        );
      }
      for (const skipped of result.skippedNodePools) {
        for (const p of provisionable) {
          if (!lastReasons.has(p.uid))
            lastReasons.set(p.uid, [`nodePool ${skipped.nodePool}: ${skipped.reason}`]);
        }
      }
    },
  };

  const lifecycle: Controller = {
    name: 'lifecycle',
    async run(now) {
      if (
        cluster.revision() === lastLifecycleRevision &&
        now.getTime() - lastLifecycleMs < LIFECYCLE_INTERVAL_MS
      ) {
        return;
      }
      await lifecyclePass(now);
    },
  };

  /**
   * The interruption Lambda: the queue's messages, one batch per tick, parsed at the edge and
   * handed to its batch driver; failed ones are delivered again next tick.
   */
  const interruption: Controller = {
    name: 'interruption',
    async run() {
      if (inbox.length === 0) return;
      const batch = inbox.splice(0);
      const items: BatchItem<InterruptionMessage>[] = [];
      for (const { messageId, body } of batch) {
        const parsed = parseInterruptionEvent(body);
        if (parsed.ok) items.push({ id: messageId, message: parsed.message });
        else logger.warn('interruption message rejected', { messageId, problem: parsed.problem });
      }
      const { failed } = await handleInterruptionBatch(
        setUpInterruption({ cluster, cloud, terminationQueue, logger, metrics }),
        items,
      );
      inbox.push(...batch.filter((m) => failed.includes(m.messageId)));
    },
  };

  /**
   * The disruption Lambda on its schedule: one pass per minute of virtual time. Its validation
   * wait sleeps on virtual time as the provisioner's batching does; a launch request is the
   * message the Lambda sends the provisioner's queue, which runs the provisioner on the next tick.
   */
  // Karpenter's consolidated memo, kept from pass to pass as a warm container keeps it.
  const consolidationMemo = makeConsolidationMemo();
  const disruption: Controller = {
    name: 'disruption',
    async run(now) {
      if (now.getTime() < nextDisruptionMs) return;
      while (nextDisruptionMs <= now.getTime()) nextDisruptionMs += DISRUPTION_SCHEDULE_MS;
      disruptionPasses += 1;
      const result = await setUpDisruption(
        {
          ...common,
          ...(options.alarms === undefined ? {} : { alarms: options.alarms }),
          terminationQueue,
          requestLaunch: async () => {
            launchRequested = true;
          },
        },
        {
          spotToSpotConsolidation: gates.SpotToSpotConsolidation,
          repackConsolidation: options.repackConsolidation === true,
          runawayGuard: options.runawayGuard !== false,
          nodeOverlay: gates.NodeOverlay,
          consolidationMemo,
          ...disruptionSolveOptions,
          ...(options.disruption === false ? { maxCommands: 0 } : {}),
        },
      ).pass(`simulator-disruption-${disruptionPasses}`);
      for (const d of result.decisions) {
        if (d.outcome !== 'deleted') continue;
        for (const c of d.candidates) {
          disrupted.push({ atMs: clock.now().getTime(), nodeClaim: c.nodeClaim, reason: d.reason });
        }
      }
    },
  };

  // The termination Lambda's invocations, each driving one NodeClaim and sleeping on virtual time.
  const invocations = makeVirtualInvocations(() => clock.now().getTime());
  const termination = terminationController();

  /**
   * The termination Lambda: each queue message starts an invocation running the drive loop over
   * its NodeClaim (messages for one NodeClaim in one tick are one batch, driven once), which hands
   * what is left on through a delayed message. The garbage-collection schedule's sweep starts one
   * without handing on for every terminating NodeClaim no invocation is driving; in AWS the sweep
   * would pass over those too, repeating the other invocation's idempotent steps, which the
   * simulator leaves out. Each tick, new and woken invocations step in NodeClaim order.
   */
  function terminationController(): Controller {
    const drive = (sleep: (ms: number) => Promise<void>) =>
      setUpTermination({ cluster, cloud, logger, metrics, terminationQueue, clock, sleep });
    /** The NodeClaim each invocation drives, by invocation key. */
    const running = new Map<string, string>();
    const inFlight = (nodeClaim: string) => [...running.values()].includes(nodeClaim);
    let sequence = 0;
    return {
      name: 'termination',
      async run(now) {
        const t = now.getTime();
        const starts = new Map<string, { nodeClaim: string; handOn: boolean }>();
        const received = new Set<string>();
        for (const request of terminationQueue.receive()) {
          // Only a shim relays a user's deletion, and the simulated world has none.
          if ('node' in request)
            throw new Error(`the simulator has no shim: unexpected request for node "${request.node}"`);
          const { nodeClaim } = request;
          if (received.has(nodeClaim)) continue;
          received.add(nodeClaim);
          const key = inFlight(nodeClaim) ? `${nodeClaim}#${++sequence}` : nodeClaim;
          starts.set(key, { nodeClaim, handOn: true });
        }
        if (t - lastSweepMs >= TERMINATION_SWEEP_MS) {
          lastSweepMs = t;
          const terminating = await drive(options.sleep).terminatingNodeClaims();
          for (const name of terminating) {
            if (!received.has(name) && !inFlight(name)) starts.set(name, { nodeClaim: name, handOn: false });
          }
        }
        const keys = [...starts.keys(), ...invocations.due(t)].sort((a, b) => a.localeCompare(b));
        for (const key of keys) {
          const start = starts.get(key);
          if (start === undefined) await invocations.resume(key);
          else {
            running.set(key, start.nodeClaim);
            await invocations.start(key, (sleep) =>
              driveTermination(drive(sleep), start.nodeClaim, start.handOn).then(() => undefined),
            );
          }
          if (!invocations.has(key)) running.delete(key);
        }
      },
    };
  }

  /**
   * The garbage collector's repair pass on its schedule (the simulated cloud reports no impaired
   * instances: only Node conditions count). A repaired NodeClaim goes to the termination queue.
   */
  const repair: Controller = {
    name: 'repair',
    async run(now) {
      if (now.getTime() < nextRepairMs) return;
      while (nextRepairMs <= now.getTime()) nextRepairMs += TERMINATION_SWEEP_MS;
      // The pass at the tick's time, as the schedule fires it.
      const { repair: repairPass } = setUpGarbageCollector(
        { cluster, cloud, logger, metrics, clock: { now: () => now }, requestTermination },
        { nodeRepair: true },
      );
      if (repairPass === undefined) return;
      const result = await repairPass();
      for (const name of result.repaired) claimDeleteReasons.set(name, 'unhealthy');
    },
  };

  return {
    all: [
      interruption,
      termination,
      disruption,
      ...(gates.NodeRepair ? [repair] : []),
      provisioner,
      lifecycle,
    ],
    controllersPass,
    wakeTimes() {
      const due = [...invocations.wakeTimes(), nextDisruptionMs];
      if (gates.NodeRepair) due.push(nextRepairMs);
      if (launchRequested) due.push(clock.now().getTime() + 1);
      const wake = wakeUps.next();
      if (wake !== undefined) due.push(wake);
      const queued = terminationQueue.nextVisibleAt();
      if (queued !== undefined) due.push(queued.getTime());
      const terminating = (
        cluster.list('NodeClaim') as { metadata: { deletionTimestamp?: unknown; finalizers?: string[] } }[]
      ).some(
        (c) =>
          c.metadata.deletionTimestamp !== undefined &&
          (c.metadata.finalizers ?? []).includes(Finalizer.termination),
      );
      if (terminating) due.push(lastSweepMs + TERMINATION_SWEEP_MS);
      return due;
    },
    provisionerNextRunMs: (pendingUids) => trigger.nextRunMs(pendingUids),
    lastReasons,
    claimDeleteReasons,
    disrupted,
  };
}
