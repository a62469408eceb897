import type { V1Pod, V1Toleration } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import {
  DEFAULT_TOLERATION_SECONDS,
  NOT_READY_TAINT,
  notReadyTolerationSeconds,
} from '../../../shared/simulator/node-failures.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { defaultPoolYaml } from './scenarios.ts';

// A kubelet that stops reporting Ready five minutes in: the node lifecycle controller taints it
// not-ready:NoExecute and its pod is deleted when its toleration (300 s, the admission default)
// runs out, ten minutes in, and runs again on a new node. With node repair on, the garbage
// collector's pass also replaces the NotReady node 30 minutes after it failed (within its 2-minute
// schedule); with it off (the default), the NotReady node stays, empty.

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

  const evictions = (r: SimulationRecord) =>
    r.decisions.filter((d) => d['message'] === 'pod evicted from a NotReady node');

  it('has its pod evicted when the toleration runs out, and run again on a new node', async () => {
    for (const r of [await on, await off]) {
      expect(r.launches.filter((l) => minutes(r, l.atMs) < 5)).toHaveLength(3);
      const [evicted, ...others] = evictions(r);
      expect(others).toEqual([]);
      expect(evicted).toMatchObject({ tolerationSeconds: 300 });
      expect(minutes(r, Number(evicted?.['atMs']))).toBe(10);
      // Its replacement launches at once.
      const after = r.launches.filter((l) => minutes(r, l.atMs) >= 10);
      expect(after).toHaveLength(1);
      expect(minutes(r, after[0]?.atMs ?? 0)).toBeLessThan(11);
      expect(r.samples.at(-1)).toMatchObject({ runningPods: 3, pendingPods: 0 });
    }
  });

  it('is replaced 30 minutes later with node repair on, empty by then', async () => {
    const r = await on;
    const [replace, ...rest] = repairs(r);
    expect(rest).toEqual([]);
    expect(replace).toMatchObject({
      action: 'replace',
      cause: 'Ready=False',
      nodePool: 'default',
      // What Karpenter's unhealthy-disrupted series is labelled by.
      conditionType: 'Ready',
      capacityType: expect.stringMatching(/^(spot|on-demand)$/),
    });
    const at = minutes(r, Number(replace?.['atMs']));
    expect(at).toBeGreaterThanOrEqual(35);
    expect(at).toBeLessThanOrEqual(37);
    expect(r.terminations).toEqual([
      expect.objectContaining({ nodeClaim: replace?.['nodeClaim'], reason: 'unhealthy' }),
    ]);
    // Its pod already runs elsewhere: nothing launches for the repair.
    expect(r.launches.filter((l) => minutes(r, l.atMs) >= at)).toHaveLength(0);
    expect(r.samples.at(-1)).toMatchObject({ nodes: 3, runningPods: 3, pendingPods: 0 });
  });

  it('stays with node repair off (the default)', async () => {
    const r = await off;
    expect(repairs(r)).toEqual([]);
    expect(r.terminations).toEqual([]);
    // The three it launched first and the evicted pod's new node; the NotReady one stays, empty.
    expect(r.launches).toHaveLength(4);
    expect(r.samples.at(-1)).toMatchObject({ nodes: 4, runningPods: 3 });
  });
});

describe('how long a pod stays on a NotReady node', () => {
  const pod = (tolerations?: V1Toleration[]): V1Pod => ({
    spec: { containers: [], ...(tolerations === undefined ? {} : { tolerations }) },
  });
  it('is the admission default for a pod that states no toleration of the taint', () => {
    expect(notReadyTolerationSeconds(pod())).toBe(DEFAULT_TOLERATION_SECONDS);
    // A toleration of the key for another effect is not one of the NoExecute taint.
    expect(
      notReadyTolerationSeconds(
        pod([{ key: NOT_READY_TAINT.key, operator: 'Exists', effect: 'NoSchedule' }]),
      ),
    ).toBe(300);
  });

  it("is the pod's own limit, or for ever without one (a DaemonSet's)", () => {
    expect(
      notReadyTolerationSeconds(
        pod([{ key: NOT_READY_TAINT.key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }]),
      ),
    ).toBe(60);
    expect(
      notReadyTolerationSeconds(pod([{ key: NOT_READY_TAINT.key, operator: 'Exists', effect: 'NoExecute' }])),
    ).toBeUndefined();
    // Tolerating every taint.
    expect(notReadyTolerationSeconds(pod([{ operator: 'Exists' }]))).toBeUndefined();
  });
});
