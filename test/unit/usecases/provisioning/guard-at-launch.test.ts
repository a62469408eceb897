import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { LAUNCH_BACKOFF_ANNOTATION } from '../../../../shared/usecases/runaway-guard/index.ts';
import { encodeLaunchBackoff } from '../../../../shared/usecases/runaway-guard/state.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// A disruption pass that empties a node under a taint its NodePool did not set judges it and may
// pause the pool's launches. When that write lands while a provisioner run plans (after the run's
// guard read the NodePools), the run must not launch for the paused pool: it reads the NodePools
// again before its launches. The pass is played here by a write to the in-memory API server when the
// run, its NodePools read, asks for the offerings it plans with.

function setup(pauseDuringRun: boolean) {
  const world = scenarioWorld();
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const pausedUntilMs = world.clock.now().getTime() + 120_000;
  let paused = false;
  // The run reads the offerings of its EC2NodeClasses once it has read the NodePools it plans with.
  const cloud: typeof world.cloud = {
    ...world.cloud,
    instanceTypes: async (nodeClass) => {
      if (pauseDuringRun && !paused) {
        paused = true;
        await world.cluster.patchNodePoolMetadata('on-demand', {
          annotations: {
            [LAUNCH_BACKOFF_ANNOTATION]: encodeLaunchBackoff({
              failures: 1,
              lastFailedCreatedMs: world.clock.now().getTime() - 60_000,
              pausedUntilMs,
            }),
          },
        });
      }
      return world.cloud.instanceTypes(nodeClass);
    },
  };
  const provisioner = provisionerSteps(world, logger, {
    ports: { cloud },
    config: { batchIdleMs: 0, batchMaxMs: 0 },
  });
  addPendingPod(world.cluster, 'web-1');
  return { world, lines, provisioner, pausedUntilMs };
}

describe('a provisioner run whose NodePool is paused while it plans', () => {
  it('launches nothing for that pool and tells the pod why', async () => {
    const { world, lines, provisioner, pausedUntilMs } = setup(true);

    const result = await provisioner.provision('run-1');

    expect(result.kind === 'provisioned' ? result.claims : []).toEqual([]);
    expect((await world.cluster.nodeClaims()).items).toEqual([]);
    const why = lines.filter((l) => l['decision'] === 'unschedulable').at(-1)?.['reason'];
    expect(why).toContain(`launches paused until ${new Date(pausedUntilMs).toISOString()}`);
    expect(why).toContain('a judgement made while this run planned');
  });

  it('launches as planned when the pool stays unpaused', async () => {
    const { world, provisioner } = setup(false);

    const result = await provisioner.provision('run-1');

    expect(result.kind === 'provisioned' ? result.claims.map((c) => c.kind) : []).toEqual(['launched']);
    expect((await world.cluster.nodeClaims()).items).toHaveLength(1);
  });
});
