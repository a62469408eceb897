import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { small, web } from './scenarios.ts';

/** A Deployment of one pod of 30 cpu, which fits no type the small scenario's NodePool allows. */
const HUGE = `  - kind: Deployment
    name: huge
    replicas: 1
    template:
      metadata: { labels: { app: huge } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "30" } }
`;

// Pod waits come from events: creation to binding for the pods that got a node, creation to the
// end for the ones still waiting, which the percentiles count too.

describe('pod waits', () => {
  it('counts a pod that never got a node with its wait so far', async () => {
    // Two pods of 3 cpu run on xlarge nodes; a third of 30 cpu fits no type the NodePool allows.
    const text = small({ workloads: web(2), duration: '10m' }).concat(HUGE);
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

describe('a pod no NodePool can take', () => {
  it('is looked at again once a minute while the world waits with it', async () => {
    // Two pods of 3 cpu run; a third of 30 cpu waits all hour, and nothing else moves meanwhile.
    const text = small({ workloads: web(2), duration: '1h' }).concat(HUGE);
    const record = await simulate(parseScenario(text));
    const told = record.decisions
      .filter((d) => d['decision'] === 'unschedulable')
      .map((d) => Number(d['atMs']));
    // Its first look, as the pod arrives (the batch window over), then the provisioner's schedule:
    // a minute from the start of the run before, to the end of the hour.
    const start = record.scenario.startMs;
    expect(told[0]).toBe(start + 2_500);
    expect(told.slice(1)).toEqual(Array.from({ length: 59 }, (_, i) => start + 1_000 + (i + 1) * 60_000));
    expect(record.podWaitsNotStartedMs).toEqual([60 * 60_000]);
    expect(record.samples.at(-1)).toMatchObject({ runningPods: 2, pendingPods: 1 });
  });
});
