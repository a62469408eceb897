import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { small, web } from './scenarios.ts';

// Pod waits come from events: creation to binding for the pods that got a node, creation to the
// end for the ones still waiting, which the percentiles count too.

describe('pod waits', () => {
  it('counts a pod that never got a node with its wait so far', async () => {
    // Two pods of 3 cpu run on xlarge nodes; a third of 30 cpu fits no type the NodePool allows.
    const text = small({ workloads: web(2), duration: '10m' }).concat(`  - kind: Deployment
    name: huge
    replicas: 1
    template:
      metadata: { labels: { app: huge } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "30" } }
`);
    const record = await simulate(parseScenario(text));
    expect(record.podWaitsMs).toHaveLength(2);
    for (const wait of record.podWaitsMs) expect(wait).toBeGreaterThan(0);
    expect(record.podWaitsNotStartedMs).toEqual([10 * 60_000]);
    expect(record.unschedulable.map((p) => p.name)).toEqual(['huge-00001']);
    expect(renderSummary(record)).toContain(
      'Pod wait (3 pods, creation to binding; 1 not started by the end, counted with their wait so far): ',
    );
  });
});
