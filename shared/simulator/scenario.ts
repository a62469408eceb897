import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { LineCounter, parseDocument } from 'yaml';
import { parseEC2NodeClass, toClusterNodePool, toPod } from '../apis/index.ts';
import { ValidationError } from '../core/index.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import type { ClusterNodePool } from '../ports/cluster.ts';
import { checkManifest, withStoredDefaults } from '../validation/manifests.ts';
import {
  eventRefs,
  initialNodeProblems,
  isObject,
  manifestProblems,
  mergePatch,
  namesIn,
  type PathProblem,
  priorityProblems,
  referenceProblems,
  schemaIssueProblems,
} from './scenario-check.ts';
import {
  fieldOf,
  inFileOrder,
  makeLocator,
  ScenarioError,
  ScenarioFileError,
  type ScenarioProblem,
} from './scenario-problems.ts';
import { scenarioFieldsAt, scenarioSchema } from './scenario-schema.ts';
import type {
  InitialNode,
  PodTemplate,
  Scenario,
  ScenarioEvent,
  ScenarioManifest,
  Workload,
} from './scenario-types.ts';

export { mergePatch } from './scenario-check.ts';
export { ScenarioError, ScenarioFileError, type ScenarioProblem } from './scenario-problems.ts';
export { parseDurationMs } from './scenario-schema.ts';
export type {
  DeploymentWorkload,
  InitialNode,
  JobWorkload,
  PodTemplate,
  Scenario,
  ScenarioDaemonSet,
  ScenarioEvent,
  ScenarioManifest,
  ScenarioPriorityClass,
  ScenarioSettings,
  ScoringStrategy,
  Workload,
} from './scenario-types.ts';

// A simulation scenario: the cluster's NodePools and EC2NodeClasses as Karpenter v1 manifests,
// workloads that change over time, edits to the NodePools and EC2NodeClasses, and what the cloud
// does to them (spot interruptions, windows of insufficient capacity, AMI releases, boot delay).
// Parsed from YAML once; every problem names the line, the column and the field.

/**
 * Parses a scenario. Every problem is reported at once, in file order, each with the line and
 * column of its field in `text`: the scenario's own fields, its NodePools and EC2NodeClasses
 * against the CRDs (unknown fields, types, patterns, enums, bounds, CEL rules), its pod templates
 * against PodSpec, and references between its parts.
 * @throws ScenarioError
 */
