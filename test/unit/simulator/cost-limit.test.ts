import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainInWorld } from '../../../shared/cli/explain/simulated.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario, parseScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { defaultPoolYaml, web } from './scenarios.ts';

// The cost-limit example: web's NodePool may cost $0.80/h (its flotilla.io/max-cost-per-hour
// annotation) and the cluster $1.40/h (settings.maxCostPerHour). Web grows past its limit at 5m,
// batch arrives at 15m and meets the cluster's, web shrinks at 30m and batch gets the room.

const examples = path.resolve(import.meta.dirname, '../../../examples');
const MINUTE = 60_000;

/** The highest $/h the running instances (of `pool`, or all) reached at any launch. */
function peakCost(r: SimulationRecord, pool?: string): number {
  const gone = new Map(r.terminations.map((t) => [t.nodeClaim, t.atMs]));
  const launches = r.launches.filter((l) => pool === undefined || l.nodePool === pool);
  let peak = 0;
  for (const at of launches.map((l) => l.atMs)) {
    const running = launches.filter(
      (l) => l.atMs <= at && (gone.get(l.nodeClaim) ?? Number.POSITIVE_INFINITY) > at,
    );
    peak = Math.max(
      peak,
      running.reduce((sum, l) => sum + l.pricePerHour, 0),
    );
  }
  return peak;
}

describe('the cost-limit example', () => {
  const record = simulate(loadScenario(path.join(examples, 'cost-limit.yaml')));

  it("never runs past the NodePool's or the cluster's dollar limit, and says which limit pods wait on", async () => {
    const r = await record;
    expect(peakCost(r, 'web')).toBeLessThanOrEqual(0.8);
    expect(peakCost(r)).toBeLessThanOrEqual(1.4);
    // Web reached close to its limit: another node of its cheapest type would have passed it.
    expect(peakCost(r, 'web')).toBeGreaterThan(0.8 - 0.1);
    const waits = r.decisions.filter(
      (d) => d['decision'] === 'unschedulable' && String(d['reason']).includes('dollar limit'),
    );
    const minute = (d: Record<string, unknown>) => (Number(d['atMs']) - r.scenario.startMs) / MINUTE;
    expect(
      waits.some((d) => String(d['reason']).includes('nodePool web: dollar limit $0.8000/h (the NodePool')),
    ).toBe(true);
    expect(
      waits.some((d) =>
        String(d['reason']).includes("dollar limit $1.4000/h (the cluster's maxCostPerHour)"),
      ),
    ).toBe(true);
    expect(Math.min(...waits.map(minute))).toBeGreaterThanOrEqual(5);
    expect(Math.max(...waits.map(minute))).toBeLessThan(35);
    const summary = renderSummary(r);
    expect(summary).toMatch(
      /Dollar limits reached:\n {2}nodePool web \$0\.8000\/h: up to \d+ pods waited, 00:05 to /,
    );
    expect(summary).toMatch(/\n {2}cluster \$1\.4000\/h: up to \d+ pods waited, 00:15 to /);
  });

  it('publishes each limit beside the cost it bounds', async () => {
    const r = await record;
    const points = r.metrics ?? [];
    const poolLimits = points.filter((p) => p.name === 'nodepools_cost_limit');
    expect(new Set(poolLimits.map((p) => `${p.dimensions.nodepool}=${p.values[0]}`))).toEqual(
      new Set(['web=0.8']),
    );
    const clusterLimits = points.filter((p) => p.name === 'cluster_cost_limit');
    expect(clusterLimits.length).toBeGreaterThan(0);
    expect(new Set(clusterLimits.map((p) => p.values[0]))).toEqual(new Set([1.4]));
    // Each limit at the same moments as the NodePools' cost.
    const costTimes = new Set(
      points.filter((p) => p.name === 'karpenter_nodepools_cost_total').map((p) => p.timeMs),
    );
    expect(clusterLimits.every((p) => costTimes.has(p.timeMs))).toBe(true);
  });

  it('launches the pods that waited once consolidation frees room under the limit', async () => {
    const r = await record;
    const batchAfter = r.launches.filter(
      (l) => l.nodePool === 'batch' && (l.atMs - r.scenario.startMs) / MINUTE >= 30,
    );
    expect(batchAfter.length).toBeGreaterThan(0);
    expect(
      r.disruptions.filter((d) => d.reason === 'Empty' || d.reason === 'Underutilized').length,
    ).toBeGreaterThan(0);
    expect(r.unschedulable).toEqual([]);
    expect(r.samples.at(-1)?.pendingPods).toBe(0);
  });
});

/** One NodePool of c6a on-demand under a dollar limit, 7 pods of 1 cpu that shrink to 1 at 10m. */
const shrinking = (limit: string) => `name: cost-limit-consolidation
duration: 25m
${defaultPoolYaml(
  [
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [c6a] }',
  ],
  '      disruption: { consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m }\n',
  '',
  'al2023@latest',
  `{ flotilla.io/max-cost-per-hour: "${limit}" }`,
)}${web(7, '    scale: [{ at: 10m, replicas: 1 }]\n', '"1"')}`;

describe('consolidation under a dollar limit', () => {
  it('counts a replacement with the node it replaces gone, as a resource limit is counted', async () => {
    // 7 pods take a c6a.2xlarge ($0.306/h); at 1 pod, a c6a.large ($0.0765/h) replaces it although
    // both together ($0.3825/h) pass the $0.35/h limit for the minutes the old node drains.
    const r = await simulate(parseScenario(shrinking('0.35')));
    const replaced = r.disruptions.filter((d) => d.reason === 'Underutilized');
    expect(replaced).toHaveLength(1);
    const first = r.launches[0];
    const replacement = r.launches[1];
    expect(first?.pricePerHour).toBeLessThanOrEqual(0.35);
    expect(replacement?.pricePerHour ?? 1).toBeLessThan(first?.pricePerHour ?? 0);
    expect(peakCost(r, 'default')).toBeLessThanOrEqual(0.35 + (replacement?.pricePerHour ?? 0));
    expect(r.samples.at(-1)?.costPerHour).toBeCloseTo(replacement?.pricePerHour ?? 0, 6);
  });
});

describe('flotilla explain under dollar limits', () => {
  it("names the cluster's limit for a pod it holds, and counts no limit without the setting", async () => {
    // The example cut at 20m, before web shrinks: batch's pods wait on the cluster's $1.40/h.
    const text = readFileSync(path.join(examples, 'cost-limit.yaml'), 'utf8')
      .replace('duration: 60m', 'duration: 20m')
      .replace('      - at: 30m\n        replicas: 4\n', '');
    const scenario = parseScenario(text);
    const texts: string[] = [];
    await simulate(scenario, {
      atEnd: async (world) => {
        const pending = (await world.cluster.provisionablePods()).items.find((p) =>
          p.name.startsWith('batch-'),
        );
        if (pending === undefined) throw new Error('no batch pod waits at 20m');
        const target = { kind: 'pod', namespace: pending.namespace, name: pending.name } as const;
        texts.push(await explainInWorld(world, target, scenario.settings));
        texts.push(await explainInWorld(world, target, { ...scenario.settings, maxCostPerHour: 100 }));
      },
    });
    const [held = '', free = ''] = texts;
    expect(held).toContain(
      "\n  - a dollar limit is reached: nodePool batch: dollar limit $1.4000/h (the cluster's maxCostPerHour) leaves room",
    );
    expect(free).not.toContain('dollar limit');
    expect(free).toContain('Flotilla launches a NodeClaim for the pod');
  }, 60_000);
});
