import type { MemoryCloud, MemoryCluster } from '../adapters/memory/index.ts';
import { DetailType } from '../messages/interruption-event.ts';
import type { ManualClock } from '../ports/clock.ts';
import type { CloudInstance } from '../ports/cloud.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Scenario, ScenarioEvent } from './scenario.ts';
import { rawPods, type Workloads } from './workloads.ts';

// The simulated world's EC2: at the scenario's times it warns of spot interruptions (and takes
// the instances back two minutes later) and recommends rebalancing, sending the EventBridge events
// EC2 sends to the interruption queue.

/** EC2's spot interruption notice: the instance is reclaimed this long after the warning. */
const SPOT_WARNING_MS = 120_000;
/** The account EC2 events name. */
const ACCOUNT = '000000000000';

/** One message on the interruption queue: an EventBridge event as JSON. */
export interface QueuedEvent {
  readonly messageId: string;
  readonly body: string;
}

export interface Ec2Events {
  /** Sends the events that are due and takes back the warned instances whose notice ran out. */
  step(): Promise<void>;
  /** The instants an event or a reclaim is due. */
  wakeTimes(): readonly number[];
  /** Why EC2 took an instance away, when it did. */
  reasonOf(instanceId: string): string | undefined;
}

export interface Ec2EventsOptions {
  readonly scenario: Scenario;
  readonly clock: ManualClock;
  readonly cluster: MemoryCluster;
  readonly cloud: MemoryCloud;
  /** What EC2 does in place of the world is logged apart from Flotilla's decisions. */
  readonly logger: Logger;
  /** The interruption queue, which Flotilla's interruption controller consumes. */
  readonly inbox: QueuedEvent[];
  readonly workloads: Workloads;
}

export function makeEc2Events(options: Ec2EventsOptions): Ec2Events {
  const { scenario, clock, cluster, cloud, logger, inbox, workloads } = options;
  const startMs = scenario.startMs;
  const nowMs = () => clock.now().getTime();
  const pendingEvents = scenario.events
    .filter(
      (e): e is Extract<ScenarioEvent, { kind: 'SpotInterruption' | 'RebalanceRecommendation' }> =>
        e.kind === 'SpotInterruption' || e.kind === 'RebalanceRecommendation',
    )
    .map((e) => ({ ...e }))
    .sort((a, b) => a.atMs - b.atMs);
  /** Instances EC2 has warned and takes back at `atMs`. */
  const reclaims: { atMs: number; instanceId: string }[] = [];
  const warned = new Set<string>();
  const reasons = new Map<string, string>();
  let eventCount = 0;

  /** Sends an EventBridge event as EC2 sends it to the interruption queue, about one instance. */
  function send(detailType: string, detail: Record<string, string>): void {
    eventCount += 1;
    const id = eventCount.toString(16).padStart(12, '0');
    inbox.push({
      messageId: `00000000-0000-4000-9000-${id}`,
      body: JSON.stringify({
        version: '0',
        id: `00000000-0000-4000-8000-${id}`,
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
      }),
    });
  }

  /**
   * The two-minute warning: EC2 sends the interruption event and takes the instance back at
   * T + 2 min. The pods on its node then are the ones the interruption displaces.
   */
  async function warnSpotInterruption(instance: CloudInstance): Promise<void> {
    warned.add(instance.instanceId);
    reasons.set(instance.instanceId, 'interruption');
    send(DetailType.spotInterruption, {
      'instance-id': instance.instanceId,
      'instance-action': 'terminate',
    });
    reclaims.push({ atMs: nowMs() + SPOT_WARNING_MS, instanceId: instance.instanceId });
    const node = (await cluster.nodes()).items.find((n) => n.providerId === instance.providerId);
    const podsOnNode = workloads.displace(
      {
        atMs: nowMs(),
        kind: 'spot-interruption',
        instanceId: instance.instanceId,
        ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
        handled: false,
      },
      node?.name,
    );
    logger.info('spot interruption warning', {
      decision: 'interrupt',
      instanceId: instance.instanceId,
      instanceType: instance.instanceType,
      zone: instance.zone,
      ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
      ...(node === undefined ? {} : { node: node.name }),
      podsOnNode,
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
    logger.info('instance reclaimed', {
      decision: 'reclaim',
      instanceId,
      instanceType: instance.instanceType,
      ...(instance.nodeClaimName === undefined ? {} : { nodeClaim: instance.nodeClaimName }),
      ...(node === undefined ? {} : { node: node.name }),
      podsLeft:
        node === undefined
          ? 0
          : rawPods(cluster).filter((p) => p.spec?.nodeName === node.name && p.status?.phase === 'Running')
              .length,
    });
  }

  return {
    async step() {
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
          logger.info('interruption skipped', {
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
          send(DetailType.rebalanceRecommendation, { 'instance-id': instance.instanceId });
          logger.info('rebalance recommendation', {
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
    },

    wakeTimes: () => [...pendingEvents.map((e) => startMs + e.atMs), ...reclaims.map((r) => r.atMs)],

    reasonOf: (instanceId) => reasons.get(instanceId),
  };
}
