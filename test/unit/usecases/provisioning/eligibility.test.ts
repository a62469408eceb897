import { describe, expect, it } from 'vitest';
import { toClusterNodePool } from '../../../../shared/apis/index.ts';
import type { EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import type { ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import { computeNodeClassStatus } from '../../../../shared/usecases/nodeclass/status.ts';
import {
  NO_NODEPOOL_DEFINED,
  selectNodePools,
  unschedulableMessage,
} from '../../../../shared/usecases/state/eligibility.ts';
import { clusterNodePool, type NodePoolOverrides, nodePoolManifest } from '../../../fixtures/builders.ts';
import { DEFAULT_NODE_CLASS, readyNodeClass } from '../../memory/fixtures.ts';

const AT = new Date('2026-11-21T10:00:00Z');

/** NodePool `name` of EC2NodeClass `nodeClassName`; `extra` replaces fields. */
function pool(name: string, nodeClassName = 'default', extra: NodePoolOverrides = {}): ClusterNodePool {
  return clusterNodePool(name, {
    pool: { nodeClassName },
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: nodeClassName },
    // The stored status says nothing: readiness comes from the class as given.
    ready: false,
    ...extra,
  });
}

const ready = readyNodeClass(AT);

const noSubnets: EC2NodeClass = {
  ...DEFAULT_NODE_CLASS,
  name: 'broken',
  status: computeNodeClassStatus(
    { ...DEFAULT_NODE_CLASS, name: 'broken' },
    {
      subnets: { kind: 'failed', reason: 'SubnetsNotFound', message: 'no subnet matches the terms' },
      securityGroups: { kind: 'resolved', value: [{ id: 'sg-1' }] },
      amis: { kind: 'resolved', value: [{ id: 'ami-1', requirements: [] }] },
      instanceProfile: { kind: 'resolved', value: 'profile' },
    },
    AT,
  ).status,
};

describe('selectNodePools', () => {
  it('uses a pool in the pass that first resolved its class, whatever its stored status says', () => {
    const selection = selectNodePools([pool('general')], [ready]);
    expect(selection.eligible.map((e) => `${e.pool.pool.name}/${e.nodeClass.name}`)).toEqual([
      'general/default',
    ]);
    expect(selection.skipped).toEqual([]);
  });

  it.each<[string, ClusterNodePool, readonly EC2NodeClass[], string]>([
    [
      'its class does not exist',
      pool('a', 'missing'),
      [ready],
      'it is not Ready (NodeClassNotFound): EC2NodeClass "missing" not found; create it or fix spec.template.spec.nodeClassRef',
    ],
    [
      'its class has no status yet',
      pool('a'),
      [DEFAULT_NODE_CLASS],
      'it is not Ready (NodeClassNotReady): EC2NodeClass "default" is not ready: it has no resolved status yet',
    ],
    [
      'its class matches no subnet',
      pool('a', 'broken'),
      [noSubnets],
      'it is not Ready (NodeClassNotReady): EC2NodeClass "broken" is not ready: SubnetsReady=False: no subnet matches the terms',
    ],
    [
      'its class is being deleted',
      pool('a'),
      [{ ...ready, deleting: true }],
      'it is not Ready (NodeClassTerminating): EC2NodeClass "default" is being deleted',
    ],
    ['it is being deleted', pool('a', 'default', { deleting: true }), [ready], 'it is being deleted'],
  ])('leaves a pool out when %s, with the reason', (_case, p, classes, reason) => {
    expect(selectNodePools([p], classes)).toEqual({ eligible: [], skipped: [{ nodePool: 'a', reason }] });
  });
});

describe('unschedulableMessage', () => {
  it('says no NodePool is defined only when there is none', () => {
    expect(unschedulableMessage({ reasons: [] }, { eligible: 0, skipped: [] })).toBe(NO_NODEPOOL_DEFINED);
  });

  it('names each NodePool that is not Ready, and why, when none can launch', () => {
    const { skipped } = selectNodePools([pool('a', 'broken')], [noSubnets]);
    expect(
      unschedulableMessage(
        { reasons: [{ nodePool: '', reason: NO_NODEPOOL_DEFINED }] },
        { eligible: 0, skipped },
      ),
    ).toBe(
      'no NodePool is Ready; nodePool a: it is not Ready (NodeClassNotReady): EC2NodeClass "broken" is not ready: SubnetsReady=False: no subnet matches the terms',
    );
  });

  it('gives the solver reason per usable pool, then the pools left out', () => {
    expect(
      unschedulableMessage(
        { reasons: [{ nodePool: 'general', reason: 'no instance type has 64 cpu' }] },
        { eligible: 1, skipped: [{ nodePool: 'gpu', reason: 'it is being deleted' }] },
      ),
    ).toBe('nodePool general: no instance type has 64 cpu; nodePool gpu skipped: it is being deleted');
  });
});

describe('selectNodePools under schedule windows (flotilla.io/schedules)', () => {
  const schedules = (hold: Record<string, unknown>) =>
    toClusterNodePool(
      nodePoolManifest('web', {
        limits: { cpu: '100' },
        annotations: {
          'flotilla.io/schedules': JSON.stringify([
            { name: 'nightly', start: '0 20 * * *', end: '0 7 * * *', timeZone: 'Europe/Berlin', ...hold },
          ]),
        },
      }),
    );
  const night = Date.parse('2026-03-28T22:00:00Z');
  const day = Date.parse('2026-03-29T09:00:00Z');

  it('leaves a pool out while a window holds no new nodes, saying until when', () => {
    const pool = schedules({ noNewNodes: true });
    expect(selectNodePools([pool], [ready], new Map(), night)).toEqual({
      eligible: [],
      skipped: [
        {
          nodePool: 'web',
          reason: 'schedule "nightly" holds no new nodes until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
          scheduleHeld: true,
        },
      ],
      heldClasses: [ready],
    });
    expect(selectNodePools([pool], [ready], new Map(), day).eligible).toHaveLength(1);
  });

  it("lowers a pool's limits while a window holds them, and says so beside the limits", () => {
    const pool = schedules({ limits: { cpu: '8' } });
    const [held] = selectNodePools([pool], [ready], new Map(), night).eligible;
    expect(held?.pool.pool.limits).toEqual({ cpu: 8000 });
    expect(held?.pool.pool.limitsHeldBy).toBe(
      'schedule "nightly" holds limits cpu 8 until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
    );
    const [free] = selectNodePools([pool], [ready], new Map(), day).eligible;
    expect(free?.pool.pool.limits).toEqual({ cpu: 100_000 });
  });

  it('leaves a pool out whose schedules do not read, at any time', () => {
    const pool = schedules({});
    const selection = selectNodePools([pool], [ready]);
    expect(selection.eligible).toEqual([]);
    expect(selection.skipped[0]?.reason).toMatch(
      /^annotation flotilla\.io\/schedules: \[0\] \(nightly\) sets exactly one/,
    );
  });
});
