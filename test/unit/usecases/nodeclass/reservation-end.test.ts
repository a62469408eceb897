import { describe, expect, it } from 'vitest';
import {
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../../../../shared/adapters/memory/index.ts';
import { Label } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { CapacityReservationLifecycle, EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import { ClusterApiError } from '../../../../shared/ports/errors.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { capacityReservationDrift } from '../../../../shared/usecases/disruption/conditions.ts';
import { reconcileLifecycle } from '../../../../shared/usecases/lifecycle/lifecycle.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';
import { DEFAULT_NODE_CLASS } from '../../memory/fixtures.ts';

// The EC2NodeClass controller follows the reservations NodeClaims run in (its pass starts the
// lifecycle pass): an ended reservation's nodes are relabelled on-demand, an ending capacity
// block's nodes deleted through termination. On the in-memory twins; the NodeClaims are created
// as the provisioner creates them for a reserved launch.

const T0 = new Date('2026-11-21T10:00:00Z');
const ODCR = 'cr-0a1b2c3d4e5f60001';
const BLOCK = 'cr-0a1b2c3d4e5f60002';
const OTHER = 'cr-0a1b2c3d4e5f60003';

function world() {
  const clock = makeManualClock(T0);
  const cluster = makeMemoryCluster({ clock });
  const queue = makeMemoryTerminationQueue(clock);
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const reservations = new Map<string, CapacityReservationLifecycle>();
  let unreadable: Error | undefined;
  const memory = makeMemoryNodeClassResolver({
    zones: ['us-east-1a'],
    reservationLifecycles: () => reservations,
  });
  const resolver = {
    ...memory,
    capacityReservations: async (ids: readonly string[], now: Date) => {
      if (unreadable !== undefined) throw unreadable;
      return memory.capacityReservations(ids, now);
    },
  };
  const leases = makeMemoryLeaseStore();
  let passes = 0;
  // The API server as the controller sees it: a Node whose patch a webhook refuses.
  let refusedNode: string | undefined;
  const kube: typeof cluster = {
    ...cluster,
    patchNode: async (name, patch) => {
      if (name === refusedNode) {
        throw new ClusterApiError(`patch node "${name}"`, 403, 'denied by an admission webhook');
      }
      return cluster.patchNode(name, patch);
    },
  };

  /** A NodeClaim launched into `reservation`, with its registered Node. */
  async function reservedNode(name: string, reservation: string, type: 'default' | 'capacity-block') {
    const labels = {
      [Label.capacityType]: 'reserved',
      [Label.capacityReservationId]: reservation,
      [Label.capacityReservationType]: type,
      [Label.capacityReservationInterruptible]: 'false',
      [Label.zone]: 'us-east-1a',
    };
    await cluster.createNodeClaim(newNodeClaim(name, { labels }));
    const providerId = `aws:///us-east-1a/i-0${name.padStart(16, '0')}`;
    cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: `node-${name}`, labels: { ...labels, [Label.registered]: 'true' } },
      spec: { providerID: providerId },
    });
    // The launch and the registration, as the provisioner and the lifecycle write them.
    await cluster.patchNodeClaimStatus(name, { providerId, nodeName: `node-${name}`, conditions: [] });
  }

  async function pass() {
    passes += 1;
    return reconcileLifecycle(
      {
        cluster: kube,
        logger,
        metrics: quietMetrics,
        nodeClasses: { resolver, leases, clock, holder: `pass-${passes}` },
        requestTermination: (nodeClaim) => queue.enqueue({ nodeClaim }, 0),
      },
      clock.now(),
    );
  }

  const labelsOf = (kind: 'NodeClaim' | 'Node', name: string) =>
    ((cluster.get(kind, name)?.['metadata'] as { labels?: Record<string, string> } | undefined)?.labels ??
      {}) as Record<string, string>;
  const decisions = () => lines.filter((l) => l['decision'] === 'reservationEnd');

  return {
    clock,
    cluster,
    queue,
    lines,
    reservations,
    reservedNode,
    pass,
    labelsOf,
    decisions,
    failReads: (error: Error | undefined) => {
      unreadable = error;
    },
    refuseNodePatch: (name: string | undefined) => {
      refusedNode = name;
    },
  };
}

