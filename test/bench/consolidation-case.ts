// One consolidation benchmark case in a fresh process. Usage:
//   tsx test/bench/consolidation-case.ts <pods> <400|catalog> [maxVirtualHours] [minSavings] [repack|karpenter]
//     [--scoring=LeastAllocated|MostAllocated]
// (minSavings, e.g. `0%`, sets the NodePool's flotilla.io/consolidation-min-savings annotation;
// repack, the default, runs with the stack's repackConsolidation on, karpenter with it off;
// --scoring is the simulated kube-scheduler's strategy, which Flotilla is told as the stack's
// kubeSchedulerScoring, LeastAllocated by default).
// Progress goes to stderr; the last stdout line is the JSON result.
//
// A cluster left behind by a scale-down: `pods` plain-requests pods (one single-replica
// ReplicaSet each, so every pod comes back elsewhere when evicted) are provisioned by the real
// provisioner; then 70% of them, chosen at random, are deleted, and Flotilla's controllers
// (provisioner, lifecycle, termination, disruption every virtual minute, as the simulator wires
// them in shared/simulator/controllers.ts) run on the in-memory cluster and cloud until
// consolidation converges. The world around them (kubelets, kube-scheduler) is the simulator's.
// The disruption controller is not run while the pods are first placed, so the cluster being
// consolidated is the provisioner's packing of all the pods minus the ones removed.
import type { V1Pod } from '@kubernetes/client-node';
import {
  bundledCatalog,
  bundledCatalogRecords,
  makeMemoryCloud,
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../../shared/adapters/memory/index.ts';
import { parseEC2NodeClass, toPod } from '../../shared/apis/index.ts';
import {
  DEFAULT_FIT_SCORING,
  FIT_SCORINGS,
  type InstanceType,
  instanceTypesFromCatalog,
  isFitScoring,
  Label,
  type Pod,
  type SolveInput,
  solve,
} from '../../shared/core/index.ts';
import { makeManualClock } from '../../shared/ports/clock.ts';
import { makeControllers } from '../../shared/simulator/controllers.ts';
import { makeDecisionRecorder } from '../../shared/simulator/decision-recorder.ts';
import { makeKube } from '../../shared/simulator/kube.ts';
import { isActive, rawPods, uidOf } from '../../shared/simulator/workloads.ts';
import { MIN_SAVINGS_ANNOTATION } from '../../shared/usecases/disruption/consolidation.ts';
import { type DisruptionMethodName, METHOD_NAMES } from '../../shared/usecases/disruption/methods.ts';
import { ec2NodeClass } from '../fixtures/node-classes.ts';
import { assignmentLowerBound } from './lower-bound.ts';
import { lpInputs, PLAIN_SHAPES, rng } from './workloads.ts';

const SCORING_FLAG = '--scoring=';
const scoringArg = process.argv.find((a) => a.startsWith(SCORING_FLAG))?.slice(SCORING_FLAG.length);
const [podsArg = '1000', typeSet = '400', hoursArg = '12', minSavingsArg, methodsArg = 'repack'] =
  process.argv.slice(2).filter((a) => !a.startsWith(SCORING_FLAG));
if (methodsArg !== 'repack' && methodsArg !== 'karpenter') {
  throw new Error(`methods "${methodsArg}": use repack or karpenter`);
}
const scoring = scoringArg ?? DEFAULT_FIT_SCORING;
if (!isFitScoring(scoring)) throw new Error(`scoring "${scoring}": use ${FIT_SCORINGS.join(' or ')}`);
const podCount = Number(podsArg);
const maxVirtualMs = Number(hoursArg) * 3_600_000;
const REMOVED = 0.7;
const REGION = 'us-east-1';
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const START_MS = Date.parse('2026-01-01T00:00:00Z');
const TICK_MS = 1000;
const SLOT_LABEL = 'bench.flotilla.dev/slot';
const progress = (message: string) => process.stderr.write(`[${podCount}×${typeSet}] ${message}\n`);

// --- the cluster ---------------------------------------------------------------------------------

const clock = makeManualClock(new Date(START_MS));
const nowMs = () => clock.now().getTime();
const recorder = makeDecisionRecorder({ clock });
const cluster = makeMemoryCluster({ clock });
const cloud = makeMemoryCloud({
  clock,
  clusterName: 'bench',
  catalog: bundledCatalog(REGION, ZONES),
  bootDelayMs: 45_000,
});
const terminationQueue = makeMemoryTerminationQueue(clock);

// 400 types spread evenly over the name-sorted catalog, as the scheduling benchmark picks them.
const sortedNames = bundledCatalogRecords()
  .map((r) => r.name)
  .sort();
const typeNames =
  typeSet === 'catalog'
    ? undefined
    : Array.from(
        { length: 400 },
        (_, i) => sortedNames[Math.floor((i * sortedNames.length) / 400)] as string,
      );

cluster.create(ec2NodeClass('default', { role: 'KarpenterNodeRole-bench' }, { discovery: 'bench' }));
// Karpenter's defaults for spec.disruption: WhenEmptyOrUnderutilized, consolidateAfter 0s,
// budget 10% of nodes.
cluster.create({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: {
    name: 'default',
    ...(minSavingsArg === undefined ? {} : { annotations: { [MIN_SAVINGS_ANNOTATION]: minSavingsArg } }),
  },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [
          { key: Label.capacityType, operator: 'In', values: ['on-demand'] },
          ...(typeNames === undefined
            ? []
            : [{ key: Label.instanceType, operator: 'In', values: typeNames }]),
        ],
      },
    },
  },
});

