import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import type { ProvisionerConfig } from '../../../../shared/usecases/provisioning/setup.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// Karpenter's operator settings as the provisioner follows them: its batch window
// (BATCH_IDLE_DURATION, BATCH_MAX_DURATION) and how often an EC2NodeClass is resolved again
// (AMI_REFRESH_INTERVAL), with Karpenter's defaults when unset.

/**
 * One provisioning run over a world where a new pod appears at each of the batcher's waits until
 * `arrivals` have; returns the waits and the run's batch decision.
 */
async function batchOf(config: ProvisionerConfig, arrivals: number) {
  const world = scenarioWorld();
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const waits: number[] = [];
  addPendingPod(world.cluster, 'web-0');
  const steps = provisionerSteps(world, logger, {
    config,
    ports: {
      sleep: async (ms) => {
        waits.push(ms);
        if (waits.length <= arrivals) addPendingPod(world.cluster, `web-${waits.length}`);
        world.clock.advance(ms);
      },
    },
  });
  await steps.provision('run-1');
  return { waits, batch: lines.find((l) => l['decision'] === 'batch') };
}

describe('the batch window', () => {
  it('is 1 s idle and 10 s at most by default, as Karpenter`s', async () => {
    const { waits, batch } = await batchOf({}, 1);
    expect(waits).toEqual([1_000, 1_000]);
    expect(batch).toMatchObject({
      reason: 'idle',
      durationMs: 2_000,
      batchIdleMs: 1_000,
      batchMaxMs: 10_000,
    });
  });

  it('closes after batchIdleDuration without a new pod', async () => {
    const { waits, batch } = await batchOf({ batchIdleMs: 3_000, batchMaxMs: 10_000 }, 1);
    expect(waits).toEqual([3_000, 3_000]);
    expect(batch).toMatchObject({ reason: 'idle', durationMs: 6_000, batchIdleMs: 3_000 });
  });

  it('closes at batchMaxDuration while pods keep coming', async () => {
    const { waits, batch } = await batchOf({ batchIdleMs: 2_000, batchMaxMs: 5_000 }, 10);
    expect(waits).toEqual([2_000, 2_000, 1_000]);
    expect(batch).toMatchObject({ reason: 'max', durationMs: 5_000, batchMaxMs: 5_000 });
  });
});

describe('the EC2NodeClass refresh interval', () => {
  /** The gaps (seconds) between the passes, one every 10 s for 11 minutes, that resolved the class. */
  async function gapsBetweenResolutions(config: ProvisionerConfig): Promise<number[]> {
    const world = scenarioWorld();
    const steps = provisionerSteps(world, makeLogger({}, { sink: () => {} }), { config });
    const at: number[] = [];
    for (let s = 0; s <= 660; s += 10) {
      const pass = await steps.reconcileLifecycle(`pass-${s}`);
      if ((pass.nodeClasses?.resolved ?? []).length > 0) at.push(s);
      world.clock.advance(10_000);
    }
    expect(at[0]).toBe(0);
    return at.slice(1).map((s, i) => s - (at[i] ?? 0));
  }

  it('is a minute by default, as Karpenter`s AMI_REFRESH_INTERVAL: the first pass after it resolves', async () => {
    const gaps = await gapsBetweenResolutions({});
    expect(gaps.length).toBeGreaterThanOrEqual(8);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(60);
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(70);
  });

  it('is amiRefreshInterval when set', async () => {
    const gaps = await gapsBetweenResolutions({ nodeClassRefreshSeconds: 300 });
    expect(gaps).toHaveLength(2);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(300);
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(310);
  });
});
