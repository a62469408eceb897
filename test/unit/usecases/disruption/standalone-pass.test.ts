import { describe, expect, it } from 'vitest';
import { isConditionTrue, NodeClaimConditionType } from '../../../../shared/core/index.ts';
import { provisionerSteps } from '../provisioning/world.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// A standalone NodeClaim (a user's, in no NodePool) in the simulator's world beside a NodePool's
// three nodes: the provisioner's scheduled run launches it, the lifecycle initializes it, no
// disruption method takes it however empty it stays, and its expireAfter removes it, as
// Karpenter's expiration does.

const MINUTE = 60_000;

const byHand = async (world: World) =>
  (await world.cluster.nodeClaims()).items.find((c) => c.name === 'by-hand');

describe('a standalone NodeClaim in the simulator', () => {
  it('launches, initializes, is never consolidated, and expires at its expireAfter', async () => {
    const world = await threeNodes();
    world.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'by-hand', labels: { team: 'batch' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
        resources: { requests: { cpu: '1' } },
        expireAfter: '2h',
      },
    });
    const provisioner = provisionerSteps(world, world.logger);
    const run = await provisioner.provision('schedule-1');
    expect(run.kind === 'provisioned' ? run.claims : []).toEqual([
      expect.objectContaining({ kind: 'launched', nodeClaim: 'by-hand' }),
    ]);
    for (
      let i = 0;
      i < 40 && !isConditionTrue((await byHand(world))?.status.conditions ?? [], 'Initialized');
      i++
    ) {
      world.clock.advance(5_000);
      await world.step();
      await provisioner.reconcileLifecycle(`lifecycle-${i}`);
    }
    const launched = await byHand(world);
    expect(launched?.nodePoolName).toBeUndefined();
    expect(isConditionTrue(launched?.status.conditions ?? [], NodeClaimConditionType.initialized)).toBe(true);
    // Its instance is named after its node once registered, and the NodeClaim says so.
    await provisioner.reconcileLifecycle('lifecycle-named');
    const instance = (await world.cloud.list()).find((i) => i.nodeClaimName === 'by-hand');
    expect(instance?.tags['Name']).toBe(launched?.status.nodeName);
    expect((await byHand(world))?.annotations['karpenter.k8s.aws/tagged']).toBe('true');

    // Empty for an hour: consolidation would take a NodePool's node; it leaves this one alone.
    world.clock.advance(60 * MINUTE);
    const quiet = await pass(world, {}, {}, 'pass-1');
    expect(quiet.decisions.flatMap((d) => d.candidates.map((c) => c.nodeClaim))).not.toContain('by-hand');
    const kept = await byHand(world);
    expect(kept?.deleting).toBe(false);
    expect(kept?.status.conditions.map((c) => c.type)).not.toContain(NodeClaimConditionType.consolidatable);

    // Past its expireAfter of 2h: expiration deletes it, with no replacement of its own.
    world.clock.advance(61 * MINUTE);
    const expiring = await pass(world, {}, {}, 'pass-2');
    const expiration = expiring.decisions.find((d) => d.method === 'expiration');
    expect(expiration?.candidates.map((c) => c.nodeClaim)).toContain('by-hand');
    expect((await byHand(world))?.deleting).toBe(true);
  });

  it('waits for a class applied with it to resolve, then launches', async () => {
    const world = await threeNodes();
    const template = world.scenario.ec2NodeClasses[0];
    if (template === undefined) throw new Error('the scenario has no EC2NodeClass');
    world.cluster.create({ ...template, metadata: { ...template.metadata, name: 'fresh' } });
    world.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'by-hand' },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'fresh' },
        requirements: [],
        resources: { requests: { cpu: '1' } },
      },
    });
    const provisioner = provisionerSteps(world, world.logger);
    const waiting = await provisioner.provision('schedule-1');
    expect(waiting.kind === 'provisioned' ? waiting.claims : []).toEqual([
      expect.objectContaining({ kind: 'failed', error: 'EC2NodeClass "fresh" is not resolved yet' }),
    ]);
    expect((await byHand(world))?.deleting).toBe(false);
    await provisioner.reconcileLifecycle('lifecycle-1');
    const launched = await provisioner.provision('schedule-2');
    expect(launched.kind === 'provisioned' ? launched.claims : []).toEqual([
      expect.objectContaining({ kind: 'launched', nodeClaim: 'by-hand' }),
    ]);
  });
});
