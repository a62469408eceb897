import {
  MEMORY_AL2023_AMIS,
  type MemoryAlarms,
  type MemoryCluster,
  memoryAl2023Release,
} from '../adapters/memory/index.ts';
import type { Clock } from '../ports/clock.ts';
import type { AmiStatus } from '../ports/cloud.ts';
import type { Logger } from '../runtime/logger.ts';
import { mergePatch, type Scenario, type ScenarioEvent } from './scenario.ts';

// What changes under Flotilla besides workloads and capacity: users editing NodePools and
// EC2NodeClasses (as `kubectl patch --type merge`), AWS publishing AMI releases that
// `al2023@latest` resolves to from then on, and CloudWatch alarms changing state. Flotilla notices them as it would in a cluster: the
// EC2NodeClass controller resolves a changed class at once and a new release at its next
// refresh, and the disruption controller finds the NodeClaims that no longer match.

type SpecChange = Extract<
  ScenarioEvent,
  { kind: 'UpdateNodePool' | 'UpdateEC2NodeClass' | 'AMIRelease' | 'AlarmState' }
>;

export interface SpecChanges {
  /** Applies the changes that are due. */
  step(): void;
  /** When the next change is due. */
  wakeTimes(): readonly number[];
  /** The images `al2023@latest` resolves to now. */
  latestAmis(): readonly AmiStatus[];
}

export interface SpecChangesOptions {
  readonly scenario: Scenario;
  readonly clock: Clock;
  readonly cluster: MemoryCluster;
  /** What the world did, for the decision log. */
  readonly logger: Logger;
  /** CloudWatch's alarms, which AlarmState events set. */
  readonly alarms: MemoryAlarms;
}

export function makeSpecChanges(options: SpecChangesOptions): SpecChanges {
  const { scenario, clock, cluster, logger } = options;
  const pending: SpecChange[] = scenario.events
    .filter(
      (e): e is SpecChange =>
        e.kind === 'UpdateNodePool' ||
        e.kind === 'UpdateEC2NodeClass' ||
        e.kind === 'AMIRelease' ||
        e.kind === 'AlarmState',
    )
    // Stable: changes at the same time apply in file order.
    .sort((a, b) => a.atMs - b.atMs);
  let latest: readonly AmiStatus[] = MEMORY_AL2023_AMIS;

  function apply(change: SpecChange): void {
    if (change.kind === 'AlarmState') {
      options.alarms.set(change.alarm, change.state);
      logger.info('alarm state changed', { decision: 'alarm', alarm: change.alarm, state: change.state });
      return;
    }
    if (change.kind === 'AMIRelease') {
      latest = memoryAl2023Release(change.version);
      logger.info('ami released', {
        decision: 'release',
        alias: 'al2023@latest',
        version: change.version,
        amis: latest.map((a) => a.id),
      });
      return;
    }
    const kind = change.kind === 'UpdateNodePool' ? 'NodePool' : 'EC2NodeClass';
    const raw = cluster.get(kind, change.name);
    if (raw === undefined) {
      logger.warn('spec change skipped', { decision: 'noop', why: `no ${kind} "${change.name}"` });
      return;
    }
    const spec = mergePatch(raw['spec'], change.spec) as Record<string, unknown>;
    const updated = cluster.replaceSpec(kind, change.name, spec);
    logger.info(`${kind} updated`, {
      decision: 'update',
      [kind === 'NodePool' ? 'nodePool' : 'nodeClass']: change.name,
      fields: Object.keys(change.spec).sort(),
      generation: (updated['metadata'] as { generation?: number }).generation,
    });
  }

  return {
    step() {
      const offset = clock.now().getTime() - scenario.startMs;
      while (pending[0] !== undefined && pending[0].atMs <= offset) {
        const change = pending.shift();
        if (change !== undefined) apply(change);
      }
    },
    wakeTimes: () => pending.map((c) => scenario.startMs + c.atMs),
    latestAmis: () => latest,
  };
}
