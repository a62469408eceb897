import { describe, expect, it } from 'vitest';
import { Label } from '../../../../shared/core/index.ts';
import { OBSERVED_CHANGES_SAMPLE, observeCluster } from '../../../../shared/usecases/disruption/observe.ts';
import { type ClusterState, toSchedulingInput } from '../../../../shared/usecases/state/cluster-state.ts';
import { selectNodePools } from '../../../../shared/usecases/state/eligibility.ts';
import { nodeClaim, pool, SECOND, T0 } from '../disruption/builders.ts';
import { instanceType, nodeClass } from '../provisioning/builders.ts';

// What the live autoscaler did between two observing passes, as the observation names it: the
// NodeClaims created and those whose deletion began in its window, priced from the catalog.

describe('observeCluster: NodeClaims created and deleted in the window', () => {
  const m5 = instanceType('m5.xlarge', 4, 0.2);
  const labels = {
    [Label.instanceType]: 'm5.xlarge',
    [Label.zone]: 'us-east-1a',
    [Label.capacityType]: 'on-demand',
  };
  const claims = [
    nodeClaim('before', { labels, createdAtMs: T0 - SECOND }),
    nodeClaim('new-1', { labels, createdAtMs: T0 + 2 * SECOND }),
    // Created, not launched yet: no offering, no price.
    nodeClaim('new-2', { createdAtMs: T0 + 3 * SECOND }),
    nodeClaim('after', { labels, createdAtMs: T0 + 11 * SECOND }),
    {
      ...nodeClaim('going', { labels, createdAtMs: T0 - 60 * SECOND, deleting: true }),
      deletedAtMs: T0 + 5 * SECOND,
    },
    { ...nodeClaim('gone-earlier', { labels, deleting: true }), deletedAtMs: T0 },
  ];
  const pools = [pool('default')];
  const state: ClusterState = {
    pendingPods: [],
    nodes: [],
    nodeClaims: claims,
    nodePools: pools,
    nodeClasses: [nodeClass],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  const input = toSchedulingInput(
    state,
    selectNodePools(state.nodePools, state.nodeClasses),
    new Map([['default', [m5]]]),
    { nowMs: T0 },
  );
  const observe = (sinceMs?: number, untilMs?: number) =>
    observeCluster({
      nodes: [],
      claims,
      pools: new Map(pools.map((p) => [p.pool.name, p])),
      input,
      ...(sinceMs === undefined ? {} : { sinceMs }),
      ...(untilMs === undefined ? {} : { untilMs }),
    });

  it('names those after the window opened and at or before it closed, oldest first, with prices', () => {
    const observed = observe(T0, T0 + 10 * SECOND);
    expect(observed.nodeClaimsCreated).toEqual({
      count: 2,
      pricePerHour: 0.2,
      nodeClaims: [
        {
          nodeClaim: 'new-1',
          nodePool: 'default',
          at: new Date(T0 + 2 * SECOND).toISOString(),
          instanceType: 'm5.xlarge',
          zone: 'us-east-1a',
          capacityType: 'on-demand',
          pricePerHour: 0.2,
        },
        { nodeClaim: 'new-2', nodePool: 'default', at: new Date(T0 + 3 * SECOND).toISOString() },
      ],
    });
    expect(observed.nodeClaimsDeleted).toMatchObject({
      count: 1,
      pricePerHour: 0.2,
      nodeClaims: [{ nodeClaim: 'going', at: new Date(T0 + 5 * SECOND).toISOString() }],
    });
  });

  it('says nothing without a window, or when nothing changed in it', () => {
    const first = observe();
    expect(first.nodeClaimsCreated).toBeUndefined();
    expect(first.nodeClaimsDeleted).toBeUndefined();
    const quiet = observe(T0 + 20 * SECOND, T0 + 30 * SECOND);
    expect(quiet.nodeClaimsCreated).toBeUndefined();
    expect(quiet.nodeClaimsDeleted).toBeUndefined();
  });

  it('counts and prices every change but names the first OBSERVED_CHANGES_SAMPLE', () => {
    const many = Array.from({ length: OBSERVED_CHANGES_SAMPLE + 5 }, (_, i) =>
      nodeClaim(`burst-${String(i).padStart(3, '0')}`, { labels, createdAtMs: T0 + 1 + i }),
    );
    const observed = observeCluster({
      nodes: [],
      claims: many,
      pools: new Map(pools.map((p) => [p.pool.name, p])),
      input,
      sinceMs: T0,
      untilMs: T0 + 10 * SECOND,
    });
    expect(observed.nodeClaimsCreated?.count).toBe(OBSERVED_CHANGES_SAMPLE + 5);
    expect(observed.nodeClaimsCreated?.pricePerHour).toBeCloseTo(0.2 * (OBSERVED_CHANGES_SAMPLE + 5), 6);
    expect(observed.nodeClaimsCreated?.nodeClaims).toHaveLength(OBSERVED_CHANGES_SAMPLE);
    expect(observed.nodeClaimsCreated?.nodeClaims[0]?.nodeClaim).toBe('burst-000');
  });

  it('names deletions up to the read with readAtMs, creations up to the window’s end as pod startups', () => {
    const observed = observeCluster({
      nodes: [],
      claims,
      pools: new Map(pools.map((p) => [p.pool.name, p])),
      input,
      sinceMs: T0,
      untilMs: T0 + 4 * SECOND,
      readAtMs: T0 + 12 * SECOND,
    });
    expect(observed.nodeClaimsCreated?.nodeClaims.map((c) => c.nodeClaim)).toEqual(['new-1', 'new-2']);
    expect(observed.nodeClaimsDeleted?.nodeClaims.map((c) => c.nodeClaim)).toEqual(['going']);
    expect(observed.until).toBe(new Date(T0 + 4 * SECOND).toISOString());
  });
});
