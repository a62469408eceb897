import type { CapacityType } from '../../../shared/core/index.ts';
import type {
  SimDisruption,
  SimInterruption,
  SimLaunch,
  SimSample,
  SimTermination,
  SimUnschedulablePod,
  SimulationRecord,
} from '../../../shared/simulator/record.ts';

// Builders of SimulationRecords for the report tests: a small event model (demand that rises and
// falls through the run, nodes launched and consolidated to follow it, spot interruptions that
// are replaced) so the records look like what the engine produces. Deterministic: no randomness.

/** 2025-03-03T00:00:00Z, a Monday. */
export const START_MS = Date.UTC(2025, 2, 3);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Instance types the model launches in turn, with their price per capacity type. */
const TYPES: readonly { name: string; spot: number; onDemand: number }[] = [
  { name: 'm7i.large', spot: 0.0421, onDemand: 0.1008 },
  { name: 'c7g.xlarge', spot: 0.0512, onDemand: 0.145 },
  { name: 'm6a.xlarge', spot: 0.0693, onDemand: 0.1728 },
  { name: 'r7g.large', spot: 0.0398, onDemand: 0.1071 },
];

export interface DayOptions {
  readonly name?: string;
  readonly hours?: number;
  /** @default 60_000 */
  readonly sampleEveryMs?: number;
  /** Minutes into the run when a spot node is interrupted; the last one is not handled. */
  readonly interruptionsAtMinutes?: readonly number[];
  readonly unschedulable?: readonly SimUnschedulablePod[];
  /** Pods per node. @default 10 */
  readonly podsPerNode?: number;
}

interface LiveNode {
  readonly launch: SimLaunch;
}

/**
 * A day of a web tier in miniature: demand follows a hump over the run (20 → ~120 pods → 30),
 * one node per `podsPerNode` pods, every third node on-demand, the others spot; a GPU node for
 * a batch job in the second hour; interruptions as given. Pods that arrive wait 40–100 s.
 */