// --- the workloads: one single-replica ReplicaSet per pod ----------------------------------------

const rand = rng(7);
const slots = Array.from({ length: podCount }, (_, i) => {
  const [cpu, memory] = PLAIN_SHAPES[Math.floor(rand() * PLAIN_SHAPES.length)] as [string, string];
  return { slot: i, cpu, memory, wanted: true, generation: 0 };
});
let recreated = 0;

function createPod(s: (typeof slots)[number]): void {
  const name = `pod-${String(s.slot).padStart(5, '0')}-${s.generation}`;
  s.generation += 1;
  cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: { app: `plain-${s.slot % 20}`, [SLOT_LABEL]: String(s.slot) },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `rs-${s.slot}`,
          uid: `rs-${s.slot}`,
          controller: true,
        },
      ],
    },
    spec: {
      containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: s.cpu, memory: s.memory } } }],
    },
  });
}

/** The ReplicaSet controllers: a wanted slot without an active pod gets a new one. */
function stepReplicaSets(): void {
  const present = new Set<number>();
  for (const p of rawPods(cluster)) {
    if (isActive(p)) present.add(Number(p.metadata?.labels?.[SLOT_LABEL]));
  }
  for (const s of slots) {
    if (!s.wanted || present.has(s.slot)) continue;
    if (s.generation > 0) recreated += 1;
    createPod(s);
  }
}

// --- the controllers and the loop ----------------------------------------------------------------

