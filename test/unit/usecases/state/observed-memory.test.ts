import { describe, expect, it } from 'vitest';
import { bundledCatalog, makeMemoryCloud } from '../../../../shared/adapters/memory/index.ts';
import { Label, solve } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { buildSchedulingInput, type ClusterState } from '../../../../shared/usecases/state/cluster-state.ts';
import {
  observedMemoryOf,
  observeMemory,
  withObservedMemory,
} from '../../../../shared/usecases/state/observed-memory.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode, launchedNodeLabels } from '../../../fixtures/nodes.ts';
import { pod } from '../../core/builders.ts';
import { readyNodeClass } from '../../memory/fixtures.ts';
import { nodePool } from '../provisioning/builders.ts';

// The VM memory overhead learned from registered Nodes, as Karpenter learns it: a type's memory
// capacity is the smallest a registered Node of it shows, launched from the AMI its class launches
// it from now, keyed by the type and the class's AMIs; the estimate stands until then. What a Node
// shows is bounded by the type's memory in the catalog, since the Nodes may come from the cluster
// summary.

const MiB = 1024 ** 2;
const AT = new Date('2026-11-21T10:00:00Z');
/** m5.large: 8,192 MiB in the catalog; the 7.5% estimate leaves 7,577 MiB. */
const M5_MIB = 8192;
const ESTIMATE = (M5_MIB - Math.ceil(M5_MIB * 0.075)) * MiB;

const ami = (id: string) => ({
  id,
  requirements: [{ key: Label.arch, operator: 'In' as const, values: ['amd64'] }],
});

function nodeClass(name: string, amis = [ami('ami-1')]): EC2NodeClass {
  const ready = readyNodeClass(AT);
  return {
    ...ready,
    name,
    status: { ...(ready.status ?? { subnets: [], securityGroups: [], conditions: [] }), amis },
  };
}

interface Launched {
  readonly name: string;
  readonly memoryMiB: number;
  readonly imageId?: string;
  readonly nodeClass?: string;
  readonly registered?: boolean;
  readonly instanceType?: string;
}

/** A registered Node and its NodeClaim, launched from `imageId` for class `nodeClass`. */
function launched(o: Launched): { node: ClusterNode; claim: ClusterNodeClaim } {
  const providerId = `aws:///us-east-1a/i-0${o.name.padStart(16, '0')}`;
  const labels = launchedNodeLabels(o.name, {
    instanceType: o.instanceType ?? 'm5.large',
    initialized: o.registered ?? true,
  });
  return {
    node: clusterNode(o.name, { providerId, labels, capacity: { memory: o.memoryMiB * MiB, cpu: 2000 } }),
    claim: readNodeClaim(`claim-${o.name}`, {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: o.nodeClass ?? 'default' },
      status: { providerId, imageId: o.imageId ?? 'ami-1', conditions: [] },
    }),
  };
}

function state(nodes: readonly Launched[], classes = [nodeClass('default')]): ClusterState {
  const pairs = nodes.map(launched);
  return {
    pendingPods: [],
    nodes: pairs.map((p) => p.node),
    nodeClaims: pairs.map((p) => p.claim),
    nodePools: [nodePool('default')],
    nodeClasses: classes,
    daemonSets: [],
    namespaceLabels: new Map(),
  };
}

const cloud = makeMemoryCloud({
  clock: makeManualClock(AT),
  clusterName: 'observed',
  catalog: bundledCatalog('us-east-1', ['us-east-1a']),
});

async function m5Memory(from: ClusterState): Promise<number | undefined> {
  const input = await buildSchedulingInput(from, cloud, { nowMs: AT.getTime() });
  return input.instanceTypes.get('default')?.find((t) => t.name === 'm5.large')?.capacity['memory'];
}

