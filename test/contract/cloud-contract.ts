import { beforeEach, describe, expect, it } from 'vitest';
import type { CapacityType, InstanceType } from '../../shared/core/index.ts';
import type { ManualClock } from '../../shared/ports/clock.ts';
import {
  type Cloud,
  type CloudInstance,
  type EC2NodeClass,
  InstanceNotOwnedError,
  InsufficientCapacityError,
  type LaunchRequest,
  NodeClassNotReadyError,
  type NodeSelectorRequirement,
} from '../../shared/ports/cloud.ts';

/** What one implementation of the Cloud port hands the contract suite, fresh for every test. */
export interface CloudContractSubject {
  readonly cloud: Cloud;
  /** A Ready EC2NodeClass with one subnet in each of `zones`, AL2023 AMIs for amd64 and arm64. */
  readonly nodeClass: EC2NodeClass;
  /** The clock the cloud reads; the suite moves it. */
  readonly clock: ManualClock;
  readonly clusterName: string;
  /** The NodeClass's zones: us-east-1a, us-east-1b, us-east-1c. */
  readonly zones: readonly string[];
  /**
   * From now on EC2 has no capacity for `instanceType` (in `zones`, or everywhere) for any
   * capacity type, until the returned function is called.
   */
  noCapacityFor(instanceType: string, zones?: readonly string[]): () => void;
  /** Launches a running instance outside Flotilla (no cluster tags) and returns its id. */
  launchForeignInstance(): Promise<string>;
}

const ON_DEMAND: NodeSelectorRequirement = {
  key: 'karpenter.sh/capacity-type',
  operator: 'In',
  values: ['on-demand'],
};
const inZones = (...zones: string[]): NodeSelectorRequirement => ({
  key: 'topology.kubernetes.io/zone',
  operator: 'In',
  values: zones,
});
const GENERAL = ['t3.medium', 'c5.large', 'm5.large'];
const ICE_TTL_MS = 180_000;

/** The offering the port promises to pick: reserved, else spot, else on-demand; then cheapest. */
function expectedChoice(
  types: readonly InstanceType[],
  allowed: { readonly capacityTypes: readonly CapacityType[]; readonly zones: readonly string[] },
) {
  const offerings = types.flatMap((type) =>
    type.offerings
      .filter((o) => o.available && allowed.capacityTypes.includes(o.capacityType))
      .filter((o) => allowed.zones.includes(o.zone))
      .map((o) => ({ instanceType: type.name, ...o })),
  );
  const capacityType = (['reserved', 'spot', 'on-demand'] as const).find((c) =>
    offerings.some((o) => o.capacityType === c),
  );
  const best = offerings
    .filter((o) => o.capacityType === capacityType)
    .sort(
      (a, b) =>
        a.priceUsdPerHour - b.priceUsdPerHour ||
        a.instanceType.localeCompare(b.instanceType) ||
        a.zone.localeCompare(b.zone),
    )[0];
  return best === undefined
    ? undefined
    : { instanceType: best.instanceType, zone: best.zone, capacityType: best.capacityType };
}

/**
 * The behaviour every Cloud implementation promises (shared/ports/cloud.ts), run against the AWS
 * adapter on moto and the simulator's in-memory cloud so the simulator stays honest. Outcomes are
 * compared semantically (which offering, which error), never by exact ids or prices.
 */
