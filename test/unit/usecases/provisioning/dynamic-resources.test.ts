import { describe, expect, it } from 'vitest';
import { DYNAMIC_RESOURCES_UNSUPPORTED } from '../../../../shared/core/index.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// A pending pod with Dynamic Resource Allocation requirements, as Karpenter v1.14 with its default
// IGNORE_DRA_REQUESTS=true handles it: no NodeClaim is launched for it, it is told why
// (FailedScheduling, with that reason alone), and the run's unschedulable decision line says so.

describe('provisioning pods with Dynamic Resource Allocation requirements (in-memory cluster and cloud)', () => {
  it('launches nothing for them, tells them why, and plans the other pods as before', async () => {
    const world = scenarioWorld();
    const { cluster } = world;
    const lines: Record<string, unknown>[] = [];
    const steps = provisionerSteps(
      world,
      makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    );
    cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'trainer', namespace: 'default' },
      spec: {
        containers: [
          {
            name: 'train',
            image: 'train',
            resources: { requests: { cpu: '500m', memory: '512Mi' }, claims: [{ name: 'gpu' }] },
          },
        ],
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }],
      },
    });
    cluster.markPodUnschedulable('default', 'trainer', '0/0 nodes are available');
    addPendingPod(cluster, 'web');
    await steps.reconcileLifecycle('p-1');
    await steps.provision('p-1');

    const launched = lines.filter((l) => l['decision'] === 'launch' && l['outcome'] === 'launched');
    expect(launched.flatMap((l) => l['pods'] as string[])).toEqual(['default/web']);
    const failed = cluster.events().filter((e) => e.event.reason === 'FailedScheduling');
    expect(failed.map((e) => [e.event.subject.name, e.event.type, e.event.message])).toEqual([
      ['trainer', 'Warning', `Failed to schedule pod: ${DYNAMIC_RESOURCES_UNSUPPORTED}`],
    ]);
    expect(lines.filter((l) => l['decision'] === 'unschedulable')).toEqual([
      expect.objectContaining({ reason: DYNAMIC_RESOURCES_UNSUPPORTED, pods: ['default/trainer'] }),
    ]);
  });
});
