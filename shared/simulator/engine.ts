import type { V1Pod } from '@kubernetes/client-node';
import {
  bundledCatalog,
  type MemoryCloud,
  type MemoryCluster,
  makeMemoryCloud,
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../adapters/memory/index.ts';
import { toPod, toQuantityMap } from '../apis/index.ts';
import {
  type CapacityType,
  type ExistingNode,
  Finalizer,
  Label,
  type Pod,
  parseInstanceId,
  solve,
  UNREGISTERED_TAINT,
  ValidationError,
} from '../core/index.ts';
import { DetailType, parseInterruptionEvent } from '../messages/interruption-event.ts';
import { type ManualClock, makeManualClock } from '../ports/clock.ts';
import type { CloudInstance } from '../ports/cloud.ts';
import type { ClusterNodeClaim } from '../ports/cluster.ts';
import { type Logger, makeLogger } from '../runtime/logger.ts';
import { handleInterruption, indexNodeClaims } from '../usecases/interruption.ts';
import { reconcileLifecycle } from '../usecases/lifecycle.ts';

import { provision } from '../usecases/provision.ts';
import { sweepTerminations, terminateNodeClaim } from '../usecases/termination.ts';
import type {
  SimInterruption,
  SimLaunch,
  SimSample,
  SimTermination,
  SimUnschedulablePod,
  SimulationRecord,
} from './record.ts';
import type { DeploymentWorkload, JobWorkload, Scenario, ScenarioEvent, Workload } from './scenario.ts';

// The simulator: the real use cases (interruption handling, node termination, provisioner,
// NodeClaim lifecycle) run against the in-memory cluster, cloud and termination queue on a
// virtual clock, while the engine plays everything around them that a real cluster has: workload
// controllers (Deployments, Jobs), kube-scheduler binding pods to nodes, kubelets registering
// nodes once their instance has booted and removing pods once they have terminated, and EC2
// warning of spot interruptions and taking the instances back two minutes later. Deterministic:
// same scenario, same record.

/** Virtual time between two steps of the world. */
const TICK_MS = 1000;
/** The provisioner's schedule: pending pods are looked at again this often even without news. */
const PROVISION_SCHEDULE_MS = 60_000;
/** The lifecycle runs at least this often (its timeouts), and at once after any change. */
const LIFECYCLE_INTERVAL_MS = 10_000;
/** EC2's spot interruption notice: the instance is reclaimed this long after the warning. */
const SPOT_WARNING_MS = 120_000;
/** The garbage-collection schedule's sweep over terminating NodeClaims. */
const TERMINATION_SWEEP_MS = 120_000;
/** How long one termination invocation keeps passing over a NodeClaim before handing it on. */
const TERMINATION_BUDGET_MS = 60_000;
/** The account EC2 events name. */
const ACCOUNT = '000000000000';
/** A pod's grace period when its template sets none. */
const DEFAULT_GRACE_SECONDS = 30;
const WORKLOAD_LABEL = 'simulator.flotilla.dev/workload';

/** What the engine reports while it runs. */
export interface SimulationProgress {
  /** Virtual time since the scenario's start. */
  readonly offsetMs: number;
  readonly durationMs: number;
  readonly nodes: number;
  readonly pendingPods: number;
  readonly runningPods: number;
  readonly costPerHour: number;
}

export interface SimulationOptions {
  /** Called at every sample. */
  readonly onProgress?: (progress: SimulationProgress) => void;
  /** Instances are tagged for this cluster. @default 'simulated' */
  readonly clusterName?: string;
}

/** A controller that runs on every virtual tick, after the world has moved. */
interface Controller {
  readonly name: string;
  run(now: Date): Promise<void>;
}

interface PodInfo {
  readonly workload: string;
  readonly createdMs: number;
  startedMs?: number;
  /** Index into `interruptions` when the pod replaces one an interruption took away. */
  replacing?: number;
}

interface InterruptionState {
  record: SimInterruption;
  /** Replacement pods created and not yet bound. */
  unbound: number;
  /** Pods on the instance's node when the warning came, that their controller must replace. */
  readonly displaced: Map<string, string>;
}

/** A termination invocation passing over one NodeClaim (the termination Lambda's drive loop). */
interface TerminationDrive {
  nextMs: number;
  readonly untilMs: number;
  /** Started by a queue message: what is left goes on through a delayed message. */
  handOn: boolean;
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
  const decisions: Record<string, unknown>[] = [];
  const logger: Logger = makeLogger(
    { component: 'flotilla' },
    {
      level: 'info',
      now: () => clock.now(),
      sink: (line) => decisions.push({ atMs: clock.now().getTime(), ...(JSON.parse(line) as object) }),
    },
  );
  const cluster: MemoryCluster = makeMemoryCluster({ clock });
  const cloud: MemoryCloud = makeMemoryCloud({
    clock,
    clusterName: options.clusterName ?? 'simulated',
    catalog: bundledCatalog(scenario.region, scenario.zones),
    bootDelayMs: scenario.bootDelayMs,
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
  // What the engine itself does in place of the world (EC2 reclaiming instances) is logged apart.
  const worldLogger = logger.child({ source: 'simulator' });
  const leases = makeMemoryLeaseStore();
  const terminationQueue = makeMemoryTerminationQueue(clock);
  const resolver = makeMemoryNodeClassResolver({ zones: scenario.zones });

  // The cluster as a user applies it: no status; Flotilla's controllers write it.
  for (const manifest of scenario.ec2NodeClasses) cluster.create(manifest);
  for (const manifest of scenario.nodePools) cluster.create(manifest);
  for (const w of scenario.workloads) {
    if (w.kind !== 'Deployment' || w.disruptionBudget === undefined) continue;
    cluster.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: w.name, namespace: w.namespace },
      spec: {
        ...w.disruptionBudget,
        selector: { matchLabels: { [WORKLOAD_LABEL]: `${w.namespace}.${w.name}` } },
      },
    });
  }
  let passes = 0;
  /** The provisioner Lambda's controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools). */
  const controllersPass = (now: Date) =>
    reconcileLifecycle(
      {
        cluster,
        logger,
        nodeClasses: { resolver, leases, clock, holder: `simulator-pass-${++passes}` },
        requestTermination: (nodeClaim) => terminationQueue.enqueue({ nodeClaim }, 0),
      },
      now,
    );
  await controllersPass(clock.now());
  const prices = new Map<string, number>();
  for (const nodeClass of (await cluster.nodeClasses()).items) {
    for (const type of await cloud.instanceTypes(nodeClass)) {
      for (const o of type.offerings)
        prices.set(`${type.name}/${o.zone}/${o.capacityType}`, o.priceUsdPerHour);
    }
  }

  const samples: SimSample[] = [];
  const launches: SimLaunch[] = [];
  const terminations: SimTermination[] = [];
  const interruptions: InterruptionState[] = [];
  const podWaitsMs: number[] = [];
  const pods = new Map<string, PodInfo>();
  const converted = new Map<string, Pod>();
  const sequence = new Map<string, number>();
  const jobSucceeded = new Map<string, number>();
  /** Per workload, interruptions whose pods it still has to replace. */
  const owed = new Map<string, number[]>();
  const terminationReasons = new Map<string, string>();
  const claimDeleteReasons = new Map<string, string>();
  const lastReasons = new Map<string, readonly string[]>();
  const registeredProviders = new Set<string>();
  const liveInstances = new Map<string, CloudInstance>();
  const pendingEvents = scenario.events
    .filter(
      (e): e is Extract<ScenarioEvent, { kind: 'SpotInterruption' | 'RebalanceRecommendation' }> =>
        e.kind !== 'InsufficientCapacity',
    )
    .map((e) => ({ ...e }))
    .sort((a, b) => a.atMs - b.atMs);
  /** EventBridge events on their way to the interruption queue's consumer, as JSON bodies. */
  const interruptionInbox: string[] = [];
  /** Instances EC2 has warned and takes back at `atMs`. */
  const reclaims: { atMs: number; instanceId: string }[] = [];
  const warned = new Set<string>();
  const drives = new Map<string, TerminationDrive>();
  let eventCount = 0;
  let lastSweepMs = startMs;
  let historyLength = 0;
  let nextSampleMs = startMs;
  let lastScheduleRevision = -1;
  let provisionRuns = 0;
  let lastProvisionMs = Number.NEGATIVE_INFINITY;
  let provisionSeen = new Set<string>();
  let lastLifecycleRevision = -1;
  let lastLifecycleMs = Number.NEGATIVE_INFINITY;

  const nowMs = () => clock.now().getTime();
  const workloadKey = (w: Workload) => `${w.namespace}/${w.name}`;
  const rawPods = () => cluster.list('Pod') as unknown as V1Pod[];
  const isActive = (p: V1Pod) =>
    p.status?.phase !== 'Succeeded' &&
    p.status?.phase !== 'Failed' &&
    p.metadata?.deletionTimestamp === undefined;
  const labelOf = (key: string) => key.replace('/', '.');
  const podsOf = (key: string) =>
    rawPods().filter((p) => p.metadata?.labels?.[WORKLOAD_LABEL] === labelOf(key));
  const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';

  // --- Workload controllers (ReplicaSet and Job controllers) -------------------------------------

  function createPod(w: Workload): void {
    const key = workloadKey(w);
    const seq = (sequence.get(key) ?? 0) + 1;
    sequence.set(key, seq);
    const name = `${w.name}-${seq.toString().padStart(5, '0')}`;
    const raw = cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: w.namespace,
        labels: { ...(w.template.metadata?.labels ?? {}), [WORKLOAD_LABEL]: labelOf(key) },
        ownerReferences: [
          {
            apiVersion: w.kind === 'Job' ? 'batch/v1' : 'apps/v1',
            kind: w.kind === 'Job' ? 'Job' : 'ReplicaSet',
            name: w.name,
            uid: `workload-${key}`,
            controller: true,
          },
        ],
      },
      spec: structuredClone(w.template.spec),
    }) as unknown as V1Pod;
    const info: PodInfo = { workload: key, createdMs: nowMs() };
    const debts = owed.get(key);
    const debt = debts?.shift();
    if (debt !== undefined) {
      info.replacing = debt;
      const state = interruptions[debt];
      if (state !== undefined) state.unbound += 1;
    }
    pods.set(uidOf(raw), info);
  }

  function desiredReplicas(w: DeploymentWorkload, offsetMs: number): number {
    let replicas = w.replicas;
    for (const step of w.scale) if (step.atMs <= offsetMs) replicas = step.replicas;
    return replicas;
  }

  async function runDeployment(w: DeploymentWorkload, offsetMs: number): Promise<void> {
    const key = workloadKey(w);
    const active = podsOf(key).filter(isActive);
    const desired = desiredReplicas(w, offsetMs);
    for (let i = active.length; i < desired; i++) createPod(w);
    if (active.length >= desired) owed.delete(key);
    if (active.length <= desired) return;
    // Scale down as a ReplicaSet does: pods not yet on a node first, then the newest.
    const victims = [...active]
      .sort((a, b) => {
        const unbound = Number(Boolean(a.spec?.nodeName)) - Number(Boolean(b.spec?.nodeName));
        return unbound !== 0 ? unbound : (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? '');
      })
      .slice(0, active.length - desired);
    for (const pod of victims) {
      await cluster.deletePod(
        { namespace: w.namespace, name: pod.metadata?.name ?? '', uid: uidOf(pod) },
        pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS,
      );
    }
  }

  function runJob(w: JobWorkload, offsetMs: number): void {
    if (offsetMs < w.atMs) return;
    const key = workloadKey(w);
    let succeeded = jobSucceeded.get(key) ?? 0;
    const active: V1Pod[] = [];
    for (const pod of podsOf(key)) {
      if (!isActive(pod)) continue;
      const started = pods.get(uidOf(pod))?.startedMs;
      if (started !== undefined && nowMs() - started >= w.runTimeMs) {
        // Finished: counted and cleaned up at once (ttlSecondsAfterFinished: 0).
        succeeded += 1;
        cluster.removePod(w.namespace, pod.metadata?.name ?? '');
        continue;
      }
      active.push(pod);
    }
    jobSucceeded.set(key, succeeded);
    const wanted = Math.min(w.parallelism, w.completions - succeeded);
    for (let i = active.length; i < wanted; i++) createPod(w);
    if (succeeded >= w.completions) owed.delete(key);
  }

  // --- kubelet and pod garbage collection ----------------------------------------------------------

  async function kubelets(): Promise<void> {
    const claims = (await cluster.nodeClaims()).items;
    for (const claim of claims) {
      const providerId = claim.status.providerId;
      if (claim.deleting || providerId === undefined || registeredProviders.has(providerId)) continue;
      const instanceId = parseInstanceId(providerId);
      const instance = instanceId === undefined ? undefined : await cloud.get(instanceId);
      if (instance?.state !== 'running') continue;
      registerNode(claim, instance);
      registeredProviders.add(providerId);
    }
    // Start-up agents finish once the node is registered: their taints go.
    const byNode = new Map(
      claims.flatMap((c) => (c.status.nodeName ? [[c.status.nodeName, c] as const] : [])),
    );
    for (const node of (await cluster.nodes()).items) {
      const claim = byNode.get(node.name);
      if (claim === undefined || node.labels[Label.registered] !== 'true') continue;
      const startup = claim.startupTaints.filter((t) =>
        (node.taints ?? []).some((x) => x.key === t.key && x.effect === t.effect),
      );
      if (startup.length > 0) await cluster.patchNode(node.name, { removeTaints: startup });
    }
    const nodeNames = new Set(
      (cluster.list('Node') as { metadata: { name: string } }[]).map((n) => n.metadata.name),
    );
    for (const pod of rawPods()) {
      const meta = pod.metadata;
      const nodeName = pod.spec?.nodeName;
      if (meta === undefined || nodeName === undefined) continue;
      const deletedMs =
        meta.deletionTimestamp === undefined ? undefined : new Date(meta.deletionTimestamp).getTime();
      const graceMs = (meta.deletionGracePeriodSeconds ?? 0) * 1000;
      // A terminating pod is gone once its grace period ran out; a pod whose node is gone is
      // collected (kube-controller-manager's pod GC).
      if ((deletedMs !== undefined && nowMs() >= deletedMs + graceMs) || !nodeNames.has(nodeName)) {
        cluster.removePod(meta.namespace ?? '', meta.name ?? '');
      }
    }
  }

  /** The node kubelet registers for a NodeClaim whose instance has booted. */
  function registerNode(claim: ClusterNodeClaim, instance: CloudInstance): void {
    const name = instance.privateDnsName ?? instance.instanceId;
    cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels: {
          [Label.os]: 'linux',
          ...claim.labels,
          [Label.hostname]: name,
          [Label.instanceType]: instance.instanceType,
          [Label.zone]: instance.zone,
          [Label.capacityType]: instance.capacityType,
        },
      },
      spec: {
        providerID: instance.providerId,
        taints: [...claim.taints, ...claim.startupTaints, UNREGISTERED_TAINT].map((t) => ({
          key: t.key,
          effect: t.effect,
          ...(t.value === undefined ? {} : { value: t.value }),
        })),
      },
      status: {
        capacity: toQuantityMap(claim.status.capacity ?? {}),
        allocatable: toQuantityMap(claim.status.allocatable ?? {}),
      },
    });
    cluster.setNodeReady(name, true);
  }

  // --- kube-scheduler ------------------------------------------------------------------------------

  function podOf(raw: V1Pod): Pod | undefined {
    const uid = uidOf(raw);
    let pod = converted.get(uid);
    if (pod === undefined) {
      try {
        pod = toPod(raw);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        return undefined;
      }
      converted.set(uid, pod);
    }
    return pod;
  }

  async function schedule(): Promise<void> {
    const pending = rawPods().filter((p) => !p.spec?.nodeName && isActive(p));
    if (pending.length === 0 || cluster.revision() === lastScheduleRevision) return;
    const nodes: ExistingNode[] = (await cluster.nodes()).items
      .filter((n) => n.ready && !n.deleting && !n.unschedulable)
      .map((n) => ({ ...n, initialized: true }));
    const candidates = pending.flatMap((p) => {
      const pod = podOf(p);
      return pod === undefined ? [] : [pod];
    });
    const result =
      nodes.length === 0
        ? { placements: [] }
        : solve({
            pods: candidates,
            nodePools: [],
            instanceTypes: new Map(),
            nodes,
            nowMs: nowMs(),
            options: { repack: false },
          });
    const bound = new Set<string>();
    for (const placement of result.placements) {
      if (placement.kind !== 'existingNode') continue;
      const { namespace, name, uid } = placement.pod;
      cluster.bindPod(namespace, name, placement.nodeName);
      cluster.setPodPhase(namespace, name, 'Running');
      bound.add(uid);
      const info = pods.get(uid);
      if (info !== undefined) {
        info.startedMs = nowMs();
        podWaitsMs.push(nowMs() - info.createdMs);
        if (info.replacing !== undefined) {
          const state = interruptions[info.replacing];
          if (state !== undefined) state.unbound -= 1;
          delete info.replacing;
        }
      }
    }
    for (const pod of candidates) {
      if (bound.has(pod.uid)) continue;
      cluster.markPodUnschedulable(
        pod.namespace,
        pod.name,
        `0/${nodes.length} nodes are available: no node has room for the pod or matches its constraints`,
      );
    }
    lastScheduleRevision = cluster.revision();
  }

  // --- EC2: interruption warnings and reclaims ----------------------------------------------------

  /** An EventBridge event as EC2 sends it to the interruption queue, about one instance. */
  function ec2Event(detailType: string, detail: Record<string, string>): string {
    eventCount += 1;
    return JSON.stringify({
      version: '0',
      id: `00000000-0000-4000-8000-${eventCount.toString(16).padStart(12, '0')}`,
      'detail-type': detailType,
      source: 'aws.ec2',
      account: ACCOUNT,
      time: clock
        .now()
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z'),
      region: scenario.region,
      resources: [`arn:aws:ec2:${scenario.region}:${ACCOUNT}:instance/${detail['instance-id']}`],
      detail,
    });
  }

  /**
   * The two-minute warning: EC2 sends the interruption event and takes the instance back at
   * T + 2 min. The pods on its node then are the ones the interruption displaces.
   */
  async function warnSpotInterruption(instance: CloudInstance): Promise<void> {
    warned.add(instance.instanceId);
    terminationReasons.set(instance.instanceId, 'interruption');
    interruptionInbox.push(
      ec2Event(DetailType.spotInterruption, {
        'instance-id': instance.instanceId,
        'instance-action': 'terminate',
      }),
    );
    reclaims.push({ atMs: nowMs() + SPOT_WARNING_MS, instanceId: instance.instanceId });
    const node = (await cluster.nodes()).items.find((n) => n.providerId === instance.providerId);
    const displaced = new Map<string, string>();
    if (node !== undefined) {
      for (const pod of rawPods().filter((p) => p.spec?.nodeName === node.name && isActive(p))) {
        const info = pods.get(uidOf(pod));
        if (info !== undefined) displaced.set(uidOf(pod), info.workload);
      }
    }
    interruptions.push({
      record: {
        atMs: nowMs(),
        kind: 'spot-interruption',
        instanceId: instance.instanceId,
        ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
        handled: false,
      },
      unbound: 0,
      displaced,
    });
    worldLogger.info('spot interruption warning', {
      decision: 'interrupt',
      instanceId: instance.instanceId,
      instanceType: instance.instanceType,
      zone: instance.zone,
      ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
      ...(node === undefined ? {} : { node: node.name }),
      podsOnNode: displaced.size,
      reclaimAt: new Date(nowMs() + SPOT_WARNING_MS).toISOString(),
    });
  }

  /**
   * EC2 takes a warned instance back, unless the termination already terminated it. Its kubelet
   * is gone with it: the Node turns NotReady.
   */
  async function reclaimInstance(instanceId: string): Promise<void> {
    const instance = cloud.reclaim(instanceId);
    if (instance === undefined) return;
    const node = (await cluster.nodes()).items.find((n) => n.providerId === instance.providerId);
    if (node !== undefined) cluster.setNodeReady(node.name, false);
    worldLogger.info('instance reclaimed', {
      decision: 'reclaim',
      instanceId,
      instanceType: instance.instanceType,
      ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
      ...(node === undefined ? {} : { node: node.name }),
      podsLeft:
        node === undefined
          ? 0
          : rawPods().filter((p) => p.spec?.nodeName === node.name && p.status?.phase === 'Running').length,
    });
  }

  async function runEvents(): Promise<void> {
    while (pendingEvents[0] !== undefined && startMs + pendingEvents[0].atMs <= nowMs()) {
      const event = pendingEvents.shift();
      if (event === undefined) break;
      const candidates = (await cloud.list())
        .filter((i) => i.capacityType === 'spot' && i.state === 'running' && !warned.has(i.instanceId))
        .filter((i) => event.nodePool === undefined || i.nodePoolName === event.nodePool)
        .filter((i) => event.instanceType === undefined || i.instanceType === event.instanceType)
        .filter((i) => event.zone === undefined || i.zone === event.zone)
        .sort(
          (a, b) =>
            (a.launchTime?.getTime() ?? 0) - (b.launchTime?.getTime() ?? 0) ||
            a.instanceId.localeCompare(b.instanceId),
        );
      if (candidates.length === 0) {
        worldLogger.info('interruption skipped', {
          decision: 'noop',
          why: 'no running spot instance matches',
          event,
        });
      }
      for (const instance of candidates.slice(0, event.count)) {
        if (event.kind === 'SpotInterruption') {
          await warnSpotInterruption(instance);
          continue;
        }
        interruptionInbox.push(
          ec2Event(DetailType.rebalanceRecommendation, { 'instance-id': instance.instanceId }),
        );
        worldLogger.info('rebalance recommendation', {
          decision: 'recommend',
          instanceId: instance.instanceId,
          ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
        });
      }
    }
    reclaims.sort((a, b) => a.atMs - b.atMs || a.instanceId.localeCompare(b.instanceId));
    while (reclaims[0] !== undefined && reclaims[0].atMs <= nowMs()) {
      const due = reclaims.shift();
      if (due !== undefined) await reclaimInstance(due.instanceId);
    }
  }

  /** Pods an interrupted node lost (evicted, deleted or gone) go back to their controllers. */
  function releaseDisplaced(): void {
    const live = new Map(rawPods().map((p) => [uidOf(p), p]));
    interruptions.forEach((state, index) => {
      for (const [uid, workload] of state.displaced) {
        const pod = live.get(uid);
        if (pod !== undefined && isActive(pod)) continue;
        state.displaced.delete(uid);
        owed.set(workload, [...(owed.get(workload) ?? []), index]);
      }
    });
  }

  // --- what the cloud did ----------------------------------------------------------------------------

  async function observeCloud(): Promise<void> {
    const history = cloud.history();
    for (const instance of history.slice(historyLength)) {
      launches.push({
        atMs: instance.launchTime?.getTime() ?? nowMs(),
        nodeClaim: instance.nodeClaimName ?? '',
        nodePool: instance.nodePoolName ?? '',
        instanceType: instance.instanceType,
        capacityType: instance.capacityType,
        zone: instance.zone,
        pricePerHour: priceOf(instance),
      });
    }
    historyLength = history.length;
    const live = new Map((await cloud.list()).map((i) => [i.instanceId, i]));
    for (const [id, instance] of liveInstances) {
      if (live.has(id)) continue;
      terminations.push({
        atMs: nowMs(),
        nodeClaim: instance.nodeClaimName ?? '',
        instanceType: instance.instanceType,
        reason:
          terminationReasons.get(id) ?? claimDeleteReasons.get(instance.nodeClaimName ?? '') ?? 'terminated',
      });
    }
    liveInstances.clear();
    for (const [id, instance] of live) liveInstances.set(id, instance);
  }

  function priceOf(instance: CloudInstance): number {
    return prices.get(`${instance.instanceType}/${instance.zone}/${instance.capacityType}`) ?? 0;
  }

  function sample(): SimSample {
    const byCapacity: Partial<Record<CapacityType, number>> = {};
    let cost = 0;
    for (const instance of liveInstances.values()) {
      byCapacity[instance.capacityType] = (byCapacity[instance.capacityType] ?? 0) + 1;
      cost += priceOf(instance);
    }
    const active = rawPods().filter(isActive);
    const running = active.filter((p) => p.spec?.nodeName).length;
    return {
      atMs: nowMs(),
      nodes: liveInstances.size,
      nodesByCapacityType: byCapacity,
      costPerHour: Math.round(cost * 10_000) / 10_000,
      pendingPods: active.length - running,
      runningPods: running,
    };
  }

  function takeSamples(): void {
    while (nextSampleMs <= nowMs() && nextSampleMs <= endMs) {
      const s = { ...sample(), atMs: nextSampleMs };
      samples.push(s);
      options.onProgress?.({
        offsetMs: nextSampleMs - startMs,
        durationMs: scenario.durationMs,
        nodes: s.nodes,
        pendingPods: s.pendingPods,
        runningPods: s.runningPods,
        costPerHour: s.costPerHour,
      });
      nextSampleMs += scenario.sampleIntervalMs;
    }
  }

  /** One step of everything that is not Flotilla: events, workloads, kubelets, kube-scheduler. */
  async function stepWorld(): Promise<void> {
    const offsetMs = nowMs() - startMs;
    await runEvents();
    releaseDisplaced();
    for (const w of scenario.workloads) {
      if (w.kind === 'Deployment') await runDeployment(w, offsetMs);
      else runJob(w, offsetMs);
    }
    await kubelets();
    await schedule();
    await observeCloud();
    takeSamples();
  }

  /** Batching waits advance virtual time, and the world moves on meanwhile. */
  async function sleep(ms: number): Promise<void> {
    for (let waited = 0; waited < ms; waited += TICK_MS) {
      clock.advance(Math.min(TICK_MS, ms - waited));
      await stepWorld();
    }
  }

  // --- Flotilla's controllers: each virtual tick, these run in order ---------------------------------

  const provisioner: Controller = {
    name: 'provisioner',
    async run(now) {
      const provisionable = (await cluster.provisionablePods()).items;
      if (provisionable.length === 0) return;
      const news = provisionable.some((p) => !provisionSeen.has(p.uid));
      if (!news && now.getTime() - lastProvisionMs < PROVISION_SCHEDULE_MS) return;
      provisionRuns += 1;
      lastProvisionMs = now.getTime();
      const result = await provision(
        { cluster, cloud, leases, clock, sleep, logger, nodeClassResolver: resolver },
        { holder: `simulator-${provisionRuns}` },
      );
      provisionSeen = new Set((await cluster.provisionablePods()).items.map((p) => p.uid));
      for (const p of provisionable) provisionSeen.add(p.uid);
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
      const result = await controllersPass(now);
      for (const d of result.deleted) claimDeleteReasons.set(d.name, d.reason.replace('_', '-'));
      lastLifecycleRevision = cluster.revision();
      lastLifecycleMs = now.getTime();
    },
  };

  /** The interruption Lambda: consumes the interruption queue, one batch per tick. */
  const interruption: Controller = {
    name: 'interruption',
    async run() {
      if (interruptionInbox.length === 0) return;
      const batch = interruptionInbox.splice(0);
      const claims = await indexNodeClaims(cluster);
      for (const body of batch) {
        const parsed = parseInterruptionEvent(body);
        if (!parsed.ok) {
          logger.warn('interruption message rejected', { problem: parsed.problem });
          continue;
        }
        await handleInterruption({ cluster, cloud, terminationQueue, logger }, parsed.message, claims);
      }
    },
  };

  /**
   * The termination Lambda: a queue message starts passes over its NodeClaim, repeated as the
   * pass asks, for at most one invocation's budget; what is left goes on through a delayed
   * message. The garbage-collection schedule sweeps every terminating NodeClaim the same way,
   * without handing on.
   */
  const termination: Controller = {
    name: 'termination',
    async run(now) {
      const t = now.getTime();
      const drive = (name: string, handOn: boolean) => {
        const current = drives.get(name);
        if (current === undefined)
          drives.set(name, { nextMs: t, untilMs: t + TERMINATION_BUDGET_MS, handOn });
        else current.handOn ||= handOn;
      };
      for (const request of terminationQueue.receive()) drive(request.nodeClaim, true);
      if (t - lastSweepMs >= TERMINATION_SWEEP_MS) {
        lastSweepMs = t;
        for (const name of (await sweepTerminations({ cluster, cloud, logger })).terminating) {
          drive(name, false);
        }
      }
      const due = [...drives].filter(([, d]) => d.nextMs <= t).sort(([a], [b]) => a.localeCompare(b));
      for (const [name, d] of due) {
        const result = await terminateNodeClaim({ cluster, cloud, logger }, name, now);
        if (result.kind !== 'continue') {
          drives.delete(name);
          continue;
        }
        const waitMs = result.afterSeconds * 1000;
        if (t + waitMs <= d.untilMs) {
          d.nextMs = t + waitMs;
          continue;
        }
        drives.delete(name);
        if (d.handOn) await terminationQueue.enqueue({ nodeClaim: name }, result.afterSeconds);
        logger.info('termination continues later', {
          nodeClaim: name,
          decision: 'continue',
          waitingOn: result.waitingOn,
          reason: result.detail,
          afterSeconds: result.afterSeconds,
          queued: d.handOn,
        });
      }
    },
  };

  const controllers: readonly Controller[] = [interruption, termination, provisioner, lifecycle];

  /** Nothing is moving: no pod waits, no instance boots, no pod terminates, no event waits. */
  function idle(): boolean {
    if (interruptionInbox.length > 0) return false;
    const active = rawPods();
    if (active.some((p) => isActive(p) && !p.spec?.nodeName)) return false;
    if (active.some((p) => p.metadata?.deletionTimestamp !== undefined)) return false;
    if ([...liveInstances.values()].some((i) => !registeredProviders.has(i.providerId))) return false;
    return true;
  }

  /** The next instant something is due when idle: an event, a scale step, a job, a sample. */
  function nextWakeMs(): number {
    const due: number[] = [nextSampleMs, endMs];
    const offset = nowMs() - startMs;
    for (const e of pendingEvents) due.push(startMs + e.atMs);
    for (const r of reclaims) due.push(r.atMs);
    for (const d of drives.values()) due.push(d.nextMs);
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
    for (const w of scenario.workloads) {
      if (w.kind === 'Deployment') {
        for (const s of w.scale) if (s.atMs > offset) due.push(startMs + s.atMs);
      } else {
        if (w.atMs > offset) due.push(startMs + w.atMs);
        for (const pod of podsOf(workloadKey(w))) {
          const started = pods.get(uidOf(pod))?.startedMs;
          if (started !== undefined) due.push(started + w.runTimeMs);
        }
      }
    }
    return Math.min(...due.filter((t) => t > nowMs()));
  }

  async function run(): Promise<SimulationRecord> {
    while (nowMs() < endMs) {
      await stepWorld();
      for (const controller of controllers) await controller.run(clock.now());
      if (idle()) clock.set(new Date(Math.max(nowMs() + TICK_MS, nextWakeMs())));
      else clock.advance(TICK_MS);
    }
    // Batching may have carried the clock past the end; time never runs backwards.
    if (nowMs() < endMs) clock.set(new Date(endMs));
    await stepWorld();

    // Handled once the instance is gone and every pod its node lost that its controller still
    // wanted has run again elsewhere.
    interruptions.forEach((state, index) => {
      const owing = [...owed.values()].some((list) => list.includes(index));
      const gone = !liveInstances.has(state.record.instanceId);
      state.record = {
        ...state.record,
        handled: gone && state.displaced.size === 0 && state.unbound === 0 && !owing,
      };
    });
    const unschedulable: SimUnschedulablePod[] = rawPods()
      .filter((p) => isActive(p) && !p.spec?.nodeName)
      .map((p) => {
        const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
        return {
          namespace: p.metadata?.namespace ?? '',
          name: p.metadata?.name ?? '',
          reasons: lastReasons.get(uidOf(p)) ?? [
            scheduled?.message ?? 'created just before the end; not looked at by the scheduler yet',
          ],
        };
      })
      .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));

    return {
      scenario: {
        name: scenario.name,
        ...(scenario.description === undefined ? {} : { description: scenario.description }),
        region: scenario.region,
        startMs,
        durationMs: scenario.durationMs,
      },
      samples,
      launches,
      terminations,
      interruptions: interruptions.map((s) => s.record),
      podWaitsMs,
      unschedulable,
      decisions,
    };
  }

  return { run };
}
