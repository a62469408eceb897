import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { small } from './scenarios.ts';

// Pods planned onto NodeClaims on their way (recorded in flotilla.io/nominated-pods) are planned
// back onto them first: a Deployment with preferred pod anti-affinity that scales up while its
// first nodes boot gets one new node per new pod, and none again for the pods already planned.

/** `web`: pods of 1 cpu that prefer a node of their own; 3 replicas, then `scaled` at 20 s. */
const spreadWeb = (scaled: number) => `workloads:
  - kind: Deployment
    name: web
    replicas: 3
    scale:
      - at: 20s
        replicas: ${scaled}
    template:
      metadata: { labels: { app: web } }
      spec:
        affinity:
          podAntiAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 100
                podAffinityTerm:
                  topologyKey: kubernetes.io/hostname
                  labelSelector: { matchLabels: { app: web } }
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
`;

const provisioningLaunches = (r: SimulationRecord) =>
  r.decisions.filter((d) => d['decision'] === 'launch' && d['reason'] === 'provisioning');

describe('pods planned onto NodeClaims on their way', () => {
  it('launches one node per web pod while the first three boot, and none again for the pods on their way', async () => {
    // 30 s boots: at 20 s the first three NodeClaims (one web pod each) are still on their way.
    // Consolidation is off, so the cost at the end is the cost of what provisioning launched.
    const r = await simulate(
      parseScenario(
        small({
          disruption: '      disruption: { consolidateAfter: Never }\n',
          workloads: spreadWeb(5),
          duration: '3m',
        }),
      ),
    );
    // Hand calculation: each pod prefers a node without another web pod, and a new node can
    // always honour that, so 5 pods take 5 nodes; the cheapest xlarge of m6i and c6i is the
    // c6i.xlarge at $0.17/h, so the cluster costs 5 × $0.17 = $0.85/h. The 3 pods on their way
    // go back onto their own NodeClaims; planned onto new nodes again they would have made it 8
    // nodes ($1.36/h).
    expect(r.launches.map((l) => l.instanceType)).toEqual(Array(5).fill('c6i.xlarge'));
    expect(r.samples.at(-1)?.costPerHour).toBeCloseTo(5 * 0.17, 6);
    expect(r.samples.at(-1)).toMatchObject({ runningPods: 5, pendingPods: 0 });
    // Every pod was planned once: the runs after the scale-up planned the two new pods only.
    const planned = provisioningLaunches(r).flatMap((d) => d['pods'] as string[]);
    expect(planned).toHaveLength(5);
    expect(new Set(planned).size).toBe(5);
    // Three launches in the first run, two in the run after the scale-up at 20 s, none later.
    const runs = new Map<number, number>();
    for (const d of provisioningLaunches(r))
      runs.set(Number(d['atMs']), (runs.get(Number(d['atMs'])) ?? 0) + 1);
    const [first, ...later] = [...runs.keys()].sort((a, b) => a - b);
    expect([...runs.values()]).toEqual([3, 2]);
    expect((later[0] ?? 0) - (first ?? 0)).toBe(20_000);
  });
});
