import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { phantomNode } from '../fixtures/forged-summary.ts';
import { waitFor } from '../harness/proc.ts';
import {
  forgeSummary,
  honestSummary,
  type MutableSummary,
  summaryCluster,
  tampered,
} from '../harness/summary-attack.ts';
import { disruptionLambdaPass } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// An attacker holding the shim's role publishes the cluster summary an honest shim would, with one
// field changed. The disruption Lambda reads its pods, Nodes and NodeClaims from that summary; it
// acts only on what the API server confirms: a NodeClaim the summary dates to 2020 does not expire,
// a NodeClaim whose NodePool hash the summary changes is not marked Drifted nor replaced, and a
// Ready Node of 100,000 CPUs that only the summary has takes no pods from the NodePool's nodes.
// Each case's pass takes its own lease: a pass after another on the same lease reads NodeClaims
// from a summary only when it is current past that pass's end (and then this one would be).

const e2e = new ProvisionerE2E('summary-attack-disr');

/** A NodePool of this file with `count` nodes of one 1.5-CPU pod each, every NodeClaim initialized. */
async function poolWithNodes(suffix: string, count: number, disruption?: Record<string, unknown>) {
  const pool = await e2e.createPool(suffix, suffix, {
    instanceTypes: ['m5.large'],
    ...(disruption === undefined ? {} : { disruption }),
  });
  await e2e.deploy(suffix, suffix, count, '1500m');
  await e2e.run(`${suffix}-${e2e.id}`);
  await e2e.allRunning(suffix, count);
  const claims = await waitFor(
    `${count} NodeClaims of ${pool} initialized`,
    async () => {
      const claims = await e2e.nodeClaimsOf(pool);
      const initialized = claims.filter((c) =>
        c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
      );
      return initialized.length === count && claims.length === count ? claims : undefined;
    },
    { timeoutMs: 90_000 },
  );
  return { pool, names: claims.map((c) => c.name).sort() };
}

/** The NodeClaim `name` of a summary document, as plain JSON. */
function claimIn(
  doc: MutableSummary,
  name: string,
): { metadata: { creationTimestamp?: string; annotations: Record<string, string> } } {
  const claim = doc.head.nodeClaims.find((c) => c['metadata']?.['name'] === name);
  if (claim === undefined) throw new Error(`nodeClaim ${name} is not in the summary`);
  return claim as { metadata: { creationTimestamp?: string; annotations: Record<string, string> } };
}

/** Publishes the honest summary with `change`, and the Cluster port the disruption Lambda wires over it. */
async function forge(change: (doc: MutableSummary) => void) {
  const { server, kc, cluster } = e2e.env;
  await forgeSummary(server, tampered(await honestSummary(kc), change));
  return summaryCluster(server, 'disruption', cluster, e2e.logger);
}

const disruptLines = (pool: string) =>
  e2e.logLines.filter(
    (l) =>
      l['decision'] === 'disrupt' &&
      (l['candidates'] as { nodePool: string }[] | undefined)?.some((c) => c.nodePool === pool),
  );