let sleepingWallMs = 0;
/** Cpu time this process spent, in ms (user and system): unlike wall time, not lengthened by other work. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
let sleepingCpuMs = 0;
const kube = makeKube(cluster, cloud, nowMs, () => {}, { scoringStrategy: scoring });
async function stepWorld(): Promise<void> {
  stepReplicaSets();
  await kube.kubelets();
  await kube.schedule();
}
async function sleep(ms: number): Promise<void> {
  const started = performance.now();
  const startedCpu = cpuMs();
  for (let waited = 0; waited < ms; waited += TICK_MS) {
    clock.advance(Math.min(TICK_MS, ms - waited));
    await stepWorld();
  }
  sleepingWallMs += performance.now() - started;
  sleepingCpuMs += cpuMs() - startedCpu;
}
const controllers = makeControllers({
  clock,
  cluster,
  cloud,
  logger: recorder.logger,
  metrics: recorder.metrics,
  leases: makeMemoryLeaseStore(),
  resolver: makeMemoryNodeClassResolver({ zones: ZONES }),
  terminationQueue,
  inbox: [],
  sleep,
  repackConsolidation: methodsArg === 'repack',
  kubeSchedulerScoring: scoring,
});
await controllers.controllersPass(clock.now());

const prices = new Map<string, number>();
for (const t of instanceTypesFromCatalog(bundledCatalogRecords(), {
  region: REGION,
  zones: ZONES,
  capacityTypes: ['on-demand'],
})) {
  for (const o of t.offerings) prices.set(`${t.name}/${o.zone}/${o.capacityType}`, o.priceUsdPerHour);
}
async function costPerHour(): Promise<{ nodes: number; costPerHour: number }> {
  let cost = 0;
  let nodes = 0;
  for (const i of await cloud.list()) {
    if (i.state !== 'pending' && i.state !== 'running') continue;
    nodes += 1;
    cost += prices.get(`${i.instanceType}/${i.zone}/${i.capacityType}`) ?? Number.NaN;
  }
  return { nodes, costPerHour: cost };
}

async function idle(): Promise<boolean> {
  const pods = rawPods(cluster);
  if (pods.some((p) => isActive(p) && !p.spec?.nodeName)) return false;
  if (pods.some((p) => p.metadata?.deletionTimestamp !== undefined)) return false;
  for (const i of await cloud.list()) {
    if ((i.state === 'pending' || i.state === 'running') && !kube.registered(i.providerId)) return false;
  }
  return true;
}

const passes: { wallMs: number; cpuMs: number; commands: number; candidates: number }[] = [];

/** Runs the loop until `done` or the virtual deadline; the disruption controller only if asked. */
async function runUntil(
  done: () => Promise<boolean>,
  withDisruption: boolean,
  deadlineMs: number,
): Promise<void> {
  while (nowMs() < deadlineMs) {
    await stepWorld();
    for (const controller of controllers.all) {
      if (controller.name !== 'disruption') {
        await controller.run(clock.now());
        continue;
      }
      if (!withDisruption) continue;
      const before = recorder.entries.length;
      const sleptBefore = sleepingWallMs;
      const sleptCpuBefore = sleepingCpuMs;
      const started = performance.now();
      const startedCpu = cpuMs();
      await controller.run(clock.now());
      const wallMs = performance.now() - started - (sleepingWallMs - sleptBefore);
      const passCpuMs = cpuMs() - startedCpu - (sleepingCpuMs - sleptCpuBefore);
      const pass = recorder.entries.slice(before).find((e) => e['decision'] === 'disruptionPass');
      if (pass !== undefined) {
        passes.push({
          wallMs,
          cpuMs: passCpuMs,
          commands: Number(pass['commands'] ?? 0),
          candidates: Number(pass['candidates'] ?? 0),
        });
      }
    }
    if (await done()) return;
    if (await idle()) {
      const due = controllers.wakeTimes().filter((t) => t > nowMs());
      const next = withDisruption ? Math.min(...due) : nowMs() + TICK_MS;
      clock.set(new Date(Math.max(nowMs() + TICK_MS, Number.isFinite(next) ? next : nowMs() + TICK_MS)));
    } else {
      clock.advance(TICK_MS);
    }
  }
}

const wall0 = performance.now();
// Phase 1: every pod placed by the provisioner, no disruption.
await runUntil(
  async () => (await idle()) && rawPods(cluster).filter((p) => p.spec?.nodeName).length === podCount,
  false,
  START_MS + 3_600_000,
);
const placed = await costPerHour();
if (process.env['BENCH_DEBUG'])
  for (const e of recorder.entries.slice(0, 40)) progress(JSON.stringify(e).slice(0, 400));
if (placed.nodes === 0)
  throw new Error('no node was launched for the pods; run with BENCH_DEBUG=1 to see why');
progress(
  `placed ${podCount} pods on ${placed.nodes} nodes, $${placed.costPerHour.toFixed(2)}/h, ${((performance.now() - wall0) / 1000).toFixed(1)} s`,
);

