// The single-candidate consolidation case in a fresh process. Usage:
//   tsx test/bench/consolidation-single.ts <on-demand|spot> [minSavings] [repack|karpenter]
// (repack, the default, runs with the stack's repackConsolidation on; karpenter with it off).
// One c6a NodePool; a Deployment of (1 cpu, 2 GiB) pods (40 on-demand, 24 spot) scaled at 10
// minutes to 4 (on-demand) or 6 (spot): emptiness takes the nodes left empty and one large node
// is left with those pods. The simulator runs Flotilla's controllers for 90 virtual minutes; the
// same scenario started with the replicas left is the fresh start it is compared with. The last
// stdout line is the JSON result.
import { simulate } from '../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../shared/simulator/record.ts';
import { parseScenario } from '../../shared/simulator/scenario.ts';
import { scaleDownScenario } from './scale-down-scenario.ts';

const [capacityArg = 'on-demand', minSavings = '10%', methodsArg = 'repack'] = process.argv.slice(2);
if (methodsArg !== 'repack' && methodsArg !== 'karpenter') {
  throw new Error(`methods "${methodsArg}": use repack or karpenter`);
}
const repack = methodsArg === 'repack';
if (capacityArg !== 'on-demand' && capacityArg !== 'spot') {
  throw new Error(`capacity type "${capacityArg}": use on-demand or spot`);
}
const capacityType = capacityArg;
const [replicas, scaleTo] = capacityType === 'spot' ? [24, 6] : [40, 4];
// A spot node is replaced by spot only with spot-to-spot consolidation on (off by default).
const spotToSpot = capacityType === 'spot';
const SCALE_AT_MS = 10 * 60_000;

const started = performance.now();
const scaled = await simulate(
  parseScenario(
    scaleDownScenario({ capacityType, replicas, scaleTo, minSavings, duration: '90m', spotToSpot, repack }),
  ),
);
const wallSeconds = (performance.now() - started) / 1000;
const fresh = await simulate(
  parseScenario(
    scaleDownScenario({ capacityType, replicas: scaleTo, minSavings, duration: '90m', spotToSpot, repack }),
  ),
);

const last = (r: SimulationRecord) => r.samples[r.samples.length - 1];
const sinceScale = (atMs: unknown) => (Number(atMs) - scaled.scenario.startMs - SCALE_AT_MS) / 60_000;
const carried = scaled.decisions.filter((d) => d['decision'] === 'disrupt' && d['outcome'] === 'deleted');
const consolidated = carried.filter((d) => d['reason'] === 'Underutilized');
const byMethod: Record<string, number> = {};
for (const d of carried) byMethod[String(d['method'])] = (byMethod[String(d['method'])] ?? 0) + 1;
// The cost once emptiness has taken the empty nodes, before the first consolidation command.
const firstConsolidationMs = Number(consolidated[0]?.['atMs'] ?? Number.POSITIVE_INFINITY);
const beforeSample = [...scaled.samples].reverse().find((s) => s.atMs < firstConsolidationMs);
const costAfter = last(scaled)?.costPerHour ?? Number.NaN;
const freshCost = last(fresh)?.costPerHour ?? Number.NaN;
process.stdout.write(
  `${JSON.stringify({
    capacityType,
    minSavings,
    replicas,
    scaleTo,
    costPeak: scaled.samples.reduce((most, s) => Math.max(most, s.costPerHour), 0),
    costBefore: beforeSample?.costPerHour ?? Number.NaN,
    costAfter,
    freshCost,
    ratioFresh: costAfter / freshCost,
    nodesAfter: last(scaled)?.nodes,
    freshNodes: last(fresh)?.nodes,
    runningPods: last(scaled)?.runningPods,
    pendingPods: last(scaled)?.pendingPods,
    commands: byMethod,
    consolidation: consolidated.map((d) => ({
      method: d['method'],
      minutesAfterScale: sinceScale(d['atMs']),
      before: d['pricePerHourBefore'],
      after: d['pricePerHourAfter'],
    })),
    unconsolidatableLines: scaled.decisions.filter((d) => d['decision'] === 'unconsolidatable').length,
    disruptionPasses: scaled.decisions.filter((d) => d['decision'] === 'disruptionPass').length,
    wallSeconds,
  })}\n`,
);
