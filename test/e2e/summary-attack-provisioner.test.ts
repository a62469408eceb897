import { describe, expect, it } from 'vitest';
import { forgeSummary, honestSummary, summaryCluster, tampered } from '../harness/summary-attack.ts';
import { GROUP_LABEL, launched, ProvisionerE2E, RUN_LABEL } from './provisioner-fixture.ts';

// An attacker holding the shim's role publishes the cluster summary an honest shim would, plus one
// Ready Node of 100,000 CPUs that does not exist (the labels of a NodePool's nodes, the providerID
// of no instance). The provisioner Lambda reads its Nodes from that summary; a pending pod is left
// to existing capacity only when the API server confirms the Node, so the pod still gets a launch.

const e2e = new ProvisionerE2E('summary-attack-prov');

/** A Node as a kubelet of the pool would register it, with 100,000 CPUs, and no instance behind it. */
function phantomNode(name: string, pool: string, group: string) {
  return {
    metadata: {
      name,
      uid: '6f1c2f4e-0000-4000-8000-00000000beef',
      creationTimestamp: new Date().toISOString(),
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'karpenter.sh/nodepool': pool,
        'karpenter.sh/capacity-type': 'on-demand',
        'karpenter.sh/registered': 'true',
        'karpenter.sh/initialized': 'true',
        'node.kubernetes.io/instance-type': 'm5.large',
        'topology.kubernetes.io/zone': 'us-east-1a',
        [RUN_LABEL]: e2e.id,
        [GROUP_LABEL]: group,
      },
    },
    spec: {
      providerID: 'aws:///us-east-1a/i-0deadbeefdeadbeef',
      taints: [{ key: RUN_LABEL, value: e2e.id, effect: 'NoSchedule' }],
    },
    status: {
      capacity: { cpu: '100000', memory: '400000Gi', pods: '110' },
      allocatable: { cpu: '100000', memory: '400000Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
    },
  };
}

describe('the provisioner with a forged cluster summary', () => {
  it('launches for a pending pod although the summary shows a Ready Node of 100,000 CPUs that does not exist', async () => {
    const pool = await e2e.createPool('attack', 'attack', { instanceTypes: ['m5.large', 'm5.xlarge'] });
    await e2e.createPod('attack', 'victim', 'victim-1', '1');
    const { server, kc, cluster } = e2e.env;
    const phantom = `phantom-${e2e.id}`;
    await forgeSummary(
      server,
      tampered(await honestSummary(kc), (doc) => {
        doc.head.nodes.push(phantomNode(phantom, pool, 'attack'));
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