// Phase 2: 70% of the pods removed at random (their ReplicaSets scaled to 0).
const order = slots.map((s) => ({ s, key: rand() })).sort((a, b) => a.key - b.key);
const removed = new Set(order.slice(0, Math.round(REMOVED * podCount)).map((x) => x.s.slot));
for (const s of slots) if (removed.has(s.slot)) s.wanted = false;
for (const p of rawPods(cluster)) {
  if (!removed.has(Number(p.metadata?.labels?.[SLOT_LABEL]))) continue;
  await cluster.deletePod({ namespace: 'default', name: p.metadata?.name ?? '', uid: uidOf(p) }, 30);
}
const removedAtMs = nowMs();
const before = await costPerHour();
const remainingPods: Pod[] = rawPods(cluster)
  .filter((p) => isActive(p))
  .map((p) => toPod(p as V1Pod));

// Phase 3: the controllers, disruption included, until consolidation converges: no command in
// flight, nothing pending, and enough passes in a row without a command for single-node
// consolidation (20 candidates a pass) to have looked at every candidate.
const disruptStart = performance.now();
const converged = async (): Promise<boolean> => {
  const quiet = [...passes].reverse().findIndex((p) => p.commands > 0);
  const quietRun = quiet < 0 ? passes.length : quiet;
  const last = passes.at(-1);
  if (last === undefined) return false;
  const needed = Math.max(3, Math.ceil(last.candidates / 20) + 1);
  if (quietRun < needed) return false;
  const inFlight = recorder.entries.filter((e) => e['decision'] === 'disruptionPass').at(-1)?.['inFlight'];
  return Number(inFlight ?? 0) === 0 && (await idle());
};
await runUntil(converged, true, removedAtMs + maxVirtualMs);
const disruptWallSeconds = (performance.now() - disruptStart) / 1000;
const after = await costPerHour();
const didConverge = await converged();

// --- what the disruption controller did -----------------------------------------------------------

const disrupts = recorder.entries.filter((e) => e['decision'] === 'disrupt');
const byCommand = new Map<string, Record<string, unknown>[]>();
for (const e of disrupts) {
  const id = String(e['commandId']);
  byCommand.set(id, [...(byCommand.get(id) ?? []), e]);
}
const commands = {
  delete: 0,
  replace: 0,
  abandoned: 0,
  failed: 0,
  /** Carried-out commands per disruption method. */
  byMethod: Object.fromEntries(METHOD_NAMES.map((name) => [name, 0])) as Record<DisruptionMethodName, number>,
};
let podsMoved = 0;
let raisedCost = 0;
/** Commands whose replacements cost as much as their candidates (or more). */
let savedNothing = 0;
let lastCommandMs = removedAtMs;
for (const entries of byCommand.values()) {
  const done = entries.find((e) => e['outcome'] === 'deleted');
  if (entries.some((e) => e['outcome'] === 'abandoned')) commands.abandoned += 1;
  if (entries.some((e) => e['outcome'] === 'failed')) commands.failed += 1;
  if (done === undefined) continue;
  lastCommandMs = Math.max(lastCommandMs, Number(done['atMs']));
  if (done['action'] === 'replace') commands.replace += 1;
  else commands.delete += 1;
  const method = METHOD_NAMES.find((name) => name === done['method']);
  if (method !== undefined) commands.byMethod[method] += 1;
  podsMoved += Number(done['podsMoved'] ?? 0);
  if (Number(done['pricePerHourAfter']) > Number(done['pricePerHourBefore'])) raisedCost += 1;
  if (Number(done['pricePerHourAfter']) >= Number(done['pricePerHourBefore']) - 1e-9) savedNothing += 1;
}
// Nodes the provisioner launched for waiting pods while consolidation ran: pods a command moved
// that did not land where its simulation expected them.
const launchedForPending = recorder.entries.filter(
  (e) =>
    e['decision'] === 'launch' &&
    e['reason'] === 'provisioning' &&
    e['outcome'] === 'launched' &&
    Number(e['atMs']) >= removedAtMs,
).length;
// With BENCH_DEBUG, what the commands did and what the provisioner launched meanwhile.
if (process.env['BENCH_DEBUG'])
  for (const e of recorder.entries)
    if (Number(e['atMs']) >= removedAtMs && (e['decision'] === 'launch' || e['decision'] === 'disrupt'))
      progress(JSON.stringify(e).slice(0, 700));
