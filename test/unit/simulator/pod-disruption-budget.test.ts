import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario, parseScenario } from '../../../shared/simulator/scenario.ts';

// PodDisruptionBudgets hold in the simulator: the drains that rotate nodes never take more of a
// Deployment's pods away than its budget's maxUnavailable, counted against the Deployment's
// replicas (not against the pods left).

const examples = path.resolve(import.meta.dirname, '../../../examples');
const MINUTE = 60_000;
const at = (record: SimulationRecord, atMs: unknown) => ((atMs as number) - record.scenario.startMs) / MINUTE;
const evictions = (r: SimulationRecord) =>
  r.decisions.filter((d) => d['decision'] === 'drain' && d['action'] === 'evict');
const unavailable = (r: SimulationRecord, from: number, until: number) =>
  r.samples
    .filter((s) => at(r, s.atMs) >= from && at(r, s.atMs) < until)
    .map((s) => s.unavailablePods?.['default/web']);

/** Six small pods of one Deployment on one xlarge node that expires after 10 minutes. */
const expiringNode = `name: pdb-expiry
duration: 30m
sampleInterval: 5s
bootDelay: 45s
ec2NodeClasses:
  - { apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, metadata: { name: default }, spec: { role: R, amiSelectorTerms: [{ alias: al2023@latest }], subnetSelectorTerms: [{ tags: { k: v } }], securityGroupSelectorTerms: [{ tags: { k: v } }] } }
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: default }
    spec: { template: { spec: { nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }, expireAfter: 10m, requirements: [{ key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge] }, { key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }] } } }
workloads:
  - kind: Deployment
    name: web
    replicas: 6
    disruptionBudget: { maxUnavailable: 1 }
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: 500m } }
`;

describe('PodDisruptionBudgets in the simulator', () => {
  it('rotates an expiring node one pod at a time under maxUnavailable: 1', async () => {
    const r = await simulate(parseScenario(expiringNode));
    const expired = r.disruptions.filter((d) => d.reason === 'Expired');
    expect(expired.length).toBeGreaterThanOrEqual(1);
    // The first node went, and its pods all ran again on the nodes that followed.
    expect(r.terminations.map((t) => t.nodeClaim)).toContain(r.launches[0]?.nodeClaim);
    expect(r.unschedulable).toEqual([]);
    // Once the six pods first ran, no sample (every 5 s) finds more than one of them unavailable.
    const settled = r.samples.findIndex((s) => s.unavailablePods?.['default/web'] === 0);
    expect(settled).toBeGreaterThanOrEqual(0);
    const after = r.samples.slice(settled).map((s) => s.unavailablePods?.['default/web'] ?? Number.NaN);
    expect(Math.max(...after)).toBe(1);
    // Each drain step evicts at most one of them.
    const steps = evictions(r);
    expect(steps.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...steps.map((d) => Number(d['evicted'])))).toBe(1);
  });

  it('keeps the drift-rollout example within its budget of maxUnavailable: 2', async () => {
    const r = await simulate(loadScenario(path.join(examples, 'drift-rollout.yaml')));
    expect(r.disruptions.filter((d) => d.reason === 'Drifted').length).toBeGreaterThanOrEqual(4);
    const steps = evictions(r).filter((d) => at(r, d['atMs']) < 40);
    expect(steps.length).toBeGreaterThan(0);
    expect(Math.max(...steps.map((d) => Number(d['evicted'])))).toBeLessThanOrEqual(2);
    expect(Math.max(...unavailable(r, 2, 40).map((u) => u ?? Number.NaN))).toBeLessThanOrEqual(2);
  });
});
