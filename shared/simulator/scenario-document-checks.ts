// The checks a scenario gets once its schema has read it: pod templates read as the API server
// reads a pod, names given twice, times after the end, NodePool and EC2NodeClass edits applied in
// time order, initial nodes, start-up taint removals, zones and intervals. Each returns problems
// with the path of the field they are about.
import type { V1Pod } from '@kubernetes/client-node';
import { parseEC2NodeClass, toClusterNodePool, toPod } from '../apis/index.ts';
import { ValidationError } from '../core/index.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import type { ClusterNodePool } from '../ports/cluster.ts';
import { kubeletProblems } from '../usecases/nodeclass/kubelet.ts';
import { checkManifest, withStoredDefaults } from '../validation/manifests.ts';
import { initialNodeProblems, isObject, mergePatch, type PathProblem } from './scenario-check.ts';
import { fieldOf } from './scenario-problems.ts';
import type { ScenarioDocument } from './scenario-schema.ts';

/** What the checks before the schema found out about the scenario. */
export interface DocumentContext {
  /** Workloads and DaemonSets whose pod templates passed the PodSpec check, by index. */
  readonly soundWorkloads: ReadonlySet<number>;
  readonly soundDaemonSets: ReadonlySet<number>;
  /** The names in ec2NodeClasses. */
  readonly classNames: ReadonlySet<string>;
  /** The NodePools and EC2NodeClasses as read, by name. */
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  /** The zones the scenario runs in. */
  readonly zones: readonly string[];
}

/**
 * The problems the EC2NodeClass controller would find in a class's `spec.kubelet` (the API server
 * does not check that map), at their fields under `at`, so a scenario does not run with a class
 * that is never Ready.
 */
export function classKubeletProblems(
  nodeClass: EC2NodeClass,
  at: readonly (string | number)[],
): PathProblem[] {
  return kubeletProblems(nodeClass).map((p) => ({
    path: [...at, 'spec', 'kubelet', ...p.path],
    message: p.problem,
  }));
}

/** Every problem of the schema-read scenario, in the order the checks run. */
export function documentProblems(s: ScenarioDocument, context: DocumentContext): PathProblem[] {
  const problems: PathProblem[] = [];
  problems.push(...workloadProblems(s, context));
  const edits = editProblems(s, context.classNames);
  problems.push(...edits.problems);
  problems.push(...eventTimeProblems(s));
  const { pools, classes, zones } = context;
  problems.push(...initialNodeProblems(s.nodes, { region: s.region, zones, pools, classes }));
  problems.push(...startupTaintRemovalProblems(s, pools, edits.current));
  zones.forEach((zone, i) => {
    if (!zone.startsWith(s.region)) {
      problems.push({ path: ['zones', i], message: `zone "${zone}" is not in region ${s.region}` });
    }
  });
  if (s.sampleInterval <= 0) problems.push({ path: ['sampleInterval'], message: 'must be longer than 0s' });
  if (s.duration <= 0) problems.push({ path: ['duration'], message: 'must be longer than 0s' });
  return problems;
}

/**
 * DaemonSets and workloads: names given twice, pod templates the API server would refuse, and
 * Deployment scale steps after the end.
 */
function workloadProblems(s: ScenarioDocument, context: DocumentContext): PathProblem[] {
  const problems: PathProblem[] = [];
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
      problems.push({ path: [list, i, 'template', ...fieldOf(error)], message: error.message });
    }
  };
  const seenDaemonSets = new Set<string>();
  s.daemonSets.forEach((d, i) => {
    const key = `${d.namespace}/${d.name}`;
    if (seenDaemonSets.has(key))
      problems.push({ path: ['daemonSets', i, 'name'], message: `a second DaemonSet named "${key}"` });
    seenDaemonSets.add(key);
    if (context.soundDaemonSets.has(i)) checkTemplate('daemonSets', i, d);
  });
  const seen = new Set<string>();
  s.workloads.forEach((w, i) => {
    const key = `${w.namespace}/${w.name}`;
    if (seen.has(key))
      problems.push({ path: ['workloads', i, 'name'], message: `a second workload named "${key}"` });
    seen.add(key);
    if (!context.soundWorkloads.has(i)) return;
    checkTemplate('workloads', i, w);
    if (w.kind === 'Deployment') {
      w.scale.forEach((step, j) => {
        if (step.at > s.duration) {
          problems.push({
            path: ['workloads', i, 'scale', j, 'at'],
            message: 'is after the end of the scenario',
          });
        }
      });
    }
  });
  return problems;
}