export function parseScenario(text: string, file = 'scenario.yaml'): Scenario {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ScenarioError(
      file,
      doc.errors.map((e) => {
        const pos = lineCounter.linePos(e.pos[0]);
        return { line: pos.line, column: pos.col, field: '', message: e.message.split('\n')[0] ?? e.message };
      }),
    );
  }
  const problemAt = makeLocator(doc.contents, lineCounter);
  const raw: unknown = doc.toJS();
  if (!isObject(raw)) {
    throw new ScenarioError(file, [
      problemAt(
        [],
        raw === null || raw === undefined
          ? 'the file is empty; a scenario needs at least name, duration, nodePools and ec2NodeClasses (see examples/README.md)'
          : `a scenario is a mapping of fields (name, duration, nodePools, …), got ${Array.isArray(raw) ? 'a list' : JSON.stringify(raw)}`,
      ),
    ]);
  }
  const problems: ScenarioProblem[] = [];
  const report = (found: readonly PathProblem[]) => {
    for (const p of found) problems.push(problemAt(p.path, p.message));
  };

  const checked = manifestProblems(raw);
  report(checked.problems);
  report(priorityProblems(raw));
  const region = typeof raw['region'] === 'string' ? raw['region'] : 'us-east-1';
  const rawZones = Array.isArray(raw['zones'])
    ? raw['zones'].filter((z): z is string => typeof z === 'string')
    : ['a', 'b', 'c'].map((letter) => `${region}${letter}`);
  report(
    referenceProblems({
      region,
      zones: rawZones,
      nodePoolNames: namesIn(raw['nodePools']),
      events: eventRefs(raw),
    }),
  );

  const classNames = namesIn(raw['ec2NodeClasses']);
  /** The NodePools as read (for the initial nodes' checks), by name. */
  const pools = new Map<string, ClusterNodePool>();
  /** The EC2NodeClasses as read, by name. */
  const classes = new Map<string, EC2NodeClass>();
  const rawList = (key: string): unknown[] => (Array.isArray(raw[key]) ? (raw[key] as unknown[]) : []);
  rawList('ec2NodeClasses').forEach((manifest, i) => {
    if (!checked.sound.ec2NodeClasses.has(i)) return;
    try {
      const nodeClass = parseEC2NodeClass(manifest);
      classes.set(nodeClass.name, nodeClass);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['ec2NodeClasses', i, ...fieldOf(error)], error.message));
    }
  });
  rawList('nodePools').forEach((manifest, i) => {
    if (!checked.sound.nodePools.has(i) || !isObject(manifest)) return;
    try {
      const pool = toClusterNodePool({
        ...manifest,
        metadata: { ...(manifest['metadata'] as object), uid: `scenario-${i}` },
      } as never);
      pools.set(pool.pool.name, pool);
      if (!classNames.has(pool.nodeClassRef.name)) {
        problems.push(
          problemAt(
            ['nodePools', i, 'spec', 'template', 'spec', 'nodeClassRef', 'name'],
            `no EC2NodeClass named "${pool.nodeClassRef.name}" in ec2NodeClasses`,
          ),
        );
      }
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['nodePools', i, ...fieldOf(error)], error.message));
    }
  });

  const parsed = scenarioSchema.safeParse(raw);
  if (!parsed.success) {
    report(schemaIssueProblems(parsed.error.issues, raw, (p) => scenarioFieldsAt(raw, p)));
    throw new ScenarioError(file, inFileOrder(problems));
  }
  const s = parsed.data;

  /** A pod template read as the API server reads a pod made from it. */
  const checkTemplate = (
    list: 'workloads' | 'daemonSets',
    i: number,
    w: (typeof s.workloads)[number] | (typeof s.daemonSets)[number],
  ) => {
    try {
      toPod({
        metadata: {
          name: w.name,
          namespace: w.namespace,
          uid: 'scenario',
          labels: w.template.metadata?.labels ?? {},
          annotations: w.template.metadata?.annotations ?? {},
        },
        spec: w.template.spec as unknown as V1Pod['spec'],
      } as V1Pod);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt([list, i, 'template', ...fieldOf(error)], error.message));
    }
  };
  const seenDaemonSets = new Set<string>();
  s.daemonSets.forEach((d, i) => {
    const key = `${d.namespace}/${d.name}`;
    if (seenDaemonSets.has(key))
      problems.push(problemAt(['daemonSets', i, 'name'], `a second DaemonSet named "${key}"`));
    seenDaemonSets.add(key);
    if (checked.soundDaemonSets.has(i)) checkTemplate('daemonSets', i, d);
  });
  const seen = new Set<string>();
  s.workloads.forEach((w, i) => {
    const key = `${w.namespace}/${w.name}`;
    if (seen.has(key)) problems.push(problemAt(['workloads', i, 'name'], `a second workload named "${key}"`));
    seen.add(key);
    if (!checked.soundWorkloads.has(i)) return;
    checkTemplate('workloads', i, w);
    if (w.kind === 'Deployment') {
      w.scale.forEach((step, j) => {
        if (step.at > s.duration) {
          problems.push(problemAt(['workloads', i, 'scale', j, 'at'], 'is after the end of the scenario'));
        }
      });
    }
  });
  // Edits apply in time order, each on the object as the earlier ones left it; the result must
  // still be a valid manifest, and pass the CRDs' transition rules against the object before.
  const current = new Map<string, Record<string, unknown>>([
    ...s.nodePools.map((m): [string, Record<string, unknown>] => [`NodePool/${m.metadata.name}`, m]),
    ...s.ec2NodeClasses.map((m): [string, Record<string, unknown>] => [`EC2NodeClass/${m.metadata.name}`, m]),
  ]);
  const edits = s.events.flatMap((e, i) =>
    e.kind === 'UpdateNodePool' || e.kind === 'UpdateEC2NodeClass' ? [{ e, i }] : [],
  );
  edits.sort((a, b) => a.e.at - b.e.at || a.i - b.i);
  for (const { e, i } of edits) {
    const kind = e.kind === 'UpdateNodePool' ? 'NodePool' : 'EC2NodeClass';
    const before = current.get(`${kind}/${e.name}`);
    if (before === undefined) {
      problems.push(
        problemAt(
          ['events', i, 'name'],
          `no ${kind} named "${e.name}" in ${kind === 'NodePool' ? 'nodePools' : 'ec2NodeClasses'}`,
        ),
      );
      continue;
    }
    const stored = withStoredDefaults(before);
    const after = { ...stored, spec: mergePatch(stored['spec'], e.spec) };
    const found = checkManifest(after, { old: stored });
    if (found.length > 0) {
      for (const p of found) problems.push(problemAt(['events', i, ...p.path], p.message));
      continue;
    }
    try {
      if (kind === 'EC2NodeClass') parseEC2NodeClass(after);
      else {
        const pool = toClusterNodePool({ ...after, metadata: { name: e.name, uid: `scenario-event-${i}` } });
        if (!classNames.has(pool.nodeClassRef.name)) {
          problems.push(
            problemAt(
              ['events', i, 'spec', 'template', 'spec', 'nodeClassRef', 'name'],
              `no EC2NodeClass named "${pool.nodeClassRef.name}" in ec2NodeClasses`,
            ),
          );
        }
      }
      current.set(`${kind}/${e.name}`, after);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['events', i, ...fieldOf(error)], error.message));
    }
  }
  s.events.forEach((e, i) => {
    const at = e.kind === 'InsufficientCapacity' ? e.from : e.at;
    if (at > s.duration) {
      problems.push(
        problemAt(
          ['events', i, e.kind === 'InsufficientCapacity' ? 'from' : 'at'],
          'is after the end of the scenario',
        ),
      );
    }
    if (e.kind === 'InsufficientCapacity' && e.until !== undefined && e.until <= e.from) {
      problems.push(problemAt(['events', i, 'until'], 'must be after from'));
    }
    if (e.kind === 'RogueTaint' && e.until !== undefined && e.until <= e.at) {
      problems.push(problemAt(['events', i, 'until'], 'must be after at'));
    }
  });
  const zones = s.zones ?? rawZones;
  problems.push(
    ...initialNodeProblems(s.nodes, { region: s.region, zones, pools, classes }).map((p) =>
      problemAt(p.path, p.message),
    ),
  );
  const startupKeys = new Set(
    [...pools.values()].flatMap((p) => (p.pool.startupTaints ?? []).map((t) => t.key)),
  );
  for (const [key, manifest] of current) {
    if (!key.startsWith('NodePool/')) continue;
    const spec = (manifest['spec'] as { template?: { spec?: { startupTaints?: unknown } } } | undefined)
      ?.template?.spec;
    if (Array.isArray(spec?.startupTaints))
      for (const t of spec.startupTaints)
        if (isObject(t) && typeof t['key'] === 'string') startupKeys.add(t['key']);
  }
  const removalKeys = new Set<string>();
  s.startupTaintRemoval.forEach((r, i) => {
    if (removalKeys.has(r.key))
      problems.push(problemAt(['startupTaintRemoval', i, 'key'], `a second entry for "${r.key}"`));
    removalKeys.add(r.key);
    if (!startupKeys.has(r.key))
      problems.push(
        problemAt(
          ['startupTaintRemoval', i, 'key'],
          `no NodePool has a start-up taint with key "${r.key}" (spec.template.spec.startupTaints)`,
        ),
      );
  });
  zones.forEach((zone, i) => {
    if (!zone.startsWith(s.region)) {
      problems.push(problemAt(['zones', i], `zone "${zone}" is not in region ${s.region}`));
    }
  });
  if (s.sampleInterval <= 0) problems.push(problemAt(['sampleInterval'], 'must be longer than 0s'));
  if (s.duration <= 0) problems.push(problemAt(['duration'], 'must be longer than 0s'));
  if (problems.length > 0) throw new ScenarioError(file, inFileOrder(problems));
  return {
    name: s.name,
    ...(s.description === undefined ? {} : { description: s.description.trim() }),
    region: s.region,
    zones,
    startMs: Date.parse(s.start),
    durationMs: s.duration,
    sampleIntervalMs: s.sampleInterval,
    bootDelayMs: s.bootDelay,
    settings: {
      spotToSpotConsolidation: s.settings.spotToSpotConsolidation,
      nodeRepair: s.settings.nodeRepair,
      minValuesPolicy: s.settings.minValuesPolicy,
      preferencePolicy: s.settings.preferencePolicy,
    },
    scoringStrategy: s.kubeScheduler.scoringStrategy,
    startupTaintRemovalMs: new Map(s.startupTaintRemoval.map((r) => [r.key, r.after])),
    nodes: s.nodes.flatMap((n, i) =>
      Array.from({ length: n.count }, (_, j): InitialNode => {
        const base =
          n.name ?? (n.nodePool === undefined ? `node-${i + 1}` : `${n.nodePool}-initial-${i + 1}`);
        return {
          name: n.count === 1 && n.name !== undefined ? base : `${base}-${j + 1}`,
          ...(n.nodePool === undefined ? {} : { nodePool: n.nodePool }),
          instanceType: n.instanceType,
          zone: n.zone ?? zones[0] ?? '',
          capacityType: n.capacityType,
          labels: n.labels ?? {},
          taints: (n.taints ?? []).map((t) => ({
            key: t.key,
            effect: t.effect,
            ...(t.value === undefined ? {} : { value: t.value }),
          })),
        };
      }),
    ),
    priorityClasses: s.priorityClasses.map((c) => ({
      name: c.name,
      value: c.value,
      globalDefault: c.globalDefault,
      ...(c.description === undefined ? {} : { description: c.description }),
    })),
    daemonSets: s.daemonSets.map((d) => ({
      name: d.name,
      namespace: d.namespace,
      template: d.template as PodTemplate,
    })),
    nodePools: s.nodePools as ScenarioManifest[],
    ec2NodeClasses: s.ec2NodeClasses as ScenarioManifest[],
    workloads: s.workloads.map((w): Workload => {
      const template = w.template as PodTemplate;
      if (w.kind === 'Deployment') {
        return {
          kind: 'Deployment',
          name: w.name,
          namespace: w.namespace,
          replicas: w.replicas,
          scale: w.scale.map((x) => ({ atMs: x.at, replicas: x.replicas })).sort((a, b) => a.atMs - b.atMs),
          template,
          ...(w.disruptionBudget === undefined
            ? {}
            : {
                disruptionBudget: {
                  ...(w.disruptionBudget.minAvailable === undefined
                    ? {}
                    : { minAvailable: w.disruptionBudget.minAvailable }),
                  ...(w.disruptionBudget.maxUnavailable === undefined
                    ? {}
                    : { maxUnavailable: w.disruptionBudget.maxUnavailable }),
                },
              }),
        };
      }
      return {
        kind: 'Job',
        name: w.name,
        namespace: w.namespace,
        atMs: w.at,
        completions: w.completions,
        parallelism: w.parallelism ?? w.completions,
        runTimeMs: w.runTime,
        template,
      };
    }),
    events: s.events.map((e): ScenarioEvent => {
      if (e.kind === 'UpdateNodePool' || e.kind === 'UpdateEC2NodeClass') {
        return { kind: e.kind, atMs: e.at, name: e.name, spec: e.spec };
      }
      if (e.kind === 'AMIRelease') return { kind: 'AMIRelease', atMs: e.at, version: e.version };
      if (e.kind === 'NodeNotReady') {
        return {
          kind: 'NodeNotReady',
          atMs: e.at,
          count: e.count,
          ...(e.nodePool === undefined ? {} : { nodePool: e.nodePool }),
        };
      }
      if (e.kind === 'RogueTaint') {
        return {
          kind: 'RogueTaint',
          atMs: e.at,
          ...(e.until === undefined ? {} : { untilMs: e.until }),
          taint: { key: e.key, effect: e.effect, ...(e.value === undefined ? {} : { value: e.value }) },
        };
      }
      if (e.kind !== 'InsufficientCapacity') {
        return {
          kind: e.kind,
          atMs: e.at,
          count: e.count,
          ...(e.nodePool === undefined ? {} : { nodePool: e.nodePool }),
          ...(e.instanceType === undefined ? {} : { instanceType: e.instanceType }),
          ...(e.zone === undefined ? {} : { zone: e.zone }),
        };
      }
      return {
        kind: 'InsufficientCapacity',
        fromMs: e.from,
        ...(e.until === undefined ? {} : { untilMs: e.until }),
        ...(e.instanceType === undefined ? {} : { instanceType: e.instanceType }),
        ...(e.zone === undefined ? {} : { zone: e.zone }),
        ...(e.capacityType === undefined ? {} : { capacityType: e.capacityType }),
      };
    }),
  };
}

/**
 * Reads and parses a scenario file; problems name the file as given.
 * @throws ScenarioFileError when the file cannot be read, ScenarioError when it is not valid.
 */
export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : (error as Error).message;
    throw new ScenarioFileError(file, reason, { cause: error });
  }
  return parseScenario(text, path.relative(process.cwd(), file) || file);
}
