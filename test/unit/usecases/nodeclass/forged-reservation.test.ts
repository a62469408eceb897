// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import {
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../../../../shared/adapters/memory/index.ts';
import { Label } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { CapacityReservationLifecycle } from '../../../../shared/ports/cloud.ts';
import { ClusterApiError } from '../../../../shared/ports/errors.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { reconcileLifecycle } from '../../../../shared/usecases/lifecycle/lifecycle.ts';
import { field, forgedSummaryCluster, named } from '../../../fixtures/forged-summary.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// The capacity reservation follow-up (the start of the lifecycle pass) over a forged cluster
// summary: what the summary lists chooses which NodeClaims are looked at; each deletion and relabel
// is decided again on the NodeClaim and Nodes the API server has.

const T0 = new Date('2026-11-21T10:00:00Z');
const ODCR = 'cr-0a1b2c3d4e5f60001';
const BLOCK = 'cr-0a1b2c3d4e5f60002';
const ACTIVE = 'cr-0a1b2c3d4e5f60003';
const END = new Date(T0.getTime() + 20 * 60_000).toISOString();

function world() {
  const clock = makeManualClock(T0);
  const memory = makeMemoryCluster({ clock });
  const queue = makeMemoryTerminationQueue(clock);
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const reservations = new Map<string, CapacityReservationLifecycle>([
    [ODCR, { id: ODCR, state: 'ended', ec2State: 'expired', reservationType: 'default' }],
    [
      BLOCK,
      { id: BLOCK, state: 'expiring', ec2State: 'active', reservationType: 'capacity-block', endTime: END },
    ],
    [ACTIVE, { id: ACTIVE, state: 'active', ec2State: 'active', reservationType: 'default' }],
  ]);
  const resolver = makeMemoryNodeClassResolver({
    zones: ['us-east-1a'],
    reservationLifecycles: () => reservations,
  });
  const leases = makeMemoryLeaseStore();
  const forged = forgedSummaryCluster(memory, clock, logger);
  let unreadable: string | undefined;
  const cluster: typeof forged.cluster = {
    ...forged.cluster,
    nodeClaim: async (name) => {
      if (name === unreadable) throw new ClusterApiError(`get nodeclaim "${name}"`, 503, 'unavailable');
      return forged.cluster.nodeClaim(name);
    },
  };

  /** A launched NodeClaim with its registered Node `node-<name>`; reserved in `reservation` when given. */
  async function node(name: string, reservation?: { id: string; type: 'default' | 'capacity-block' }) {
    const labels =
      reservation === undefined
        ? { [Label.capacityType]: 'on-demand', [Label.zone]: 'us-east-1a' }
        : {
            [Label.capacityType]: 'reserved',
            [Label.capacityReservationId]: reservation.id,
            [Label.capacityReservationType]: reservation.type,
            [Label.zone]: 'us-east-1a',
          };
    await memory.createNodeClaim(newNodeClaim(name, { labels }));
    const providerId = `aws:///us-east-1a/i-0${name.padStart(16, '0')}`;
    memory.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: `node-${name}`, labels: { ...labels, [Label.registered]: 'true' } },
      spec: { providerID: providerId },
    });
    await memory.patchNodeClaimStatus(name, { providerId, nodeName: `node-${name}`, conditions: [] });
    return providerId;
  }

  let passes = 0;
  async function pass() {
    passes += 1;
    return reconcileLifecycle(
      {
        cluster,
        logger,
        metrics: quietMetrics,
        nodeClasses: { resolver, leases, clock, holder: `pass-${passes}` },
        requestTermination: (nodeClaim) => queue.enqueue({ nodeClaim }, 0),
      },
      clock.now(),
    );
  }
  const labelsOf = (kind: 'NodeClaim' | 'Node', name: string) =>
    ((memory.get(kind, name)?.['metadata'] as { labels?: Record<string, string> } | undefined)?.labels ??
      {}) as Record<string, string>;
  const reserved = (labels: Record<string, unknown>, id: string) => {
    labels[Label.capacityType] = 'reserved';
    labels[Label.capacityReservationId] = id;
    labels[Label.capacityReservationType] = id === BLOCK ? 'capacity-block' : 'default';
  };
  return {
    memory,
    queue,
    lines,
    forged,
    node,
    pass,
    labelsOf,
    reserved,
    unreadable: (name: string | undefined) => {
      unreadable = name;
    },
    decisions: () => lines.filter((l) => l['decision'] === 'reservationEnd'),
    disagreements: () => lines.filter((l) => l['message'] === 'capacity reservation step not confirmed'),
  };
}