/**
 * Edits apply in time order, each on the object as the earlier ones left it; the result must
 * still be a valid manifest, and pass the CRDs' transition rules against the object before.
 * Returns the problems and every NodePool and EC2NodeClass as the valid edits leave it, by
 * `<kind>/<name>`.
 */
function editProblems(
  s: ScenarioDocument,
  classNames: ReadonlySet<string>,
): { problems: PathProblem[]; current: ReadonlyMap<string, Record<string, unknown>> } {
  const problems: PathProblem[] = [];
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
      problems.push({
        path: ['events', i, 'name'],
        message: `no ${kind} named "${e.name}" in ${kind === 'NodePool' ? 'nodePools' : 'ec2NodeClasses'}`,
      });
      continue;
    }
    const stored = withStoredDefaults(before);
    const after = { ...stored, spec: mergePatch(stored['spec'], e.spec) };
    const found = checkManifest(after, { old: stored });
    if (found.length > 0) {
      for (const p of found) problems.push({ path: ['events', i, ...p.path], message: p.message });
      continue;
    }
    try {
      if (kind === 'EC2NodeClass') {
        problems.push(...editedClassProblems(stored, after, e.spec, ['events', i]));
      } else {
        const pool = toClusterNodePool({ ...after, metadata: { name: e.name, uid: `scenario-event-${i}` } });
        if (!classNames.has(pool.nodeClassRef.name)) {
          problems.push({
            path: ['events', i, 'spec', 'template', 'spec', 'nodeClassRef', 'name'],
            message: `no EC2NodeClass named "${pool.nodeClassRef.name}" in ec2NodeClasses`,
          });
        }
      }
      current.set(`${kind}/${e.name}`, after);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push({ path: ['events', i, ...fieldOf(error)], message: error.message });
    }
  }
  return { problems, current };
}

/**
 * The kubelet problems an edit (`edit`, at `at`) gives an EC2NodeClass that it did not have before
 * (told apart by message; those it had are reported where the class is written or by the edit that
 * brought them), through any field: a stricter AMI family or one threshold changed against the
 * other. At the field when the edit sets it, else at the edit, the message naming the field.
 */
function editedClassProblems(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  edit: Readonly<Record<string, unknown>>,
  at: readonly (string | number)[],
): PathProblem[] {
  let had: ReadonlySet<string>;
  try {
    had = new Set(kubeletProblems(parseEC2NodeClass(before)).map((p) => p.message));
  } catch (error) {
    // A class that cannot be read has its problem where it is written; an edit adds nothing to it.
    if (error instanceof ValidationError) return [];
    throw error;
  }
  const edited = isObject(edit['kubelet']) ? edit['kubelet'] : {};
  return kubeletProblems(parseEC2NodeClass(after))
    .filter((p) => !had.has(p.message))
    .map((p) => {
      const field = p.path[0];
      return field !== undefined && Object.hasOwn(edited, field)
        ? { path: [...at, 'spec', 'kubelet', ...p.path], message: p.problem }
        : { path: [...at], message: p.message };
    });
}

/** Events after the end, and windows that end before they start. */
function eventTimeProblems(s: ScenarioDocument): PathProblem[] {
  const problems: PathProblem[] = [];
  s.events.forEach((e, i) => {
    const at = e.kind === 'InsufficientCapacity' ? e.from : e.at;
    if (at > s.duration) {
      problems.push({
        path: ['events', i, e.kind === 'InsufficientCapacity' ? 'from' : 'at'],
        message: 'is after the end of the scenario',
      });
    }
    if (e.kind === 'InsufficientCapacity' && e.until !== undefined && e.until <= e.from) {
      problems.push({ path: ['events', i, 'until'], message: 'must be after from' });
    }
    if (e.kind === 'RogueTaint' && e.until !== undefined && e.until <= e.at) {
      problems.push({ path: ['events', i, 'until'], message: 'must be after at' });
    }
  });
  return problems;
}

/**
 * Start-up taint removals: one entry per key, each for a start-up taint some NodePool has, as
 * read or as an edit leaves it.
 */
function startupTaintRemovalProblems(
  s: ScenarioDocument,
  pools: ReadonlyMap<string, ClusterNodePool>,
  current: ReadonlyMap<string, Record<string, unknown>>,
): PathProblem[] {
  const problems: PathProblem[] = [];
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
      problems.push({ path: ['startupTaintRemoval', i, 'key'], message: `a second entry for "${r.key}"` });
    removalKeys.add(r.key);
    if (!startupKeys.has(r.key))
      problems.push({
        path: ['startupTaintRemoval', i, 'key'],
        message: `no NodePool has a start-up taint with key "${r.key}" (spec.template.spec.startupTaints)`,
      });
  });
  return problems;
}
