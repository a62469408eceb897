import { describe, expect, it } from 'vitest';
import { phantomNode } from '../fixtures/forged-summary.ts';
import { forgeSummary, honestSummary, summaryCluster, tampered } from '../harness/summary-attack.ts';
import { launched, ProvisionerE2E } from './provisioner-fixture.ts';

// An attacker holding the shim's role publishes the cluster summary an honest shim would, plus one
// Ready Node of 100,000 CPUs that does not exist (the labels of a NodePool's nodes, the providerID
// of no instance). The provisioner Lambda reads its Nodes from that summary; a pending pod is left
// to existing capacity only when the API server confirms the Node, so the pod still gets a launch.

const e2e = new ProvisionerE2E('summary-attack-prov');

describe('the provisioner with a forged cluster summary', () => {
  it('launches for a pending pod although the summary shows a Ready Node of 100,000 CPUs that does not exist', async () => {
    const pool = await e2e.createPool('attack', 'attack', { instanceTypes: ['m5.large', 'm5.xlarge'] });
    await e2e.createPod('attack', 'victim', 'victim-1', '1');
    const { server, kc, cluster } = e2e.env;
    const phantom = `phantom-${e2e.id}`;
    await forgeSummary(
      server,
      tampered(await honestSummary(kc), (doc) => {
        doc.head.nodes.push(phantomNode(phantom, pool, e2e.nodeMarks('attack')));
        doc.head.counts.nodes += 1;
      }),
    );
    const listed = summaryCluster(server, 'provisioner', cluster, e2e.logger);
    // The provisioner Lambda's list of Nodes is the forged one.
    expect((await listed.nodeInfos()).items.map((n) => n.name)).toContain(phantom);
    expect(await cluster.node(phantom)).toBeUndefined();

    const result = await e2e.run(`attack-${e2e.id}`, {}, { cluster: listed });

    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    const ours = launched(result.claims).filter((c) => c.nodePool === pool);
    expect(ours.flatMap((c) => c.pods.map((p) => p.name))).toEqual(['victim-1']);
    expect(await e2e.nodeClaimsOf(pool)).toHaveLength(1);
    expect(listed.summaryUse().fromSummary).toBeGreaterThan(0);
    // Said once, with what the API server did not have.
    const said = e2e.logLines.filter((l) => l['message'] === 'plan confirmed against the API server');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ gone: [`node/${phantom}`] });
  });
});
