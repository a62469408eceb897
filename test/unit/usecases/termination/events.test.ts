import { describe, expect, it } from 'vitest';
import { makeTerminationWorld } from './world.ts';

// Termination's Events on Karpenter's objects and with its types: a pod evicted, a drain a PDB
// holds up, a pod deleted at the terminationGracePeriod deadline, the deadline itself, an instance
// EC2 would not terminate; each repeat within its window recorded once.

describe('termination Events (in-memory cluster and cloud)', () => {
  it('tells an evicted pod, and a Node whose drain a PodDisruptionBudget holds up, once a window', async () => {
    const w = makeTerminationWorld();
    await w.terminatingClaim('free', { pods: 1 });
    await w.terminatingClaim('held', { pods: 2, blockedByBudget: true });
    await w.deps.terminate('free');
    await w.deps.terminate('held');
    w.clock.advance(1_000);
    await w.deps.terminate('held');
    const events = w.cluster.events();
    expect(
      events
        .filter((e) => e.event.reason === 'Evicted')
        .map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.count]),
    ).toEqual([['Pod', 'free-pod-0', 'Normal', 1]]);
    const draining = events.filter((e) => e.event.reason === 'FailedDraining');
    expect(draining.map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.count])).toEqual([
      ['Node', 'node-held', 'Warning', 1],
    ]);
    expect(draining[0]?.event.message).toContain('2 pods wait to be evicted');
    expect(draining[0]?.event.message).toContain('default/held-pod-0');
  });

  it('tells the deadline on the NodeClaim and its Node, and each pod deleted for it', async () => {
    const w = makeTerminationWorld();
    await w.terminatingClaim('tgp', { pods: 1, blockedByBudget: true, terminationGracePeriod: '60s' });
    await w.deps.terminate('tgp');
    const expiring = w.cluster.events().filter((e) => e.event.reason === 'TerminationGracePeriodExpiring');
    expect(expiring.map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type])).toEqual([
      ['NodeClaim', 'tgp', 'Warning'],
      ['Node', 'node-tgp', 'Warning'],
    ]);
    expect(w.cluster.events().some((e) => e.event.reason === 'Disrupted')).toBe(false);
    // The pod's own grace period (2 s) before the deadline, the PDB no longer holds it.
    w.clock.advance(59_000);
    await w.deps.terminate('tgp');
    const disrupted = w.cluster.events().filter((e) => e.event.reason === 'Disrupted');
    expect(disrupted.map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type])).toEqual([
      ['Pod', 'tgp-pod-0', 'Normal'],
    ]);
    expect(disrupted[0]?.event.message).toContain('bypassing its PodDisruptionBudget');
  });

  it('tells an instance EC2 would not terminate on the NodeClaim, and still fails the pass', async () => {
    const w = makeTerminationWorld();
    await w.terminatingClaim('foreign', { foreignInstance: true });
    await expect(w.deps.terminate('foreign')).rejects.toThrow();
    const failed = w.cluster.events().filter((e) => e.event.reason === 'FailedTermination');
    expect(failed.map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type])).toEqual([
      ['NodeClaim', 'foreign', 'Warning'],
    ]);
    expect(failed[0]?.event.message).toMatch(/^Failed to terminate instance i-/);
  });
});