const stranded = rawPods(cluster).filter((p) => isActive(p) && !p.spec?.nodeName).length;
const running = rawPods(cluster).filter((p) => isActive(p) && p.spec?.nodeName).length;

// --- the from-scratch plan and the bound, over the instance types the controllers saw -----------

const nodeClass = parseEC2NodeClass(cluster.get('EC2NodeClass', 'default'));
const allowed = typeNames === undefined ? undefined : new Set(typeNames);
const types: InstanceType[] = (await cloud.instanceTypes(nodeClass)).filter(
  (t) => allowed === undefined || allowed.has(t.name),
);
const input: SolveInput = {
  pods: remainingPods,
  nodePools: [
    {
      name: 'default',
      nodeClassName: 'default',
      requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
      limits: { cpu: 10_000_000 * 1000, memory: 10_000_000 * 1024 ** 3 },
    },
  ],
  instanceTypes: new Map([['default', types]]),
  nowMs: nowMs(),
};
const scratch = solve(input);
const scratchCost = scratch.nodeClaims.reduce((s, c) => s + (c.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
const { shapes, types: lpTypes } = lpInputs(input);
const wholePodBound = assignmentLowerBound(shapes, lpTypes, { wholePods: true });

const wall = passes.map((p) => p.wallMs).sort((a, b) => a - b);
const cpu = passes.map((p) => p.cpuMs).sort((a, b) => a - b);
const quantileOf = (sorted: readonly number[], q: number) =>
  (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) / 1000;
const quantile = (q: number) => quantileOf(wall, q);
const commandPasses = passes.filter((p) => p.commands > 0).map((p) => p.wallMs);
process.stdout.write(
  `${JSON.stringify({
    pods: podCount,
    typeSet,
    minSavings: minSavingsArg ?? 'default (0%)',
    scoring,
    instanceTypes: types.length,
    nodesPlaced: placed.nodes,
    costPlaced: placed.costPerHour,
    podsRemaining: remainingPods.length,
    nodesBefore: before.nodes,
    costBefore: before.costPerHour,
    nodesAfter: after.nodes,
    costAfter: after.costPerHour,
    scratchNodes: scratch.nodeClaims.length,
    scratchUnschedulable: scratch.unschedulable.length,
    scratchCost,
    wholePodBound,
    ratioScratch: after.costPerHour / scratchCost,
    ratioBound: after.costPerHour / wholePodBound,
    converged: didConverge,
    virtualMinutes: (lastCommandMs - removedAtMs) / 60_000,
    virtualMinutesRun: (nowMs() - removedAtMs) / 60_000,
    commands,
    podsMoved,
    podsEvicted: recreated,
    launchedForPending,
    raisedCost,
    savedNothing,
    stranded,
    running,
    passes: passes.length,
    passesWithCommands: commandPasses.length,
    passSecondsMedian: quantile(0.5),
    passSecondsP95: quantile(0.95),
    passSecondsMax: quantile(1),
    passCpuSecondsMedian: quantileOf(cpu, 0.5),
    passCpuSecondsP95: quantileOf(cpu, 0.95),
    passCpuSecondsMax: quantileOf(cpu, 1),
    commandPassSecondsMedian:
      ([...commandPasses].sort((a, b) => a - b)[Math.floor(commandPasses.length / 2)] ?? 0) / 1000,
    disruptWallSeconds,
    peakRssMiB: (process.resourceUsage().maxRSS * 1024) / 2 ** 20,
  })}\n`,
);
