import { describe, expect, it } from 'vitest';
import { isConditionTrue } from '../../../../shared/core/index.ts';
import type { ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { makeKube } from '../../../../shared/simulator/kube.ts';
import { viaQueue } from '../../../../shared/usecases/termination/handover.ts';
import { provisionerSteps, scenarioWorld } from '../provisioning/world.ts';
import { simulatedControllers } from './pass-world.ts';

// StaticDrift through whole passes of the controllers on the in-memory cluster and cloud: a user
// changes a static NodePool's template, its NodeClaims drift, and each is replaced one for one
// (the budget's 10 % of 2 nodes is 1 at a time), the replacement up before the drifted node goes,
// so the pool never holds fewer initialized nodes than its replicas. The provisioner's static pass
// runs all along and never takes a replacement for a surplus.

const TICK_MS = 5_000;

const template = (labels: Record<string, string>) => ({
  metadata: { labels },
  spec: {
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
  },
});

async function staticWorld() {
  const world = scenarioWorld();
  const { clock, cluster, cloud } = world;
  cluster.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'fixed' },
    spec: { replicas: 2, template: template({ team: 'red' }) },
  });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const kube = makeKube(
    cluster,
    cloud,
    () => clock.now().getTime(),
    () => {},
  );
  const sleep = async (ms: number) => {
    clock.advance(ms);
  };
  const { leases, terminationQueue, controllers } = simulatedControllers(world, logger, sleep);
  // The provisioner as its schedule runs it, pods or not (its static pass holds the replicas, with
  // Karpenter's StaticCapacity feature gate on).
  const steps = provisionerSteps(world, logger, {
    ports: { leases, sleep, requestTermination: viaQueue(terminationQueue) },
    config: { staticCapacity: true },
  });
  let runs = 0;
  const provisioner = () => steps.provision(`provisioner-${++runs}`);
  const others = controllers.all.filter((c) => c.name !== 'provisioner');
  const tick = async () => {
    await kube.kubelets();
    await kube.schedule();
    await provisioner();
    for (const controller of others) await controller.run(clock.now());
    clock.advance(TICK_MS);
  };
  const fixed = async (): Promise<ClusterNodeClaim[]> =>
    (await cluster.nodeClaims()).items.filter((c) => c.nodePoolName === 'fixed');
  const initialized = (claims: readonly ClusterNodeClaim[]) =>
    claims.filter((c) => !c.deleting && isConditionTrue(c.status.conditions, 'Initialized'));
  return { ...world, lines, tick, fixed, initialized };
}

describe('StaticDrift over whole passes (in-memory cluster and cloud)', () => {
  it('replaces a static pool’s drifted nodes one for one, replacement first, never below replicas', async () => {
    const w = await staticWorld();
    for (let i = 0; i < 60 && w.initialized(await w.fixed()).length < 2; i++) await w.tick();
    const before = w.initialized(await w.fixed()).map((c) => c.name);
    expect(before).toHaveLength(2);

    // The user changes the template's labels: the pool's hash changes, and its NodeClaims drift.
    w.cluster.replaceSpec('NodePool', 'fixed', { replicas: 2, template: template({ team: 'blue' }) });
    let fewest = Number.POSITIVE_INFINITY;
    let most = 0;
    for (let i = 0; i < 400; i++) {
      await w.tick();
      const claims = await w.fixed();
      fewest = Math.min(fewest, w.initialized(claims).length);
      most = Math.max(most, claims.filter((c) => !c.deleting).length);
      const done = claims.length === 2 && w.initialized(claims).every((c) => c.labels['team'] === 'blue');
      if (done) break;
    }
    const after = await w.fixed();
    expect(after.map((c) => c.labels['team'])).toEqual(['blue', 'blue']);
    expect(w.initialized(after)).toHaveLength(2);
    expect(after.map((c) => c.name)).not.toContain(before[0]);
    expect(after.map((c) => c.name)).not.toContain(before[1]);
    // Never fewer initialized nodes than replicas, one replacement at a time.
    expect(fewest).toBe(2);
    expect(most).toBe(3);

    const disrupts = w.lines.filter((l) => l['decision'] === 'disrupt' && l['method'] === 'static-drift');
    const outcomes = (name: string | undefined) =>
      disrupts
        .filter((l) => (l['candidates'] as { nodeClaim: string }[]).some((c) => c.nodeClaim === name))
        .map((l) => [l['action'], l['outcome'], l['reason']]);
    for (const name of before) {
      expect(outcomes(name)).toEqual([
        ['replace', 'started', 'Drifted'],
        ['replace', 'deleted', 'Drifted'],
      ]);
    }
    // The static pass never took a replacement (or a drifted node) for a surplus.
    expect(w.lines.filter((l) => l['decision'] === 'staticCapacity' && l['action'] === 'delete')).toEqual([]);
    // Karpenter's objects: the replacements launched and waited on, the candidates' NodeClaim and
    // Node disrupted.
    const events = w.cluster.events().map((e) => e.event);
    const on = (reason: string, kind: string, name: string | undefined) =>
      events.filter((e) => e.reason === reason && e.subject.kind === kind && e.subject.name === name);
    for (const name of after.map((c) => c.name)) {
      expect(on('DisruptionLaunching', 'NodeClaim', name).map((e) => e.message)).toEqual([
        expect.stringContaining('Drifted'),
      ]);
      expect(on('DisruptionWaitingReadiness', 'NodeClaim', name)).toHaveLength(1);
    }
    for (const name of before) {
      expect(on('DisruptionLaunching', 'NodeClaim', name)).toEqual([]);
      expect(on('DisruptionTerminating', 'NodeClaim', name).map((e) => e.message)).toEqual([
        expect.stringContaining('Drifted'),
      ]);
    }
    const nodes = (await w.cluster.nodes()).items.map((n) => n.name);
    const terminatedNodes = events
      .filter((e) => e.reason === 'DisruptionTerminating' && e.subject.kind === 'Node')
      .map((e) => e.subject.name);
    expect(terminatedNodes).toHaveLength(2);
    for (const node of terminatedNodes) expect(nodes).not.toContain(node);
  });
});