describe('the disruption Lambda with a forged cluster summary', () => {
  it('does not expire a NodeClaim the summary dates to 2020', async () => {
    const { pool, names } = await poolWithNodes('expiry', 1);
    const [name = ''] = names;
    const listed = await forge((doc) => {
      claimIn(doc, name).metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    });
    // The Lambda's list of NodeClaims is the forged one.
    const seen = (await listed.nodeClaims()).items.find((c) => c.name === name);
    expect(seen?.createdAtMs).toBe(Date.parse('2020-01-01T00:00:00Z'));

    const result = await disruptionLambdaPass(e2e, pool, `expiry-${e2e.id}`, {
      cluster: listed,
      options: { leaseName: `disruption#${e2e.id}-expiry` },
    });

    expect(result.decisions).toEqual([]);
    const after = await e2e.nodeClaimsOf(pool);
    expect(after.map((c) => [c.name, c.deleting])).toEqual([[name, false]]);
    expect(disruptLines(pool)).toEqual([]);
    const said = e2e.logLines.filter((l) => l['message'] === 'expiration not confirmed');
    expect(said).toHaveLength(1);
    expect(JSON.stringify(said[0]?.['nodeClaims'])).toContain(name);
  });

  it('writes no Drifted=True and starts no replacement for a NodePool hash only the summary changed', async () => {
    const { pool, names } = await poolWithNodes('drift', 1);
    const [name = ''] = names;
    const listed = await forge((doc) => {
      claimIn(doc, name).metadata.annotations['karpenter.sh/nodepool-hash'] = 'forged';
    });

    const seen = (await listed.nodeClaims()).items.find((c) => c.name === name);
    expect(seen?.annotations['karpenter.sh/nodepool-hash']).toBe('forged');

    const result = await disruptionLambdaPass(e2e, pool, `drift-${e2e.id}`, {
      cluster: listed,
      options: { leaseName: `disruption#${e2e.id}-drift` },
    });

    (await import('node:fs')).writeFileSync(
      '/tmp/drift-lines.json',
      JSON.stringify(e2e.logLines.slice(-80), null, 1),
    );
    // No replacement: the NodePool has its one NodeClaim, as it was.
    const after = await e2e.nodeClaimsOf(pool);
    expect(after.map((c) => [c.name, c.deleting])).toEqual([[name, false]]);
    const drifted = after[0]?.status.conditions.find((c) => c.type === 'Drifted');
    expect(drifted?.status).not.toBe('True');
    // A drift command the pass chose on the summary is abandoned on the API server's NodeClaim.
    expect(result.decisions.map((d) => d.outcome).filter((o) => o !== 'abandoned')).toEqual([]);
    expect(disruptLines(pool).filter((l) => l['outcome'] !== 'abandoned')).toEqual([]);
    expect(
      e2e.logLines.some(
        (l) => l['message'] === 'nodeclaim condition not confirmed' && l['nodeClaim'] === name,
      ),
    ).toBe(true);
    expect(e2e.logLines.filter((l) => l['decision'] === 'drifted' && l['nodeClaim'] === name)).toEqual([]);
  });

  it('deletes none of a NodePool’s NodeClaims for a schedule window that only a NodeClaim of the summary puts it over', async () => {
    const { pool, names } = await poolWithNodes('window', 2, { budgets: [{ nodes: '100%' }] });
    // The user's window holds the pool to the two nodes it runs.
    await e2e.env.custom.patchClusterCustomObject(
      {
        group: 'karpenter.sh',
        version: 'v1',
        plural: 'nodepools',
        name: pool,
        body: {
          metadata: {
            annotations: {
              'flotilla.io/schedules': JSON.stringify([
                {
                  name: 'hold',
                  start: '* * * * *',
                  end: '59 23 31 12 *',
                  timeZone: 'UTC',
                  limits: { nodes: '2' },
                },
              ]),
            },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const listed = await forge((doc) => {
      const model = doc.head.nodeClaims.find((c) => c['metadata']?.['name'] === names[0]);
      const copy = structuredClone(model) as { metadata: Record<string, unknown> };
      copy.metadata = {
        ...copy.metadata,
        name: `${names[0]}-ghost`,
        uid: '6f1c2f4e-0000-4000-8000-00000000beef',
      };
      doc.head.nodeClaims.push(copy as never);
      doc.head.counts.nodeClaims += 1;
    });
    expect((await listed.nodeClaims()).items.map((c) => c.name)).toContain(`${names[0]}-ghost`);

    const result = await disruptionLambdaPass(e2e, pool, `window-${e2e.id}`, {
      cluster: listed,
      options: { validationMs: 2_000, leaseName: `disruption#${e2e.id}-window` },
    });

    const after = await e2e.nodeClaimsOf(pool);
    expect(after.map((c) => [c.name, c.deleting]).sort()).toEqual(names.map((n) => [n, false]));
    expect(result.decisions.filter((d) => d.outcome !== 'abandoned')).toEqual([]);
    const abandoned = disruptLines(pool).filter((l) => l['outcome'] === 'abandoned');
    expect(abandoned.map((l) => l['method'])).toEqual(['schedule']);
    expect(String(abandoned[0]?.['why'])).toContain("on the API server's objects");
  });

  it('deletes none of a NodePool’s NodeClaims to move their pods onto a Ready Node of 100,000 CPUs only the summary has', async () => {
    const { pool, names } = await poolWithNodes('phantom', 3, {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '100%' }],
    });
    const phantom = `phantom-${e2e.id}`;
    const listed = await forge((doc) => {
      doc.head.nodes.push(
        phantomNode(phantom, pool, {
          ...e2e.nodeMarks('phantom'),
          uid: '6f1c2f4e-0000-4000-8000-00000000cafe',
          providerID: 'aws:///us-east-1a/i-0deadbeefdeadcafe',
          createdAt: new Date(Date.now() - 3_600_000),
        }),
      );
      doc.head.counts.nodes += 1;
    });
    expect((await listed.nodeInfos()).items.map((n) => n.name)).toContain(phantom);
    expect(await e2e.env.cluster.node(phantom)).toBeUndefined();

    const result = await disruptionLambdaPass(e2e, pool, `phantom-${e2e.id}`, {
      cluster: listed,
      options: { validationMs: 2_000, leaseName: `disruption#${e2e.id}-phantom` },
    });

    const after = await e2e.nodeClaimsOf(pool);
    expect(after.map((c) => [c.name, c.deleting]).sort()).toEqual(names.map((n) => [n, false]));
    expect(result.decisions.filter((d) => d.outcome !== 'abandoned')).toEqual([]);
    // The command the summary suggested was decided again on the API server's objects, and dropped.
    const abandoned = disruptLines(pool).filter((l) => l['outcome'] === 'abandoned');
    expect(abandoned.length).toBeGreaterThan(0);
    expect(String(abandoned[0]?.['why'])).toContain("on the API server's objects");
  });
});
