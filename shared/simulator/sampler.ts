import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { MemoryCloud, MemoryCluster } from '../adapters/memory/index.ts';
import { toPod } from '../apis/index.ts';
import {
  type CapacityType,
  computePodRequests,
  parseResourceList,
  Resource,
  type ResourceList,
  ValidationError,
} from '../core/index.ts';
import type { CloudInstance } from '../ports/cloud.ts';
import { type NodeUse, poolSamples } from './idle.ts';
import type { SimLaunch, SimSample, SimTermination } from './record.ts';
import type { Scenario } from './scenario.ts';
import { isActive, rawPods, WORKLOAD_LABEL } from './workloads.ts';

// What the report is made of, observed from outside: the instances the cloud launched and lost
// (and why), and at every sample interval the nodes, their cost and the pods pending and running.
// It only reads the world: the sample interval never changes when anything happens. Between two
// samples it keeps the most pods seen pending at once, so an outage shorter than the interval
// still shows.

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

export interface Sampler {
  /** Records the instances launched and terminated since the last look, and the pods pending. */
  observe(): Promise<void>;
  /**
   * Takes the samples due by `untilMs` (default now; none past the scenario's end), each stamped
   * with its own instant and showing the world as it is when taken. The engine takes the samples
   * of an idle stretch before it moves the clock past them.
   */
  take(untilMs?: number): void;
  /** The instances alive at the last look, by id. */
  readonly live: ReadonlyMap<string, CloudInstance>;
  readonly samples: readonly SimSample[];
  readonly launches: readonly SimLaunch[];
  readonly terminations: readonly SimTermination[];
  /**
   * Dollars billed up to `untilMs` (within the run): each instance at its price from its launch
   * (an initial node's from the run's start) to its termination, or to `untilMs` if it runs on.
   */
  billedUsd(untilMs: number): number;
}

export interface SamplerOptions {
  readonly scenario: Scenario;
  readonly cluster: MemoryCluster;
  readonly cloud: MemoryCloud;
  readonly nowMs: () => number;
  /** Why an instance that is gone went: an interruption, a disruption, or plainly terminated. */
  readonly terminationReason: (instance: CloudInstance) => string;
  /**
   * The price Flotilla launched a NodeClaim's instance at (a NodeOverlay's, where one applies):
   * what the instance costs for its life. @default the catalog's price of its offering
   */
  readonly launchPrice?: (nodeClaim: string) => number | undefined;
  readonly onProgress?: (progress: SimulationProgress) => void;
}