const lifecycle = (
  id: string,
  state: CapacityReservationLifecycle['state'],
  ec2State: string,
  reservationType: 'default' | 'capacity-block' = 'default',
  endTime?: string,
): CapacityReservationLifecycle => ({
  id,
  state,
  ec2State,
  reservationType,
  ...(endTime === undefined ? {} : { endTime }),
});

describe('NodeClaims in a capacity reservation that ended', () => {
  it('are relabelled on-demand with their Nodes, once, and no longer drift for the reservation', async () => {
    const w = world();
    await w.reservedNode('ended', ODCR, 'default');
    await w.reservedNode('active', OTHER, 'default');
    w.reservations.set(ODCR, lifecycle(ODCR, 'ended', 'expired', 'default', '2026-11-21T09:59:00Z'));
    w.reservations.set(OTHER, lifecycle(OTHER, 'active', 'active'));

    const result = await w.pass();
    expect(result.reservations).toEqual({ relabelled: ['ended'], expired: [] });
    for (const labels of [w.labelsOf('NodeClaim', 'ended'), w.labelsOf('Node', 'node-ended')]) {
      expect(labels[Label.capacityType]).toBe('on-demand');
      expect(labels[Label.capacityReservationId]).toBeUndefined();
      expect(labels[Label.capacityReservationType]).toBeUndefined();
      expect(labels[Label.capacityReservationInterruptible]).toBeUndefined();
      expect(labels[Label.zone]).toBe('us-east-1a');
    }
    // The instance runs on as on-demand: not deleted, and no drift for a reservation it left.
    expect(w.cluster.get('NodeClaim', 'ended')?.['metadata']).not.toHaveProperty('deletionTimestamp');
    const classWithout: EC2NodeClass = {
      ...DEFAULT_NODE_CLASS,
      status: { subnets: [], securityGroups: [], amis: [], capacityReservations: [], conditions: [] },
    };
    expect(capacityReservationDrift(w.labelsOf('NodeClaim', 'ended'), classWithout)).toBeUndefined();
    // The active reservation's node is left as it is.
    expect(w.labelsOf('NodeClaim', 'active')[Label.capacityReservationId]).toBe(OTHER);
    expect(w.labelsOf('Node', 'node-active')[Label.capacityType]).toBe('reserved');
    expect(w.decisions()).toEqual([
      expect.objectContaining({
        reason: 'capacity reservation ended',
        action: 'relabelOnDemand',
        nodeClaim: 'ended',
        capacityReservationId: ODCR,
        reservationState: 'expired',
        nodes: ['node-ended'],
      }),
    ]);

    const again = await w.pass();
    expect(again.reservations).toEqual({ relabelled: [], expired: [] });
    expect(w.decisions()).toHaveLength(1);
  });

  it('relabels a Node still marked reserved after its NodeClaim was relabelled', async () => {
    const w = world();
    await w.reservedNode('half', ODCR, 'default');
    w.reservations.set(ODCR, lifecycle(ODCR, 'ended', 'cancelled'));
    // An earlier pass relabelled the NodeClaim and stopped before the Node.
    // controller's own test
    await w.cluster.patchNodeClaimMetadata('half', {
      labels: { [Label.capacityType]: 'on-demand', [Label.capacityReservationId]: null },
    });
    const result = await w.pass();
    expect(result.reservations?.relabelled).toEqual(['half']);
    expect(w.labelsOf('Node', 'node-half')[Label.capacityType]).toBe('on-demand');
    expect(w.decisions()[0]).toMatchObject({ nodes: ['node-half'], reservationState: 'cancelled' });
  });

  it('leaves alone a reservation EC2 does not answer for, and one it cannot read now', async () => {
    const w = world();
    await w.reservedNode('unknown', ODCR, 'default');
    expect((await w.pass()).reservations).toEqual({ relabelled: [], expired: [] });

    w.reservations.set(ODCR, lifecycle(ODCR, 'ended', 'expired'));
    const throttled = new Error('Rate exceeded');
    w.failReads(throttled);
    const failed = await w.pass();
    expect(failed.reservations).toEqual({ relabelled: [], expired: [], failed: throttled });
    expect(w.labelsOf('NodeClaim', 'unknown')[Label.capacityType]).toBe('reserved');
    expect(w.lines.find((l) => l['message'] === 'capacity reservations not read')).toMatchObject({
      level: 'error',
      reservations: [ODCR],
    });

    w.failReads(undefined);
    expect((await w.pass()).reservations?.relabelled).toEqual(['unknown']);
  });
  it('goes on past a Node whose patch is refused: the other NodeClaims and the rest of the pass run, and the next pass retries', async () => {
    const w = world();
    await w.reservedNode('refused', ODCR, 'default');
    await w.reservedNode('fine', OTHER, 'default');
    w.reservations.set(ODCR, lifecycle(ODCR, 'ended', 'expired'));
    w.reservations.set(OTHER, lifecycle(OTHER, 'ended', 'cancelled'));
    w.refuseNodePatch('node-refused');

    const result = await w.pass();
    expect(result.reservations?.relabelled).toEqual(['fine']);
    expect(result.reservations?.stepsFailed).toEqual([
      { nodeClaim: 'refused', error: expect.any(ClusterApiError) },
    ]);
    // The NodeClass controller's part of the pass still ran.
    expect(result.nodeClasses).toBeDefined();
    expect(w.labelsOf('Node', 'node-fine')[Label.capacityType]).toBe('on-demand');
    expect(w.labelsOf('Node', 'node-refused')[Label.capacityType]).toBe('reserved');
    expect(w.lines.find((l) => l['message'] === 'capacity reservation step not applied')).toMatchObject({
      level: 'error',
      nodeClaim: 'refused',
      step: 'relabel',
      capacityReservationId: ODCR,
    });

    w.refuseNodePatch(undefined);
    expect((await w.pass()).reservations?.relabelled).toEqual(['refused']);
    expect(w.labelsOf('Node', 'node-refused')[Label.capacityType]).toBe('on-demand');
  });
});

