// One benchmark case in a fresh process, so peak memory belongs to this case alone and its solve
// is cold (the engine has compiled none of the solver yet); `warmSeconds` is a later solve of the
// same input in the same process.
// Usage: tsx test/bench/case.ts <mix> <pods> <typeSet>; prints one JSON line.
import { solve } from '../../shared/core/index.ts';
import { assignmentLowerBound, lpLowerBound } from './lower-bound.ts';
import { benchInput, loadInstanceTypes, lpInputs, type Mix, type TypeSet } from './workloads.ts';

const [mix, podsArg, typeSet] = process.argv.slice(2) as [Mix, string, TypeSet];
const types = loadInstanceTypes(typeSet);
const input = benchInput(mix, Number(podsArg), types);
const heapBefore = process.memoryUsage().heapUsed;
const rssBefore = process.memoryUsage().rss;
const t0 = performance.now();
const result = solve(input);
const seconds = (performance.now() - t0) / 1000;
const heapAfter = process.memoryUsage().heapUsed;
const costPerHour = result.nodeClaims.reduce((s, c) => s + (c.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
const { demand, shapes, types: lpTypes } = lpInputs(input);
const aggregateBound = lpLowerBound(demand, lpTypes);
const lb0 = performance.now();
const bound = assignmentLowerBound(shapes, lpTypes);
const boundSeconds = (performance.now() - lb0) / 1000;
// Tighter, still valid: no part of a pod may go to a type that cannot host the whole pod.
const wholePodBound = assignmentLowerBound(shapes, lpTypes, { wholePods: true });
const scheduled = result.nodeClaims.reduce((s, c) => s + c.pods.length, 0) + result.placements.length;
// Peak memory of the one cold solve, before the solves below add their own garbage.
const peakRssMiB = (process.resourceUsage().maxRSS * 1024) / 2 ** 20;
// The same input solved again in this process, as a provisioner's warm container solves: by the
// third solve the engine has compiled the solver. The cold solve above is the benchmark's figure.
solve(input);
const w0 = performance.now();
solve(input);
const warmSeconds = (performance.now() - w0) / 1000;
process.stdout.write(
  `${JSON.stringify({
    mix,
    pods: input.pods.length,
    typeSet,
    instanceTypes: types.length,
    seconds,
    warmSeconds,
    podsPerSecond: input.pods.length / seconds,
    nodes: result.nodeClaims.length,
    scheduled,
    unschedulable: result.unschedulable.length,
    costPerHour,
    lowerBound: bound,
    ratio: costPerHour / bound,
    wholePodBound,
    wholePodRatio: costPerHour / wholePodBound,
    aggregateBound,
    aggregateRatio: costPerHour / aggregateBound,
    boundSeconds,
    heapAfterSolveMiB: heapAfter / 2 ** 20,
    heapGrowthMiB: (heapAfter - heapBefore) / 2 ** 20,
    peakRssMiB,
    rssBeforeSolveMiB: rssBefore / 2 ** 20,
  })}\n`,
);
