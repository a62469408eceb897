import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { parseEC2NodeClass, parseNodeOverlay, toClusterNodePool } from '../apis/index.ts';
import { ValidationError } from '../core/index.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import type { ClusterNodePool } from '../ports/cluster.ts';
import { toScenario } from './scenario-build.ts';
import {
  eventRefs,
  isObject,
  manifestProblems,
  namesIn,
  type PathProblem,
  priorityProblems,
  referenceProblems,
  schemaIssueProblems,
} from './scenario-check.ts';
import { classKubeletProblems, documentProblems } from './scenario-document-checks.ts';
import {
  fieldOf,
  inFileOrder,
  makeLocator,
  ScenarioError,
  ScenarioFileError,
  type ScenarioProblem,
} from './scenario-problems.ts';
import { scenarioFieldsAt, scenarioSchema } from './scenario-schema.ts';
import type { Scenario } from './scenario-types.ts';

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
  ScenarioShadow,
  ScoringStrategy,
  ShadowSettings,
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
      report(classKubeletProblems(nodeClass, ['ec2NodeClasses', i]));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['ec2NodeClasses', i, ...fieldOf(error)], error.message));
    }
  });
  // An overlay the cluster would mark invalid is a problem of the scenario, not silently left out.
  rawList('nodeOverlays').forEach((manifest, i) => {
    if (!checked.sound.nodeOverlays.has(i)) return;
    const invalid = parseNodeOverlay(manifest).invalid;
    if (invalid !== undefined) problems.push(problemAt(['nodeOverlays', i, 'spec'], invalid));
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
  const zones = s.zones ?? rawZones;
  report(
    documentProblems(s, {
      soundWorkloads: checked.soundWorkloads,
      soundDaemonSets: checked.soundDaemonSets,
      classNames,
      pools,
      classes,
      zones,
    }),
  );
  if (problems.length > 0) throw new ScenarioError(file, inFileOrder(problems));
  return toScenario(s, zones);
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