export function describeCloudContract(name: string, makeSubject: () => Promise<CloudContractSubject>): void {
  describe(`Cloud contract: ${name}`, () => {
    let subject: CloudContractSubject;

    beforeEach(async () => {
      subject = await makeSubject();
    });

    async function types(names: readonly string[] = GENERAL): Promise<InstanceType[]> {
      const all = await subject.cloud.instanceTypes(subject.nodeClass);
      return all.filter((t) => names.includes(t.name));
    }

    async function request(
      nodeClaimName: string,
      overrides: Partial<LaunchRequest> & { readonly names?: readonly string[] } = {},
    ): Promise<LaunchRequest> {
      const { names, ...rest } = overrides;
      return {
        nodeClaimName,
        nodePoolName: 'general',
        nodeClass: subject.nodeClass,
        instanceTypes: await types(names),
        requirements: [ON_DEMAND],
        labels: { 'karpenter.sh/nodepool': 'general' },
        taints: [],
        startupTaints: [],
        ...rest,
      };
    }

    async function launch(nodeClaimName: string, overrides: Parameters<typeof request>[1] = {}) {
      return subject.cloud.create(await request(nodeClaimName, overrides));
    }

    async function failure(promise: Promise<unknown>): Promise<unknown> {
      return promise.then(
        () => new Error('expected the call to fail, but it succeeded'),
        (error: unknown) => error,
      );
    }

    it('lists instance types for the NodeClass with offerings only in its zones', async () => {
      const all = await subject.cloud.instanceTypes(subject.nodeClass);
      expect(all.length).toBeGreaterThan(10);
      for (const type of all) {
        expect(type.offerings.length).toBeGreaterThan(0);
        for (const offering of type.offerings) expect(subject.zones).toContain(offering.zone);
        expect(['amd64', 'arm64']).toContain(type.labels['kubernetes.io/arch']);
      }
      const general = await types();
      expect(general.map((t) => t.name).sort()).toEqual([...GENERAL].sort());
      for (const type of general) {
        expect(type.capacity['cpu']).toBeGreaterThan(0);
        const onDemand = type.offerings.filter((o) => o.capacityType === 'on-demand');
        expect(onDemand.map((o) => o.zone).sort()).toEqual([...subject.zones]);
        for (const o of onDemand) {
          expect(o.available).toBe(true);
          expect(o.priceUsdPerHour).toBeGreaterThan(0);
        }
      }
    });

    it('launches the cheapest offering the requirements allow, tagged for the cluster', async () => {
      const candidates = await types();
      const expected = expectedChoice(candidates, { capacityTypes: ['on-demand'], zones: ['us-east-1b'] });
      expect(expected).toEqual({ instanceType: 't3.medium', zone: 'us-east-1b', capacityType: 'on-demand' });
      const instance = await launch('general-cheap', { requirements: [ON_DEMAND, inZones('us-east-1b')] });
      expect(instance).toMatchObject({
        ...expected,
        nodeClaimName: 'general-cheap',
        nodePoolName: 'general',
        nodeClassName: subject.nodeClass.name,
      });
      expect(['pending', 'running']).toContain(instance.state);
      expect(instance.providerId).toBe(`aws:///us-east-1b/${instance.instanceId}`);
      expect(subject.nodeClass.status?.amis.map((a) => a.id)).toContain(instance.imageId);
      expect(instance.tags).toMatchObject({
        [`kubernetes.io/cluster/${subject.clusterName}`]: 'owned',
        'karpenter.sh/nodepool': 'general',
        'karpenter.sh/nodeclaim': 'general-cheap',
      });
    });

    it('launches within the instance families the scheduler left (c5 and m5: c5.large)', async () => {
      const instance = await launch('families', {
        names: ['c5.large', 'm5.large'],
        requirements: [ON_DEMAND, inZones('us-east-1c')],
      });
      expect(instance).toMatchObject({
        instanceType: 'c5.large',
        zone: 'us-east-1c',
        capacityType: 'on-demand',
      });
    });

    it('prefers spot over on-demand when the NodeClaim allows both', async () => {
      const requirements: NodeSelectorRequirement[] = [
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
        inZones('us-east-1a'),
      ];
      const expected = expectedChoice(await types(), {
        capacityTypes: ['spot', 'on-demand'],
        zones: ['us-east-1a'],
      });
      expect(expected?.capacityType).toBe('spot');
      const instance = await launch('spotty', { requirements });
      expect(instance).toMatchObject({ ...expected });
    });

    it('reports drift once the EC2NodeClass no longer resolves to the AMI or subnet of the instance', async () => {
      const instance = await launch('drifting', { requirements: [ON_DEMAND, inZones('us-east-1a')] });
      const status = subject.nodeClass.status;
      if (status === undefined) throw new Error('the contract subject must give a resolved EC2NodeClass');
      const withStatus = (patch: Partial<typeof status>): EC2NodeClass => ({
        ...subject.nodeClass,
        status: { ...status, ...patch },
      });
      const drift = (nodeClass: EC2NodeClass) => subject.cloud.isDrifted(instance.instanceId, nodeClass);

      expect(await drift(subject.nodeClass)).toBeUndefined();
      expect(await drift(withStatus({ amis: status.amis.map((a) => ({ ...a, id: `${a.id}0` })) }))).toBe(
        'AMIDrift',
      );
      expect(
        await drift(withStatus({ subnets: status.subnets.filter((s) => s.zone !== 'us-east-1a') })),
      ).toBe('SubnetDrift');
      // Security groups are judged in the pure check's unit test: moto leaves an instance launched
      // from a launch template without the template's groups, which real EC2 never does.

      const { status: _resolved, ...unresolved } = subject.nodeClass;
      expect(await drift(unresolved)).toBeUndefined();
    });

    it('is idempotent per NodeClaim name', async () => {
      const first = await launch('same-claim');
      const second = await launch('same-claim');
      expect(second.instanceId).toBe(first.instanceId);
      expect((await subject.cloud.list()).map((i) => i.instanceId)).toEqual([first.instanceId]);
    });

    it('backs off the cheapest offering after insufficient capacity until 3 minutes pass on the clock', async () => {
      const restore = subject.noCapacityFor('t3.medium');
      const first = await launch('ice-1');
      restore();
      expect(first.instanceType).toBe('c5.large');
      const t3 = (await types(['t3.medium']))[0];
      expect(t3?.offerings.filter((o) => o.capacityType === 'on-demand').map((o) => o.available)).toEqual([
        false,
        false,
        false,
      ]);

      // Capacity is back, but the back-off holds for the TTL of virtual time.
      expect((await launch('ice-2')).instanceType).toBe('c5.large');
      subject.clock.advance(ICE_TTL_MS - 1_000);
      expect((await launch('ice-3')).instanceType).toBe('c5.large');
      subject.clock.advance(2_000);
      expect((await launch('ice-4')).instanceType).toBe('t3.medium');
    });

    it('backs off only the zone that had no capacity', async () => {
      const restore = subject.noCapacityFor('t3.medium', ['us-east-1a']);
      const first = await launch('zonal-1');
      restore();
      expect(first).toMatchObject({ instanceType: 't3.medium', zone: 'us-east-1b' });
      expect(await launch('zonal-2')).toMatchObject({ instanceType: 't3.medium', zone: 'us-east-1b' });
      const t3 = (await types(['t3.medium']))[0];
      const available = t3?.offerings
        .filter((o) => o.capacityType === 'on-demand')
        .map((o) => [o.zone, o.available]);
      expect(available).toEqual([
        ['us-east-1a', false],
        ['us-east-1b', true],
        ['us-east-1c', true],
      ]);
    });

    it('raises InsufficientCapacityError carrying the offerings when no candidate has capacity', async () => {
      const restores = GENERAL.map((type) => subject.noCapacityFor(type));
      const error = await failure(launch('all-ice'));
      for (const restore of restores) restore();
      expect(error).toBeInstanceOf(InsufficientCapacityError);
      const offerings = (error as InsufficientCapacityError).offerings;
      expect(offerings).toHaveLength(9);
      expect(offerings).toContainEqual({
        instanceType: 'm5.large',
        zone: 'us-east-1c',
        capacityType: 'on-demand',
      });
      // Every one is backed off now: the next attempt fails too, and nothing was launched.
      expect(await failure(launch('all-ice-2'))).toBeInstanceOf(InsufficientCapacityError);
      expect(await subject.cloud.list()).toEqual([]);
      subject.clock.advance(ICE_TTL_MS + 1_000);
      expect((await launch('all-ice-3')).instanceType).toBe('t3.medium');
    });

    it('launches nothing for a NodeClass that is not ready', async () => {
      const status = subject.nodeClass.status;
      expect(status).toBeDefined();
      if (status === undefined) return;
      const notReady: EC2NodeClass = {
        ...subject.nodeClass,
        status: {
          ...status,
          conditions: status.conditions.map((c) =>
            c.type === 'Ready'
              ? { ...c, status: 'False', reason: 'NotReady', message: 'SubnetsReady=False' }
              : c,
          ),
        },
      };
      const error = await failure(launch('not-ready', { nodeClass: notReady }));
      expect(error).toBeInstanceOf(NodeClassNotReadyError);
      expect((error as Error).message).toContain('SubnetsReady=False');
      expect(await subject.cloud.list()).toEqual([]);
    });

    it('deletes idempotently, lists only live owned instances, and refuses foreign ones', async () => {
      const a = await launch('gc-a');
      const b = await launch('gc-b');
      const foreignId = await subject.launchForeignInstance();
      const ids = (instances: readonly CloudInstance[]) => instances.map((i) => i.instanceId).sort();

      expect(ids(await subject.cloud.list())).toEqual([a.instanceId, b.instanceId].sort());
      expect(await subject.cloud.get(a.instanceId)).toMatchObject({
        instanceId: a.instanceId,
        nodeClaimName: 'gc-a',
      });
      expect(await subject.cloud.get(foreignId)).toMatchObject({ instanceId: foreignId });

      await subject.cloud.delete(a.instanceId);
      await subject.cloud.delete(a.instanceId);
      // An instance EC2 never heard of is as gone as a terminated one.
      await subject.cloud.delete('i-0123456789abcdef0');

      // The port: undefined once EC2 no longer knows it; a terminating instance may still show.
      const gone = await subject.cloud.get(a.instanceId);
      if (gone !== undefined) expect(['shutting-down', 'terminated']).toContain(gone.state);
      const live = (await subject.cloud.list()).filter((i) => i.state !== 'shutting-down');
      expect(ids(live)).toEqual([b.instanceId]);

      expect(await failure(subject.cloud.delete(foreignId))).toBeInstanceOf(InstanceNotOwnedError);
      expect(await subject.cloud.get(foreignId)).toMatchObject({ state: 'running' });
    });

    it('hides an offering marked unavailable from instanceTypes and launches, for the ICE TTL', async () => {
      await subject.cloud.markUnavailable(
        [{ instanceType: 't3.medium', zone: 'us-east-1a', capacityType: 'on-demand' }],
        'spot interruption',
      );
      const offering = async (zone: string) =>
        (await types(['t3.medium']))[0]?.offerings.find(
          (o) => o.zone === zone && o.capacityType === 'on-demand',
        );
      expect((await offering('us-east-1a'))?.available).toBe(false);
      expect((await offering('us-east-1b'))?.available).toBe(true);

      const zoned = { requirements: [ON_DEMAND, inZones('us-east-1a')] };
      expect(await launch('marked-1', zoned)).toMatchObject({ instanceType: 'c5.large', zone: 'us-east-1a' });
      subject.clock.advance(ICE_TTL_MS - 1_000);
      expect((await offering('us-east-1a'))?.available).toBe(false);
      subject.clock.advance(2_000);
      expect((await offering('us-east-1a'))?.available).toBe(true);
      expect(await launch('marked-2', zoned)).toMatchObject({
        instanceType: 't3.medium',
        zone: 'us-east-1a',
      });
    });
  });
}
