import { describe, expect, it } from 'vitest';
import type { FleetCall } from '../../../shared/adapters/memory/index.ts';
import { CREATE_FLEET_MS, simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { LAUNCH_CONCURRENCY } from '../../../shared/usecases/provisioning/launch-round.ts';
import { defaultPoolYaml } from './scenarios.ts';

// A burst of 1,000 pods that takes 50 NodeClaims: the NodeClaims of one run launch together, so the
// last CreateFleet goes out about when the first does, not after 49 others have been answered.

const burst = (replicas: number, cpu: string) => `name: burst
duration: 5m
bootDelay: 30s
${defaultPoolYaml([
  '{ key: node.kubernetes.io/instance-type, operator: In, values: [m6a.4xlarge] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
])}workloads:
  - kind: Deployment
    name: burst
    replicas: ${replicas}
    template:
      metadata: { labels: { app: burst } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: ${cpu}, memory: 1Gi } }
`;

async function run(replicas: number, cpu: string) {
  let calls: readonly FleetCall[] = [];
  const record = await simulate(parseScenario(burst(replicas, cpu)), {
    atEnd: async ({ cloud }) => {
      calls = cloud.fleetCalls();
    },
  });
  return { record, calls };
}

/** The most CreateFleet calls on the wire at one time. */
function mostAtOnce(calls: readonly FleetCall[]): number {
  const edges = calls.flatMap((c) => [
    { atMs: c.sentAtMs, step: 1 },
    { atMs: c.answeredAtMs, step: -1 },
  ]);
  // An answer at the instant another call is sent frees its place first.
  edges.sort((a, b) => a.atMs - b.atMs || a.step - b.step);
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.step;
    most = Math.max(most, now);
  }
  return most;
}

describe('a burst of pending pods', () => {
  it('sends the CreateFleet calls of one run together', async () => {
    const { record, calls } = await run(1000, '780m');
    // 20 pods of 780m fit an m6a.4xlarge (15.89 cpu allocatable): 50 NodeClaims, each sent once.
    expect(record.launches).toHaveLength(50);
    expect(calls).toHaveLength(50);
    expect(record.samples.at(-1)).toMatchObject({ runningPods: 1000, pendingPods: 0 });
    const startMs = record.scenario.startMs;
    const sent = calls.map((c) => c.sentAtMs - startMs).sort((a, b) => a - b);
    const first = sent[0] as number;
    const last = sent.at(-1) as number;
    // The bound: the last within twice the first's time plus one CreateFleet.
    expect(last).toBeLessThanOrEqual(2 * first + CREATE_FLEET_MS);
    // Sent one after another they would be 49 answers apart.
    expect(last - first).toBeLessThan(CREATE_FLEET_MS);
  });

  it('has at most LAUNCH_CONCURRENCY launches under way at once', async () => {
    // One pod of 10 cpu per m6a.4xlarge: 150 NodeClaims in one run.
    const { record, calls } = await run(150, '10');
    expect(calls).toHaveLength(150);
    expect(record.samples.at(-1)).toMatchObject({ runningPods: 150, pendingPods: 0 });
    expect(mostAtOnce(calls)).toBe(LAUNCH_CONCURRENCY);
  });
});