describe('the memory capacity registered Nodes show', () => {
  it('stands in for the VM overhead estimate once a Node of the type has registered, the smallest winning', async () => {
    expect(await m5Memory(state([]))).toBe(ESTIMATE);
    const observed = state([
      { name: 'a', memoryMiB: 7890 },
      { name: 'b', memoryMiB: 7880 },
    ]);
    expect(await m5Memory(observed)).toBe(7880 * MiB);
    // Only m5.large learned anything.
    const input = await buildSchedulingInput(observed, cloud, { nowMs: AT.getTime() });
    const c5 = input.instanceTypes.get('default')?.find((t) => t.name === 'c5.large');
    expect(c5?.capacity['memory']).toBe((4096 - Math.ceil(4096 * 0.075)) * MiB);
  });

  it.each<[string, Launched]>([
    ['not registered yet', { name: 'a', memoryMiB: 7880, registered: false }],
    [
      'launched from an AMI the class no longer launches it from',
      { name: 'a', memoryMiB: 7880, imageId: 'ami-0' },
    ],
    ['of a class with other AMIs', { name: 'a', memoryMiB: 7880, nodeClass: 'other' }],
  ])('leaves the estimate for a Node %s', async (_, node) => {
    const other = nodeClass('other', [ami('ami-2')]);
    expect(await m5Memory(state([node], [nodeClass('default'), other]))).toBe(ESTIMATE);
  });

  it('shares what a Node of another class with the same AMIs shows, as Karpenter keys it', async () => {
    const twin = nodeClass('twin');
    expect(
      await m5Memory(
        state([{ name: 'a', memoryMiB: 7880, nodeClass: 'twin' }], [nodeClass('default'), twin]),
      ),
    ).toBe(7880 * MiB);
  });

  it('plans with it: a pod that fits the memory the Node shows and not the estimate gets an m5.large', async () => {
    const big = pod({ cpu: '100m', memory: `${7000}Mi` });
    const plan = async (from: ClusterState) => {
      const input = await buildSchedulingInput({ ...from, pendingPods: [big] }, cloud, {
        nowMs: AT.getTime(),
      });
      const types = new Map([
        ['default', (input.instanceTypes.get('default') ?? []).filter((t) => t.name === 'm5.large')],
      ]);
      return solve({ ...input.solve, instanceTypes: types });
    };
    expect((await plan(state([]))).nodeClaims).toHaveLength(0);
    expect((await plan(state([{ name: 'a', memoryMiB: 7900 }]))).nodeClaims).toHaveLength(1);
  });
});

describe('bounds on what a Node may claim (the summary is untrusted)', () => {
  const types = cloud.instanceTypes(nodeClass('default'));

  it.each<[string, number, number | undefined]>([
    ['more than the type has', M5_MIB + 1, undefined],
    ['all of it', M5_MIB, M5_MIB * MiB],
    ['a quarter less', M5_MIB * 0.75, M5_MIB * 0.75 * MiB],
    ['more than a quarter less', M5_MIB * 0.75 - 1, undefined],
  ])('counts a Node that shows %s', async (_, memoryMiB, expected) => {
    const m5 = (await types).find((t) => t.name === 'm5.large');
    if (m5 === undefined) throw new Error('no m5.large in the bundled catalog');
    expect(observedMemoryOf(m5, [memoryMiB * MiB])).toBe(expected);
  });

  it('lets 256 MiB count on the smallest types, where a quarter is less', async () => {
    const nano = (await types).find((t) => t.name === 't3.nano');
    if (nano === undefined) throw new Error('no t3.nano in the bundled catalog');
    expect(observedMemoryOf(nano, [300 * MiB])).toBe(300 * MiB);
    expect(observedMemoryOf(nano, [255 * MiB])).toBeUndefined();
  });

  it('lets disruption (lowerOnly) learn only memory below the estimate: a Node claiming more cannot shrink a replacement', async () => {
    const lowerOnly = async (from: ClusterState) => {
      const input = await buildSchedulingInput(from, cloud, {
        nowMs: AT.getTime(),
        observedMemory: 'lowerOnly',
      });
      return input.instanceTypes.get('default')?.find((t) => t.name === 'm5.large')?.capacity['memory'];
    };
    // Above the estimate (what a forged summary could claim, up to the catalog's memory): ignored.
    expect(await lowerOnly(state([{ name: 'a', memoryMiB: 8000 }]))).toBe(ESTIMATE);
    expect(await m5Memory(state([{ name: 'a', memoryMiB: 8000 }]))).toBe(8000 * MiB);
    // Below it: taken, which only makes disruption more careful.
    expect(await lowerOnly(state([{ name: 'a', memoryMiB: 7000 }]))).toBe(7000 * MiB);
  });

  it('takes the smallest Node within the bounds, so a forged large one changes nothing', async () => {
    const from = state([
      { name: 'real', memoryMiB: 7880 },
      { name: 'forged', memoryMiB: 64 * 1024 },
      { name: 'forged-small', memoryMiB: 100 },
    ]);
    const observed = observeMemory(from);
    const planned = withObservedMemory(await types, nodeClass('default'), observed);
    expect(planned.find((t) => t.name === 'm5.large')?.capacity['memory']).toBe(7880 * MiB);
  });
});