describe('NodeClaims in a capacity block that is ending', () => {
  it('are deleted and handed to termination once the block is within 40 minutes of its end', async () => {
    const w = world();
    await w.reservedNode('block', BLOCK, 'capacity-block');
    const end = new Date(T0.getTime() + 60 * 60_000).toISOString();
    w.reservations.set(BLOCK, lifecycle(BLOCK, 'active', 'active', 'capacity-block', end));
    expect((await w.pass()).reservations?.expired).toEqual([]);

    w.reservations.set(BLOCK, lifecycle(BLOCK, 'expiring', 'active', 'capacity-block', end));
    const result = await w.pass();
    expect(result.reservations).toEqual({ relabelled: [], expired: ['block'] });
    const claim = await w.cluster.nodeClaim('block');
    expect(claim?.deleting).toBe(true);
    expect(w.queue.receive()).toEqual([{ nodeClaim: 'block' }]);
    expect(w.decisions()).toEqual([
      expect.objectContaining({
        reason: 'capacity block ending',
        action: 'deleteNodeClaim',
        nodeClaim: 'block',
        capacityReservationId: BLOCK,
        endTime: end,
        handedOver: 'termination queue',
      }),
    ]);
    // A deleting NodeClaim is termination's: the next pass decides nothing more.
    await w.pass();
    expect(w.decisions()).toHaveLength(1);
  });
});
