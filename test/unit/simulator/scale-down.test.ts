import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';

// One big node left after a scale-down (40 replicas of 1 cpu / 2 GiB to 4, or 24 to 6 on spot):
// consolidation takes the cluster to about what a fresh start with the replicas left costs.

/** A c6a NodePool of `capacityType`, minimum savings 10%; `replicas` web pods, scaled at 10m. */
const scenario = (capacityType: string, replicas: number, scaleTo?: number) => `name: scale-down
duration: 45m
bootDelay: 30s
ec2NodeClasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: { name: default }
    spec: { role: R, amiSelectorTerms: [{ alias: al2023@latest }], subnetSelectorTerms: [{ tags: { k: v } }], securityGroupSelectorTerms: [{ tags: { k: v } }] }
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: default, annotations: { flotilla.io/consolidation-min-savings: "10%" } }
    spec:
      template:
        spec:
          nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
          requirements:
            - { key: karpenter.sh/capacity-type, operator: In, values: [${capacityType}] }
            - { key: karpenter.k8s.aws/instance-family, operator: In, values: [c6a] }
workloads:
  - kind: Deployment
    name: web
    replicas: ${replicas}
${scaleTo === undefined ? '' : `    scale: [{ at: 10m, replicas: ${scaleTo} }]\n`}    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1", memory: 2Gi } }
`;

const last = (r: SimulationRecord) => r.samples[r.samples.length - 1];

describe.each([
  ['on-demand', 40, 4],
  ['spot', 24, 6],
] as const)('a scale-down to one part-full node (%s, %i → %i replicas)', (capacityType, from, to) => {
  it('ends within 1.10× of the cost of a fresh start, every pod running', async () => {
    const [scaled, fresh] = await Promise.all([
      simulate(parseScenario(scenario(capacityType, from, to))),
      simulate(parseScenario(scenario(capacityType, to))),
    ]);
    // Before the scale-down the replicas filled a large node (and emptiness took the rest).
    const peak = Math.max(...scaled.samples.map((s) => s.costPerHour));
    const freshCost = last(fresh)?.costPerHour ?? 0;
    expect(freshCost).toBeGreaterThan(0);
    expect(peak).toBeGreaterThan(2 * freshCost);
    expect(last(scaled)).toMatchObject({ runningPods: to, pendingPods: 0 });
    expect(last(scaled)?.costPerHour).toBeLessThanOrEqual(1.1 * freshCost);
    // It got there by consolidation, not by emptiness alone.
    const consolidated = scaled.decisions.filter(
      (d) => d['decision'] === 'disrupt' && d['reason'] === 'Underutilized' && d['outcome'] === 'deleted',
    );
    expect(consolidated.length).toBeGreaterThan(0);
  });
});
