import { describe, expect, it } from 'vitest';
import type { ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import { buildCandidates } from '../../../../shared/usecases/disruption/candidates.ts';
import { METHODS } from '../../../../shared/usecases/disruption/controller.ts';
import { boundPod, clusterNode, condition, nodeClaim, pool, READY_CONDITIONS, T0 } from './builders.ts';

// No voluntary disruption method but StaticDrift takes a static NodePool's node: the same nodes,
// each one a method would take in a dynamic pool (empty for emptiness, drifted for drift,
// underutilized for the consolidation methods), are no candidate of theirs in a static one; the
// drifted ones are StaticDrift's alone.

const POOLS: ReadonlyMap<string, ClusterNodePool> = new Map([
  ['dynamic', pool('dynamic', { consolidationPolicy: 'WhenEmptyOrUnderutilized' })],
  [
    'static',
    pool(
      'static',
      { consolidationPolicy: 'WhenEmptyOrUnderutilized' },
      { pool: { name: 'static', nodeClassName: 'default', requirements: [], replicas: 2 } },
    ),
  ],
]);

const CONDITIONS = [...READY_CONDITIONS, condition('Consolidatable'), condition('Drifted')];

function candidatesIn(poolName: string, withPod: boolean) {
  const name = `${poolName}-${withPod ? 'busy' : 'empty'}`;
  return buildCandidates({
    nodeClaims: [nodeClaim(name, { pool: poolName, conditions: CONDITIONS })],
    nodes: [clusterNode(`node-${name}`, { pool: poolName, pods: withPod ? [boundPod(`${name}-pod`)] : [] })],
    nodePools: POOLS,
    pdbs: [],
    inCommand: new Set(),
    nominated: new Set(),
    priceOf: () => 0.1,
    nowMs: T0,
  });
}

describe('static NodePools and voluntary disruption', () => {
  const dynamicMethods = METHODS.filter((m) => m.staticNodePools !== true);
  it.each(dynamicMethods.map((m) => [m.name, m] as const))(
    '%s never takes a static pool’s node',
    (_, method) => {
      const withPod = method.name !== 'emptiness';
      const dynamic = candidatesIn('dynamic', withPod);
      const statics = candidatesIn('static', withPod);
      // The dynamic pool's node is one this method takes…
      expect(
        dynamic.candidates.filter((c) => method.shouldDisrupt(c, T0)).map((c) => c.nodeClaim.name),
      ).toEqual([`dynamic-${withPod ? 'busy' : 'empty'}`]);
      // …and the same node in the static pool is no candidate, though it still counts for budgets.
      expect(statics.candidates).toEqual([]);
      expect(statics.counts.get('static')).toEqual({ nodes: 1, disrupting: 0 });
      // Being drifted, it is StaticDrift's.
      expect(statics.staticCandidates?.map((c) => c.nodeClaim.name)).toEqual([
        `static-${withPod ? 'busy' : 'empty'}`,
      ]);
    },
  );

  it('static-drift takes the drifted node of a static pool and none of a dynamic one', () => {
    const [method] = METHODS.filter((m) => m.staticNodePools === true);
    expect(method?.name).toBe('static-drift');
    const statics = candidatesIn('static', true);
    const dynamic = candidatesIn('dynamic', true);
    expect(statics.staticCandidates?.filter((c) => method?.shouldDisrupt(c, T0))).toHaveLength(1);
    expect(dynamic.staticCandidates).toEqual([]);
    expect(dynamic.candidates.filter((c) => method?.shouldDisrupt(c, T0))).toEqual([]);
  });
});
