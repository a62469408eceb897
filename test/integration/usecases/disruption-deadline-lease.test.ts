import { describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import type { LeaseStore } from '../../../shared/ports/lease.ts';
import type { DisruptionConfig } from '../../../shared/usecases/disruption/setup.ts';
import { disruptionLambdaPass, relabelNodePool } from '../../e2e/disruption-lambda.ts';
import { ProvisionerE2E } from '../../e2e/provisioner-fixture.ts';
import { waitFor } from '../../harness/proc.ts';
import { TABLE } from '../aws/cloud-fixture.ts';
import { asLambda } from '../aws/lambda-cold-start.ts';

// The disruption pass's deadline and lease on the real servers: the shared kube-apiserver (with
// kube-scheduler and the node simulator playing kubelet) and moto's DynamoDB, the pass running as
// the disruption Lambda (the flotilla:controller group on the API server, the disruption role's
// policy on every AWS call). The nodes are launched and initialized by Flotilla's own provisioner
// and lifecycle; the test only applies what a user applies (a NodePool, a Deployment, their edits).

const e2e = new ProvisionerE2E('pass');
const { id, logLines } = e2e;

/** One disruption pass as the Lambda runs it, limited to `pool` (the API server is shared). */
const pass = (
  pool: string,
  holder: string,
  options: DisruptionConfig = {},
  overrides: { cluster?: Cluster; leases?: LeaseStore } = {},
) => disruptionLambdaPass(e2e, pool, holder, { ...overrides, options });

const passLines = (holder: string) =>
  logLines.filter((l) => l['decision'] === 'disruptionPass' && l['holder'] === holder);

describe('the disruption pass on the real servers, as the disruption Lambda', () => {
  it('a pass whose deadline comes while commands remain starts no new command after it, and says so', async () => {
    const pool = await e2e.createPool('deadline', 'deadline', {
      instanceTypes: ['m5.large'],
      // No emptiness: the empty nodes below are left to drift, one command per node.
      disruption: { consolidateAfter: 'Never', budgets: [{ nodes: '100%' }] },
    });
    await e2e.deploy('deadline', 'filler', 2, '1500m');
    await asLambda(e2e.env.server, 'provisioner', () => e2e.run(`prov-${id}`));
    const claims = await waitFor(
      'two NodeClaims initialized with their nodes',
      async () => {
        const all = await e2e.nodeClaimsOf(pool);
        const ready = all.filter(
          (c) =>
            c.status.nodeName !== undefined &&
            c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
        );
        return all.length === 2 && ready.length === 2 ? ready : undefined;
      },
      { timeoutMs: 120_000 },
    );
    await e2e.scale('filler', 0);
    await waitFor(
      'the pods gone',
      async () => ((await e2e.podsOf('filler')).length === 0 ? true : undefined),
      {
        timeoutMs: 60_000,
      },
    );
    await relabelNodePool(e2e, pool, 'release', 'next');

    // The invocation's deadline comes as soon as the pass has carried out one command.
    const holder = `deadline-${id}`;
    const firstDone = () => logLines.some((l) => l['decision'] === 'disrupt' && l['holder'] === holder);
    const cut = await pass(pool, holder, {
      deadlineMs: () => (firstDone() ? Date.now() : Date.now() + 10 * 60_000),
    });
    expect(cut.decisions).toEqual([
      expect.objectContaining({ method: 'drift', reason: 'Drifted', action: 'delete', outcome: 'deleted' }),
    ]);
    expect(passLines(holder)).toEqual([
      expect.objectContaining({ reason: 'deadline', commands: 1, drifted: 1, failedValidations: 0 }),
    ]);
    const [deleted] = cut.decisions.flatMap((d) => d.candidates.map((c) => c.nodeClaim));
    const left = (await e2e.nodeClaimsOf(pool)).filter((c) => !c.deleting).map((c) => c.name);
    expect(left).toEqual(claims.map((c) => c.name).filter((n) => n !== deleted));

    // The command that remained is the next pass's.
    const next = await pass(pool, `after-deadline-${id}`);
    expect(next.decisions.flatMap((d) => d.candidates.map((c) => c.nodeClaim))).toEqual(left);
    expect(passLines(`after-deadline-${id}`)).toEqual([
      expect.objectContaining({ reason: 'commands started', commands: 1 }),
    ]);
  }, 240_000);

  it('a pass that dies holding the lease blocks the next ones only until the lease expires', async () => {
    const pool = `prov-${id}-none`;
    const ttlSeconds = 3;
    const leaseName = `disruption#${id}-crash`;
    const aws = e2e.env.account.as('disruption');
    const leases = new DynamoLeaseStore(aws.dynamodb, TABLE);
    // The invocation is killed at its first read of the cluster, after it took the lease: it
    // never gives the lease back.
    const killed = new Error('invocation killed');
    const dying: Cluster = {
      ...e2e.env.cluster,
      nodePools: () => Promise.reject(killed),
    };
    const holding: LeaseStore = {
      acquire: leases.acquire.bind(leases),
      renew: leases.renew.bind(leases),
      isHeld: leases.isHeld.bind(leases),
      release: async () => undefined,
    };
    const diedAt = Date.now();
    await expect(
      pass(
        pool,
        `dying-${id}`,
        { leaseName, leaseTtlSeconds: ttlSeconds },
        { cluster: dying, leases: holding },
      ),
    ).rejects.toBe(killed);

    const blocked = await pass(pool, `blocked-${id}`, { leaseName, leaseTtlSeconds: ttlSeconds });
    expect(blocked.kind).toBe('skipped');
    expect(passLines(`blocked-${id}`)).toEqual([
      expect.objectContaining({ reason: 'lease held', commands: 0 }),
    ]);

    // Passes keep coming as the schedule sends them; the first after the TTL runs.
    let tries = 0;
    await waitFor(
      'a pass that runs once the lease expired',
      async () => {
        tries += 1;
        const result = await pass(pool, `retry-${tries}-${id}`, { leaseName, leaseTtlSeconds: ttlSeconds });
        return result.kind === 'pass' ? true : undefined;
      },
      { timeoutMs: 4 * ttlSeconds * 1000, intervalMs: 500 },
    );
    const [ran] = passLines(`retry-${tries}-${id}`);
    expect(ran).toMatchObject({ reason: 'no candidates' });
    // It took the lease (before its line) no earlier than the dead pass's lease expired.
    expect(Date.parse(String(ran?.['time']))).toBeGreaterThanOrEqual(diedAt + ttlSeconds * 1000);
    // Every pass before it found the lease held.
    for (let i = 1; i < tries; i++) {
      expect(passLines(`retry-${i}-${id}`)).toEqual([expect.objectContaining({ reason: 'lease held' })]);
    }
  }, 60_000);
});
