import { PatchStrategy, PolicyV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { wallClockMs } from '../../shared/core/index.ts';
import { waitFor } from '../harness/proc.ts';
import { disruptionLambdaPass } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// A schedule's window that empties its NodePool, on the real API server and moto: three nodes run
// (two web pods and a pod whose PodDisruptionBudget allows no eviction), then the user annotates
// the NodePool with a window open now that holds it to 0 CPUs. The disruption pass, run as the
// disruption Lambda (the controller group, its own role), removes the two web nodes in one command
// with the reason `Scheduled`, launching nothing, and leaves the node the PDB holds, saying why.

const e2e = new ProvisionerE2E('window');
const { id } = e2e;
let pool = '';

/** Two hours ahead of Tokyo's wall clock now: the window's end, always within a day. */
const endHour = (new Date(wallClockMs(Date.now(), 'Asia/Tokyo')).getUTCHours() + 2) % 24;

const annotate = (annotations: Record<string, string>) =>
  e2e.env.custom.patchClusterCustomObject(
    {
      group: 'karpenter.sh',
      version: 'v1',
      plural: 'nodepools',
      name: pool,
      body: { metadata: { annotations } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );

/** A window open now (it opened this minute) holding `limits`, closing at `endHour`:00 Tokyo time. */
const windowOpenNow = (limits: Record<string, string>) => ({
  'flotilla.io/schedules': JSON.stringify([
    { name: 'night', start: '* * * * *', end: `0 ${endHour} * * *`, timeZone: 'Asia/Tokyo', limits },
  ]),
});

beforeAll(async () => {
  pool = await e2e.createPool('night', 'night', {
    instanceTypes: ['m5.large'],
    disruption: { consolidateAfter: 'Never', budgets: [{ nodes: '100%' }] },
  });
  // One pod per m5.large: three nodes.
  await e2e.deploy('night', 'web', 2, '1500m');
  await e2e.deploy('night', 'held', 1, '1500m');
  await e2e.podDisruptionBudget('held', 1);
  await e2e.run(`run-${id}`);
  await e2e.allRunning('web', 2);
  await e2e.allRunning('held', 1);
  // Disruption looks only at initialized nodes.
  await waitFor(
    'three NodeClaims initialized',
    async () => {
      const claims = await e2e.nodeClaimsOf(pool);
      const initialized = claims.filter((c) =>
        c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
      );
      return initialized.length === 3 ? true : undefined;
    },
    { timeoutMs: 90_000 },
  );
  await waitFor(
    'the PDB of held to allow no eviction',
    async () => {
      const pdb = await e2e.env.kc
        .makeApiClient(PolicyV1Api)
        .readNamespacedPodDisruptionBudget({ namespace: e2e.namespace, name: 'held' });
      return pdb.status?.currentHealthy === 1 && pdb.status.disruptionsAllowed === 0 ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
}, 240_000);

describe('a schedule window that empties its NodePool (moto + kube-apiserver + kube-controller-manager)', () => {
  it('removes nothing while the pool fits the window, then every node a PDB does not hold once it does not', async () => {
    const claims = await e2e.nodeClaimsOf(pool);
    expect(claims).toHaveLength(3);

    await annotate(windowOpenNow({ cpu: '100' }));
    const roomy = await disruptionLambdaPass(e2e, pool, `roomy-${id}`, { options: { validationMs: 1_000 } });
    expect(roomy.decisions).toEqual([]);

    await annotate(windowOpenNow({ cpu: '0' }));
    const pass = await disruptionLambdaPass(e2e, pool, `empty-${id}`, { options: { validationMs: 1_000 } });
    // The two nodes go in one command (or, should one of them have changed meanwhile on a busy
    // machine, in the pass's next command), every decision the window's.
    const said = JSON.stringify(pass.decisions);
    expect(
      pass.decisions.every((d) => d.method === 'schedule'),
      said,
    ).toBe(true);
    const deleted = pass.decisions.filter((d) => d.outcome === 'deleted');
    expect(deleted.length, said).toBeGreaterThan(0);
    for (const decision of deleted) {
      expect(decision).toMatchObject({ reason: 'Scheduled', action: 'delete', replacements: [] });
      expect(decision.policy).toMatch(
        new RegExp(
          `^nodePool ${pool}: schedule "night" holds limits cpu 0 until .*\\(${String(endHour).padStart(2, '0')}:00 Asia/Tokyo\\)$`,
        ),
      );
    }
    const heldNode = (await e2e.podsOf('held'))[0]?.spec?.nodeName;
    const removed = deleted.flatMap((d) => d.candidates.map((c) => c.node)).sort();
    expect(removed).toHaveLength(2);
    expect(removed).not.toContain(heldNode);
    // The two NodeClaims go (their drain starts); the held one stays, and nothing launched.
    const after = await e2e.nodeClaimsOf(pool);
    expect(after.filter((c) => !c.deleting).map((c) => c.status.nodeName)).toEqual([heldNode]);
    // The node the PDB holds says why it stays.
    const blocked = (await e2e.env.core.listNamespacedEvent({ namespace: 'default' })).items.filter(
      (e) =>
        e.reason === 'DisruptionBlocked' &&
        e.involvedObject.kind === 'Node' &&
        e.involvedObject.name === heldNode,
    );
    expect(blocked.map((e) => e.message)).toEqual([expect.stringMatching(/^Cannot disrupt: pdb .*held/)]);
    expect(after.length).toBeLessThanOrEqual(3);
  });
});
