import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../../shared/adapters/memory/index.ts';
import { simulate } from '../../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../../shared/simulator/scenario.ts';
import { defaultPoolYaml } from '../../simulator/scenarios.ts';

// The Events of a `Balanced` NodePool over a simulated run, as the disruption controller records
// them: a node whose pods one node half its price can take is replaced, with ConsolidationApproved
// and the score on its Node and NodeClaim.

const pod = (name: string, cpu: string, scale = '') => `  - kind: Deployment
    name: ${name}
    replicas: 1
${scale}    template:
      metadata: { labels: { app: ${name} } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "${cpu}" } }
`;

const text = `name: balanced
duration: 8m
bootDelay: 30s
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [large, xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  '      disruption: { consolidationPolicy: Balanced, consolidateAfter: 0s }\n',
)}workloads:
${pod('web', '3', '    scale: [{ at: 2m, replicas: 0 }]\n')}${pod('small', '500m')}`;

describe('Balanced consolidation Events over a simulated run', () => {
  it('a replace the score approves: ConsolidationCandidate and ConsolidationApproved on the Node and NodeClaim', async () => {
    let events: readonly StoredEvent[] = [];
    await simulate(parseScenario(text), {
      atEnd: async (world) => {
        events = world.cluster.events();
      },
    });
    const of = (reason: string) =>
      events.filter((e) => e.event.reason === reason).map((e) => e.event.subject.kind);
    expect(of('ConsolidationCandidate').sort()).toEqual(['Node', 'NodeClaim']);
    expect(of('ConsolidationApproved').sort()).toEqual(['Node', 'NodeClaim']);
    const approved = events.find((e) => e.event.reason === 'ConsolidationApproved');
    // The xlarge node's one pod moves to a large node at half its price: half the NodePool's
    // $/hour saved for all of its disruption (1 node + 1 pod).
    expect(approved?.event.message).toBe(
      "Consolidation may replace with 1 cheaper NodeClaim: Balanced score 0.50 reaches the threshold 0.50 (k 2): it saves 50.0% of the NodePool's $/hour for 100.0% of its disruption",
    );
    expect(of('DisruptionTerminating').sort()).toEqual(['Node', 'NodeClaim']);
  }, 60_000);
});