/** Reads the offerings' prices of every EC2NodeClass once, then observes the run. */
export async function makeSampler(options: SamplerOptions): Promise<Sampler> {
  const { scenario, cluster, cloud, nowMs } = options;
  const endMs = scenario.startMs + scenario.durationMs;
  const prices = new Map<string, number>();
  /** Offerings whose price the catalog only assumes. */
  const assumed = new Set<string>();
  for (const nodeClass of (await cluster.nodeClasses()).items) {
    for (const type of await cloud.instanceTypes(nodeClass)) {
      for (const o of type.offerings) {
        const key = `${type.name}/${o.zone}/${o.capacityType}`;
        prices.set(key, o.priceUsdPerHour);
        if (o.priceAssumed === true) assumed.add(key);
      }
    }
  }
  const samples: SimSample[] = [];
  const launches: SimLaunch[] = [];
  const terminations: SimTermination[] = [];
  const live = new Map<string, CloudInstance>();
  // Instances already there (the scenario's initial nodes) were not launched during the run.
  let historyLength = cloud.history().length;
  let nextSampleMs = scenario.startMs;
  /** The most pods pending at one look since the last sample. */
  let peakPending = 0;

  const catalogPriceOf = (instance: CloudInstance) =>
    prices.get(`${instance.instanceType}/${instance.zone}/${instance.capacityType}`) ?? 0;
  /** Each launched instance's price as launched, by instance id. */
  const launchedPrices = new Map<string, number>();
  const priceOf = (instance: CloudInstance) =>
    launchedPrices.get(instance.instanceId) ?? catalogPriceOf(instance);
  /** Dollars of the instances terminated so far. */
  let terminatedUsd = 0;
  /** What an instance costs from when it is billed (its launch, or the run's start) to `untilMs`. */
  const billed = (instance: CloudInstance, untilMs: number) => {
    const fromMs = Math.max(instance.launchTime?.getTime() ?? scenario.startMs, scenario.startMs);
    return (priceOf(instance) * Math.max(0, Math.min(untilMs, endMs) - fromMs)) / 3_600_000;
  };

  function sample(): SimSample {
    const byCapacity: Partial<Record<CapacityType, number>> = {};
    let cost = 0;
    for (const instance of live.values()) {
      byCapacity[instance.capacityType] = (byCapacity[instance.capacityType] ?? 0) + 1;
      cost += priceOf(instance);
    }
    const active = rawPods(cluster).filter(isActive);
    const running = active.filter((p) => p.spec?.nodeName).length;
    const pending = active.length - running;
    const pools = poolSamples(nodeUses(active));
    return {
      atMs: nowMs(),
      nodes: live.size,
      nodesByCapacityType: byCapacity,
      costPerHour: Math.round(cost * 10_000) / 10_000,
      pendingPods: pending,
      peakPendingPods: Math.max(peakPending, pending),
      runningPods: running,
      unavailablePods: unavailable(active),
      nodePools: pools,
      idleCostPerHour:
        Math.round(Object.values(pools).reduce((sum, p) => sum + p.idleCostPerHour, 0) * 10_000) / 10_000,
    };
  }

  /** Requests by pod uid: a pod's requests never change. Undefined for a pod the API would refuse. */
  const podRequests = new Map<string, ResourceList | undefined>();
  function requestsOf(raw: V1Pod): ResourceList | undefined {
    const uid = raw.metadata?.uid ?? '';
    if (podRequests.has(uid)) return podRequests.get(uid);
    let requests: ResourceList | undefined;
    try {
      requests = computePodRequests(toPod(raw));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
    }
    podRequests.set(uid, requests);
    return requests;
  }

  /** Each live instance with its NodePool, price, its Node's allocatable and its pods' requests. */
  function nodeUses(active: readonly V1Pod[]): NodeUse[] {
    const requested = new Map<string, { cpuMillis: number; memoryBytes: number }>();
    for (const pod of active) {
      const nodeName = pod.spec?.nodeName;
      const requests = nodeName ? requestsOf(pod) : undefined;
      if (nodeName === undefined || requests === undefined) continue;
      const sum = requested.get(nodeName) ?? { cpuMillis: 0, memoryBytes: 0 };
      sum.cpuMillis += requests[Resource.cpu] ?? 0;
      sum.memoryBytes += requests[Resource.memory] ?? 0;
      requested.set(nodeName, sum);
    }
    const nodes = new Map<string, V1Node>();
    for (const node of cluster.list('Node') as unknown as V1Node[]) {
      if (node.spec?.providerID !== undefined) nodes.set(node.spec.providerID, node);
    }
    return [...live.values()].map((instance) => {
      const node = nodes.get(instance.providerId);
      const name = node?.metadata?.name ?? '';
      const allocatable = node === undefined ? undefined : allocatableOf(node);
      return {
        nodePool: instance.nodePoolName ?? '',
        pricePerHour: priceOf(instance),
        ...(allocatable === undefined ? {} : { allocatable }),
        requested: requested.get(name) ?? { cpuMillis: 0, memoryBytes: 0 },
      };
    });
  }

  function allocatableOf(node: V1Node): { cpuMillis: number; memoryBytes: number } | undefined {
    const raw = node.status?.allocatable;
    if (raw === undefined) return undefined;
    const list = parseResourceList(raw, {
      object: `node "${node.metadata?.name ?? ''}"`,
      field: 'status.allocatable',
    });
    return { cpuMillis: list[Resource.cpu] ?? 0, memoryBytes: list[Resource.memory] ?? 0 };
  }

  /** Per Deployment, the replicas wanted that are not Ready (see SimSample). */
  function unavailable(active: readonly V1Pod[]): Record<string, number> {
    const ready = new Map<string, number>();
    for (const p of active) {
      if (!(p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')) continue;
      const workload = p.metadata?.labels?.[WORKLOAD_LABEL] ?? '';
      ready.set(workload, (ready.get(workload) ?? 0) + 1);
    }
    const out: Record<string, number> = {};
    for (const w of scenario.workloads) {
      if (w.kind !== 'Deployment') continue;
      const rs = cluster.get('ReplicaSet', w.name, w.namespace) as
        | { spec?: { replicas?: number } }
        | undefined;
      const wanted = rs?.spec?.replicas ?? 0;
      out[`${w.namespace}/${w.name}`] = Math.max(0, wanted - (ready.get(`${w.namespace}.${w.name}`) ?? 0));
    }
    return out;
  }

  /** Whether a NodeClaim's node runs Windows (its `kubernetes.io/os` label, as launched). */
  const isWindows = (nodeClaim: string | undefined) => {
    if (nodeClaim === undefined) return false;
    const raw = cluster.get('NodeClaim', nodeClaim) as
      | { metadata?: { labels?: Record<string, string> } }
      | undefined;
    return raw?.metadata?.labels?.['kubernetes.io/os'] === 'windows';
  };

  return {
    async observe() {
      const history = cloud.history();
      for (const instance of history.slice(historyLength)) {
        const catalog = catalogPriceOf(instance);
        const launched = options.launchPrice?.(instance.nodeClaimName ?? '');
        if (launched !== undefined) launchedPrices.set(instance.instanceId, launched);
        launches.push({
          atMs: instance.launchTime?.getTime() ?? nowMs(),
          nodeClaim: instance.nodeClaimName ?? '',
          nodePool: instance.nodePoolName ?? '',
          instanceType: instance.instanceType,
          capacityType: instance.capacityType,
          zone: instance.zone,
          pricePerHour: priceOf(instance),
          ...(assumed.has(`${instance.instanceType}/${instance.zone}/${instance.capacityType}`)
            ? { priceAssumed: true }
            : {}),
          ...(launched !== undefined && launched !== catalog ? { priceOverlaid: true } : {}),
          ...(isWindows(instance.nodeClaimName) ? { priceWithoutWindowsLicense: true } : {}),
          ...(instance.imageId === undefined ? {} : { imageId: instance.imageId }),
        });
      }
      historyLength = history.length;
      const now = new Map((await cloud.list()).map((i) => [i.instanceId, i]));
      for (const [, instance] of live) {
        if (now.has(instance.instanceId)) continue;
        terminatedUsd += billed(instance, nowMs());
        terminations.push({
          atMs: nowMs(),
          nodeClaim: instance.nodeClaimName ?? '',
          instanceType: instance.instanceType,
          reason: options.terminationReason(instance),
        });
      }
      live.clear();
      for (const [id, instance] of now) live.set(id, instance);
      const pending = rawPods(cluster).filter((p) => isActive(p) && !p.spec?.nodeName).length;
      peakPending = Math.max(peakPending, pending);
    },

    take(untilMs = nowMs()) {
      while (nextSampleMs <= untilMs && nextSampleMs <= endMs) {
        const s = { ...sample(), atMs: nextSampleMs };
        samples.push(s);
        peakPending = s.pendingPods;
        options.onProgress?.({
          offsetMs: nextSampleMs - scenario.startMs,
          durationMs: scenario.durationMs,
          nodes: s.nodes,
          pendingPods: s.pendingPods,
          runningPods: s.runningPods,
          costPerHour: s.costPerHour,
        });
        nextSampleMs += scenario.sampleIntervalMs;
      }
    },

    billedUsd: (untilMs) => [...live.values()].reduce((sum, i) => sum + billed(i, untilMs), terminatedUsd),
    live,
    samples,
    launches,
    terminations,
  };
}
