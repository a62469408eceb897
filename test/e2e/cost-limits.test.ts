import { describe, expect, it } from 'vitest';
import { launched, ProvisionerE2E } from './provisioner-fixture.ts';

// Dollar limits on the real API server and moto: a NodePool annotated as a user writes it
// (flotilla.io/max-cost-per-hour) launches until the next node would pass its limit, and the pods
// left over are told why with a FailedScheduling Event and an `unschedulable` decision naming the
// limit; the cluster's limit (the stack's maxCostPerHour, the provisioner's solve options) holds
// every NodePool, whatever already runs in the cluster.

const e2e = new ProvisionerE2E('cost');
const { id, namespace, logLines } = e2e;

const failedScheduling = e2e.failedSchedulingEvents.bind(e2e);

describe('dollar limits (moto + kube-apiserver + kube-scheduler)', () => {
  it('stops a NodePool at its own dollar limit and tells the remaining pods which limit holds them', async () => {
    const pool = await e2e.createPool('capped', 'capped', {
      instanceTypes: ['m5.large'],
      annotations: { 'flotilla.io/max-cost-per-hour': '0.25' },
    });
    // One pod per m5.large (1.5 cpu of its ~1.9 allocatable).
    await e2e.deploy('capped', 'capped', 5, '1500m');

    const result = await e2e.run(`cost-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    const launches = launched(result.claims.filter((c) => c.nodePool === pool));
    const decided = logLines.filter((l) => l['message'] === 'launch decided' && l['nodePool'] === pool);
    const price = Number(decided[0]?.['pricePerHour']);
    expect(price).toBeGreaterThan(0);
    // As many nodes as fit under $0.25/h, and not one more.
    expect(launches.length).toBe(Math.floor(0.25 / price));
    expect(await e2e.instancesOf(pool)).toHaveLength(launches.length);

    const stuck = result.unschedulable.filter((u) => u.pod.namespace === namespace);
    expect(stuck).toHaveLength(5 - launches.length);
    const reason = stuck[0]?.reasons.find((r) => r.nodePool === pool)?.reason ?? '';
    expect(reason).toMatch(
      /^dollar limit \$0\.2500\/h \(the NodePool annotation flotilla\.io\/max-cost-per-hour\) leaves room for no instance type that fits \(remaining \$0\.\d{4}\/h; the cheapest that fits may launch at up to \$0\.\d{4}\/h\)$/,
    );
    const events = await failedScheduling('capped', stuck.length);
    expect(new Set(events.map((e) => e.involvedObject.name))).toEqual(new Set(stuck.map((u) => u.pod.name)));
    for (const e of events) expect(e.message).toContain(`nodePool ${pool}: dollar limit $0.2500/h`);
    expect(
      logLines.some(
        (l) =>
          l['decision'] === 'unschedulable' &&
          String(l['reason']).includes(`nodePool ${pool}: dollar limit $0.2500/h`) &&
          Number(l['podCount']) === stuck.length,
      ),
    ).toBe(true);

    // A second run launches nothing more: the running nodes count at their offering price.
    const again = await e2e.run(`cost-${id}-again`);
    expect(
      again.kind === 'provisioned' ? launched(again.claims.filter((c) => c.nodePool === pool)) : [],
    ).toEqual([]);
    expect(await e2e.instancesOf(pool)).toHaveLength(launches.length);
  });

  it("holds every NodePool at the cluster's dollar limit", async () => {
    const pool = await e2e.createPool('cluster', 'free', { instanceTypes: ['m5.large'] });
    await e2e.deploy('cluster', 'free', 1, '500m');
    // Whatever else runs in the cluster, a limit of $0/h leaves room for no launch at all.
    const result = await e2e.run(`cost-cluster-${id}`, { solveOptions: { maxCostPerHour: 0 } });
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims.filter((c) => c.nodePool === pool))).toEqual([]);
    expect(await e2e.instancesOf(pool)).toEqual([]);
    const [event] = await failedScheduling('free', 1);
    expect(event?.message).toContain(
      `nodePool ${pool}: dollar limit $0.0000/h (the cluster's maxCostPerHour)`,
    );

    // Without the limit the same pod launches.
    const free = await e2e.run(`cost-cluster-${id}-free`);
    expect(
      free.kind === 'provisioned' ? launched(free.claims.filter((c) => c.nodePool === pool)) : [],
    ).toHaveLength(1);
  });

  it('launches nothing for a NodePool whose dollar limit does not read, and says why', async () => {
    const pool = await e2e.createPool('typo', 'typo', {
      instanceTypes: ['m5.large'],
      annotations: { 'flotilla.io/max-cost-per-hour': '25 dollars' },
    });
    await e2e.deploy('typo', 'typo', 1, '500m');
    const result = await e2e.run(`cost-typo-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims.filter((c) => c.nodePool === pool))).toEqual([]);
    const [event] = await failedScheduling('typo', 1);
    expect(event?.message).toContain(
      `nodePool ${pool}: annotation flotilla.io/max-cost-per-hour "25 dollars" is not a number of US dollars per hour`,
    );
  });
});