export function dayRecord(options: DayOptions = {}): SimulationRecord {
  const hours = options.hours ?? 6;
  const step = options.sampleEveryMs ?? MINUTE;
  const podsPerNode = options.podsPerNode ?? 10;
  const durationMs = hours * HOUR;
  const interruptAt = new Set(
    (options.interruptionsAtMinutes ?? [75, 150, 200]).map((m) => START_MS + m * MINUTE),
  );
  const lastInterruption = Math.max(...interruptAt);

  const samples: SimSample[] = [];
  const launches: SimLaunch[] = [];
  const terminations: SimTermination[] = [];
  const interruptions: SimInterruption[] = [];
  const disruptions: SimDisruption[] = [];
  const podWaitsMs: number[] = [];
  const decisions: Record<string, unknown>[] = [];
  const live: LiveNode[] = [];
  let claims = 0;
  let pending = 0;
  let previousDemand = 0;

  const launch = (
    atMs: number,
    reason: string,
    forceSpot = false,
    type?: { name: string; price: number },
  ) => {
    claims += 1;
    const pick = TYPES[claims % TYPES.length] ?? TYPES[0];
    const capacityType: CapacityType = !forceSpot && claims % 3 === 0 ? 'on-demand' : 'spot';
    const entry: SimLaunch = {
      atMs,
      nodeClaim: `default-${claims.toString(16).padStart(5, '0')}`,
      nodePool: type === undefined ? 'default' : 'gpu',
      instanceType: type?.name ?? pick?.name ?? 'm7i.large',
      capacityType: type === undefined ? capacityType : 'on-demand',
      zone: `us-west-2${'abc'[claims % 3]}`,
      pricePerHour: type?.price ?? (capacityType === 'spot' ? (pick?.spot ?? 0) : (pick?.onDemand ?? 0)),
    };
    launches.push(entry);
    live.push({ launch: entry });
    decisions.push({
      atMs,
      level: 'info',
      message: 'launch decided',
      nodePool: entry.nodePool,
      nodeClaim: entry.nodeClaim,
      instanceType: entry.instanceType,
      capacityType: entry.capacityType,
      zone: entry.zone,
      reason,
    });
  };
  const terminate = (atMs: number, node: LiveNode, reason: string) => {
    live.splice(live.indexOf(node), 1);
    if (reason !== 'interruption') {
      disruptions.push({
        atMs,
        nodeClaim: node.launch.nodeClaim,
        reason: reason === 'empty' ? 'Empty' : 'Underutilized',
      });
    }
    terminations.push({
      atMs,
      nodeClaim: node.launch.nodeClaim,
      instanceType: node.launch.instanceType,
      reason,
    });
    decisions.push({
      atMs,
      level: 'info',
      message: 'node terminated',
      nodeClaim: node.launch.nodeClaim,
      reason,
    });
  };

  for (let atMs = START_MS; atMs <= START_MS + durationMs; atMs += step) {
    const phase = (atMs - START_MS) / durationMs;
    const demand = Math.round(20 + 100 * Math.sin(Math.PI * phase) ** 2 + (phase > 0.8 ? 10 : 0));
    const arrived = Math.max(0, demand - previousDemand);
    previousDemand = demand;
    for (let i = 0; i < arrived; i++) podWaitsMs.push(40_000 + ((i * 7919 + atMs / step) % 61) * 1000);
    pending = arrived;

    const gpuWindow = atMs >= START_MS + HOUR && atMs < START_MS + 2 * HOUR;
    const gpuNode = live.find((n) => n.launch.nodePool === 'gpu');
    if (gpuWindow && gpuNode === undefined)
      launch(atMs, '1 pending pod needs nvidia.com/gpu', false, { name: 'g5.xlarge', price: 1.006 });
    if (!gpuWindow && gpuNode !== undefined) terminate(atMs, gpuNode, 'empty');

    const wanted = Math.ceil(demand / podsPerNode);
    let general = live.filter((n) => n.launch.nodePool === 'default');
    while (general.length < wanted) {
      launch(atMs, `${pending} pending pods`);
      general = live.filter((n) => n.launch.nodePool === 'default');
    }
    while (general.length > wanted) {
      const newest = general[general.length - 1];
      if (newest === undefined) break;
      terminate(atMs, newest, 'consolidation');
      general = live.filter((n) => n.launch.nodePool === 'default');
    }
    if (interruptAt.has(atMs)) {
      const victim = live.find((n) => n.launch.capacityType === 'spot');
      if (victim !== undefined) {
        const handled = atMs !== lastInterruption;
        interruptions.push({
          atMs,
          kind: atMs === lastInterruption ? 'rebalance' : 'spot-interruption',
          instanceId: `i-0${victim.launch.nodeClaim.slice(-5)}00000000000`,
          nodeClaim: victim.launch.nodeClaim,
          handled,
        });
        decisions.push({
          atMs,
          level: 'info',
          message: 'interruption received',
          nodeClaim: victim.launch.nodeClaim,
        });
        if (handled) {
          terminate(atMs, victim, 'interruption');
          launch(atMs, 'replacement for an interrupted node', true);
        }
      }
    }

    const byCapacity: Partial<Record<CapacityType, number>> = {};
    for (const n of live) byCapacity[n.launch.capacityType] = (byCapacity[n.launch.capacityType] ?? 0) + 1;
    samples.push({
      atMs,
      nodes: live.length,
      nodesByCapacityType: byCapacity,
      costPerHour: Math.round(live.reduce((sum, n) => sum + n.launch.pricePerHour, 0) * 10_000) / 10_000,
      pendingPods: pending,
      runningPods: demand - pending,
    });
  }

  return {
    scenario: {
      name: options.name ?? 'web-day',
      description: 'A web tier through a working day, with spot interruptions',
      region: 'us-west-2',
      startMs: START_MS,
      durationMs,
    },
    samples,
    launches,
    terminations,
    interruptions,
    disruptions,
    podWaitsMs,
    unschedulable: options.unschedulable ?? [
      unschedulablePod('batch', 'huge-0', ['nodePool default: no instance type has 512 cpu']),
      unschedulablePod('batch', 'huge-1', ['nodePool default: no instance type has 512 cpu']),
      unschedulablePod('ml', 'trainer', [
        'nodePool default: taint nvidia.com/gpu=true:NoSchedule not tolerated',
        'nodePool gpu: limits exceeded (nvidia.com/gpu)',
      ]),
    ],
    decisions,
  };
}

export function unschedulablePod(
  namespace: string,
  name: string,
  reasons: readonly string[],
): SimUnschedulablePod {
  return { namespace, name, reasons };
}

/**
 * Three samples 20 minutes apart, and nodes disrupted between them: one drifted before the second,
 * one more drifted and one empty before the third, and an interruption and a rebalance at the end.
 */
export function disruptedRecord(): SimulationRecord {
  const sampleAt = (i: number) => START_MS + i * 20 * MINUTE;
  return {
    ...emptyRecord(),
    samples: [0, 1, 2].map((i) => ({
      atMs: sampleAt(i),
      nodes: 3,
      nodesByCapacityType: { 'on-demand': 3 },
      costPerHour: 0.3,
      pendingPods: 0,
      runningPods: 6,
    })),
    disruptions: [
      { atMs: sampleAt(0) + 5 * MINUTE, nodeClaim: 'default-1', reason: 'Drifted' },
      { atMs: sampleAt(1) + 5 * MINUTE, nodeClaim: 'default-2', reason: 'Drifted' },
      { atMs: sampleAt(1) + 10 * MINUTE, nodeClaim: 'default-3', reason: 'Empty' },
    ],
    interruptions: [
      { atMs: sampleAt(2), kind: 'spot-interruption', instanceId: 'i-1', nodeClaim: 'spot-1', handled: true },
      { atMs: sampleAt(2), kind: 'rebalance', instanceId: 'i-2', handled: false },
    ],
  };
}

/** A record with nothing in it but the scenario: no samples, launches, pods or decisions. */
export function emptyRecord(): SimulationRecord {
  return {
    scenario: { name: 'idle', region: 'us-east-1', startMs: START_MS, durationMs: HOUR },
    samples: [],
    launches: [],
    terminations: [],
    interruptions: [],
    disruptions: [],
    podWaitsMs: [],
    unschedulable: [],
    decisions: [],
  };
}