describe('capacity reservations over a forged cluster summary', () => {
  it('does not delete a live on-demand NodeClaim the summary shows reserved in an ending capacity block', async () => {
    const w = world();
    await w.node('victim');
    w.forged.publish({
      nodeClaims: (claims) => w.reserved(field(field(named(claims, 'victim'), 'metadata'), 'labels'), BLOCK),
    });
    const result = await w.pass();
    expect(result.reservations).toEqual({ relabelled: [], expired: [] });
    expect((await w.memory.nodeClaim('victim'))?.deleting).toBe(false);
    expect(w.queue.receive()).toEqual([]);
    expect(w.decisions()).toEqual([]);
    expect(w.disagreements()).toEqual([
      expect.objectContaining({ level: 'warn', nodeClaim: 'victim', listedStep: 'expire' }),
    ]);
  });

  it('does not delete a NodeClaim whose Node the summary shows reserved in an ending capacity block', async () => {
    const w = world();
    await w.node('victim');
    w.forged.publish({
      nodes: (nodes) => w.reserved(field(field(named(nodes, 'node-victim'), 'metadata'), 'labels'), BLOCK),
    });
    expect((await w.pass()).reservations).toEqual({ relabelled: [], expired: [] });
    expect((await w.memory.nodeClaim('victim'))?.deleting).toBe(false);
    expect(w.disagreements()).toHaveLength(1);
  });

  it('relabels neither a NodeClaim in an active reservation nor a bystander Node the summary ties to an ended one', async () => {
    const w = world();
    const providerId = await w.node('victim', { id: ACTIVE, type: 'default' });
    await w.node('bystander', { id: ACTIVE, type: 'default' });
    w.forged.publish({
      nodeClaims: (claims) => w.reserved(field(field(named(claims, 'victim'), 'metadata'), 'labels'), ODCR),
      nodes: (nodes) => {
        const bystander = named(nodes, 'node-bystander');
        field(bystander, 'spec')['providerID'] = providerId;
        w.reserved(field(field(bystander, 'metadata'), 'labels'), ODCR);
      },
    });
    expect((await w.pass()).reservations).toEqual({ relabelled: [], expired: [] });
    for (const [kind, name] of [
      ['NodeClaim', 'victim'],
      ['Node', 'node-victim'],
      ['NodeClaim', 'bystander'],
      ['Node', 'node-bystander'],
    ] as const) {
      expect(w.labelsOf(kind, name)[Label.capacityType]).toBe('reserved');
      expect(w.labelsOf(kind, name)[Label.capacityReservationId]).toBe(ACTIVE);
    }
    expect(w.decisions()).toEqual([]);
    expect(w.disagreements()).toEqual([
      expect.objectContaining({ nodeClaim: 'victim', listedStep: 'relabel' }),
    ]);
  });

  it('relabels only the Nodes the API server ties to a NodeClaim whose reservation did end', async () => {
    const w = world();
    const providerId = await w.node('ended', { id: ODCR, type: 'default' });
    await w.node('bystander', { id: ACTIVE, type: 'default' });
    w.forged.publish({
      nodes: (nodes) => {
        const bystander = named(nodes, 'node-bystander');
        field(bystander, 'spec')['providerID'] = providerId;
        w.reserved(field(field(bystander, 'metadata'), 'labels'), ODCR);
      },
    });
    expect((await w.pass()).reservations).toEqual({ relabelled: ['ended'], expired: [] });
    expect(w.labelsOf('NodeClaim', 'ended')[Label.capacityType]).toBe('on-demand');
    expect(w.labelsOf('Node', 'node-ended')[Label.capacityType]).toBe('on-demand');
    expect(w.labelsOf('Node', 'node-bystander')[Label.capacityReservationId]).toBe(ACTIVE);
    expect(w.decisions()).toEqual([expect.objectContaining({ nodeClaim: 'ended', nodes: ['node-ended'] })]);
    expect(w.disagreements()).toHaveLength(1);
  });

  it('still deletes a NodeClaim of an ending capacity block the API server agrees on, with no warning', async () => {
    const w = world();
    await w.node('block', { id: BLOCK, type: 'capacity-block' });
    w.forged.publish({});
    expect((await w.pass()).reservations).toEqual({ relabelled: [], expired: ['block'] });
    expect((await w.memory.nodeClaim('block'))?.deleting).toBe(true);
    expect(w.queue.receive()).toEqual([{ nodeClaim: 'block' }]);
    expect(w.decisions()).toEqual([
      expect.objectContaining({ action: 'deleteNodeClaim', nodeClaim: 'block' }),
    ]);
    expect(w.disagreements()).toEqual([]);
  });

  it('deletes nothing for a NodeClaim the API server cannot read now, and nothing of another uid', async () => {
    const w = world();
    await w.node('block', { id: BLOCK, type: 'capacity-block' });
    await w.node('renamed');
    w.forged.publish({
      nodeClaims: (claims) => {
        const renamed = field(named(claims, 'renamed'), 'metadata');
        renamed['uid'] = 'forged-uid';
        w.reserved(field(renamed, 'labels'), BLOCK);
      },
    });
    w.unreadable('block');
    const result = await w.pass();
    expect(result.reservations?.expired).toEqual([]);
    expect(result.reservations?.stepsFailed).toEqual([
      { nodeClaim: 'block', error: expect.any(ClusterApiError) },
    ]);
    expect((await w.memory.nodeClaim('block'))?.deleting).toBe(false);
    expect((await w.memory.nodeClaim('renamed'))?.deleting).toBe(false);
    expect(w.disagreements()).toEqual([
      expect.objectContaining({
        nodeClaim: 'renamed',
        why: 'the API server has another NodeClaim of that name',
      }),
    ]);
  });
});
