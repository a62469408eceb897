import { describe, expect, it } from 'vitest';
import { CREATE_FLEET_MS, simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { defaultPoolYaml } from './scenarios.ts';

// kube-scheduler preempts: a NodePool limited to one m6i.xlarge runs a low-priority batch pod of
// 3 cpu; five minutes in, a Deployment of a higher PriorityClass wants one pod of 3 cpu. No node
// can be launched for it (the limit), so kube-scheduler deletes the batch pod (30 s grace period),
// nominates the node to the web pod, binds it there once the batch pod is gone, and the batch pod
// waits. A PriorityClass with `preemptionPolicy: Never` on the web pod leaves the batch pod alone.

const MINUTE = 60_000;

const scenario = (webPodSpec = '') => `name: preemption
duration: 15m
bootDelay: 45s
priorityClasses:
  - { name: high, value: 1000 }
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  `      limits: { cpu: "4" }\n      disruption: { consolidateAfter: Never }\n`,
)}workloads:
  - kind: Deployment
    name: batch
    replicas: 1
    template:
      metadata: { labels: { app: batch } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: '3', memory: 1Gi } }
  - kind: Deployment
    name: web
    replicas: 0
    scale:
      - { at: 5m, replicas: 1 }
    template:
      metadata: { labels: { app: web } }
      spec:
        priorityClassName: high
${webPodSpec}        containers:
          - name: c
            resources: { requests: { cpu: '3', memory: 1Gi } }
`;

const last = (r: SimulationRecord) => r.samples.at(-1);

/** The world moves on whole seconds. */
const ceilSecond = (ms: number) => Math.ceil(ms / 1000) * 1000;

describe('kube-scheduler preemption', () => {
  it('makes room for a pod of higher priority by deleting one of lower priority', async () => {
    const r = await simulate(parseScenario(scenario(), 'preemption.yaml'));
    // One node only: the NodePool's limit.
    expect(r.launches).toHaveLength(1);
    expect(last(r)).toMatchObject({ nodes: 1, runningPods: 1, pendingPods: 1 });
    // The web pod runs (it waited the batch pod's 30 s grace period), the batch pod waits.
    const web = r.samples.filter((s) => (s.atMs - r.scenario.startMs) / MINUTE >= 6);
    expect(web.every((s) => s.runningPods === 1 && s.pendingPods === 1)).toBe(true);
    // Waits of the pods that started: the batch pod's first (its node's CreateFleet and boot, to the
    // next whole second), then the web pod's, the batch pod's grace period; the batch pod made again
    // waits on.
    expect(r.podWaitsMs).toEqual([ceilSecond(47_000 + CREATE_FLEET_MS), 30_000]);
    expect(r.podWaitsNotStartedMs).toHaveLength(1);
  });

  it('leaves the pods of lower priority alone for a pod that may not preempt', async () => {
    const r = await simulate(parseScenario(scenario('        preemptionPolicy: Never\n'), 'preemption.yaml'));
    expect(last(r)).toMatchObject({ nodes: 1, runningPods: 1, pendingPods: 1 });
    // The batch pod keeps its node; the web pod waits from 5m to the end.
    expect(r.podWaitsMs).toEqual([ceilSecond(47_000 + CREATE_FLEET_MS)]);
    expect(r.podWaitsNotStartedMs).toEqual([10 * MINUTE]);
  });
});
