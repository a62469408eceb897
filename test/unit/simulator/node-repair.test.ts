import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { defaultPoolYaml } from './scenarios.ts';

// A kubelet that stops reporting Ready five minutes in: with node repair on, the garbage
// collector's pass replaces the node 30 minutes later (within its 2-minute schedule) and the pods
// run again on a new one; with it off (the default), the NotReady node stays.

const MINUTE = 60_000;

const scenario = (nodeRepair: boolean | undefined) => `name: node-not-ready
duration: 45m
bootDelay: 45s
${nodeRepair === undefined ? '' : `settings:\n  nodeRepair: ${nodeRepair}\n`}${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  `      disruption: { consolidateAfter: Never }\n`,
)}workloads:
  - kind: Deployment
    name: web
    replicas: 3
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: '3', memory: 1Gi } }
events:
  - { kind: NodeNotReady, at: 5m, nodePool: default }
`;

const minutes = (r: SimulationRecord, atMs: number) => (atMs - r.scenario.startMs) / MINUTE;
const repairs = (r: SimulationRecord) => r.decisions.filter((d) => d['decision'] === 'repair');

describe('a node whose kubelet reports NotReady', () => {
  const on = simulate(parseScenario(scenario(true), 'node-not-ready.yaml'));
  const off = simulate(parseScenario(scenario(undefined), 'node-not-ready.yaml'));

  it('is replaced 30 minutes later with node repair on, and the pods run again', async () => {
    const r = await on;
    expect(r.launches.filter((l) => minutes(r, l.atMs) < 5)).toHaveLength(3);
    const [replace, ...rest] = repairs(r);
    expect(rest).toEqual([]);
    expect(replace).toMatchObject({ action: 'replace', cause: 'Ready=False', nodePool: 'default' });
    const at = minutes(r, Number(replace?.['atMs']));
    expect(at).toBeGreaterThanOrEqual(35);
    expect(at).toBeLessThanOrEqual(37);
    expect(r.terminations).toEqual([
      expect.objectContaining({ nodeClaim: replace?.['nodeClaim'], reason: 'unhealthy' }),
    ]);
    // Its replacement was launched after the repair, and every pod runs at the end.
    expect(r.launches.filter((l) => minutes(r, l.atMs) >= at)).toHaveLength(1);
    expect(r.samples.at(-1)).toMatchObject({ nodes: 3, runningPods: 3, pendingPods: 0 });
  });

  it('stays with node repair off (the default)', async () => {
    const r = await off;
    expect(repairs(r)).toEqual([]);
    expect(r.terminations).toEqual([]);
    expect(r.launches).toHaveLength(3);
    expect(r.samples.at(-1)).toMatchObject({ nodes: 3 });
  });
});
