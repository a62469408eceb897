import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import { parseEC2NodeClass, toClusterNodePool, toPod } from '../apis/index.ts';
import { type CapacityType, FlotillaError, type Taint, ValidationError } from '../core/index.ts';
import type { MinValuesPolicy, PreferencePolicy } from '../runtime/scheduling-policy.ts';
import { scenarioSchema } from './scenario-schema.ts';

export { parseDurationMs } from './scenario-schema.ts';

// A simulation scenario: the cluster's NodePools and EC2NodeClasses as Karpenter v1 manifests,
// workloads that change over time, edits to the NodePools and EC2NodeClasses, and what the cloud
// does to them (spot interruptions, windows of insufficient capacity, AMI releases, boot delay). Parsed from YAML once; every problem names the line,
// the column and the field.

/** One problem in a scenario file. */
export interface ScenarioProblem {
  readonly line: number;
  readonly column: number;
  /** The field, e.g. `workloads[0].replicas`. */
  readonly field: string;
  readonly message: string;
}

/** A scenario file that cannot be run; the message lists every problem as `file:line:column`. */
export class ScenarioError extends FlotillaError {
  readonly code = 'ScenarioInvalid';

  constructor(
    readonly file: string,
    readonly problems: readonly ScenarioProblem[],
  ) {
    super(
      `${file} is not a valid scenario:\n${problems
        .map((p) => `  ${file}:${p.line}:${p.column}: ${p.field === '' ? '' : `${p.field}: `}${p.message}`)
        .join('\n')}`,
    );
  }
}

/** A Kubernetes manifest kept as written (NodePool, EC2NodeClass). */
export type ScenarioManifest = Readonly<Record<string, unknown>> & {
  readonly kind: string;
  readonly metadata: { readonly name: string } & Readonly<Record<string, unknown>>;
};

/** A pod template in Kubernetes syntax (`metadata.labels`, `spec`). */
export interface PodTemplate {
  readonly metadata?: { readonly labels?: Readonly<Record<string, string>> };
  readonly spec: Readonly<Record<string, unknown>>;
}

export interface DeploymentWorkload {
  readonly kind: 'Deployment';
  readonly name: string;
  readonly namespace: string;
  /** Replicas from the start. */
  readonly replicas: number;
  /** Replica changes, in time order (offsets from the start, milliseconds). */
  readonly scale: readonly { readonly atMs: number; readonly replicas: number }[];
  readonly template: PodTemplate;
  /** A PodDisruptionBudget over the Deployment's pods, as `spec` minus the selector. */
  readonly disruptionBudget?: {
    readonly minAvailable?: number | string;
    readonly maxUnavailable?: number | string;
  };
}

export interface JobWorkload {
  readonly kind: 'Job';
  readonly name: string;
  readonly namespace: string;
  /** Created at this offset from the start. */
  readonly atMs: number;
  readonly completions: number;
  readonly parallelism: number;
  /** How long each pod runs once started. */
  readonly runTimeMs: number;
  readonly template: PodTemplate;
}

export type Workload = DeploymentWorkload | JobWorkload;

export type ScenarioEvent =
  | {
      /**
       * A rogue controller taints every Node that joins from `atMs` until `untilMs` (no pod
       * tolerates the taint unless the scenario says so), as Karpenter's chaos test does.
       */
      readonly kind: 'RogueTaint';
      readonly atMs: number;
      readonly untilMs?: number;
      readonly taint: Taint;
    }
  | {
      /**
       * EC2 sends a spot interruption warning for `count` running spot instances (oldest first)
       * matching the filters and reclaims them two minutes later; a rebalance recommendation only
       * says they are at elevated risk.
       */
      readonly kind: 'SpotInterruption' | 'RebalanceRecommendation';
      readonly atMs: number;
      readonly count: number;
      readonly nodePool?: string;
      readonly instanceType?: string;
      readonly zone?: string;
    }
  | {
      /** EC2 has no capacity for the matching offerings from `fromMs` until `untilMs`. */
      readonly kind: 'InsufficientCapacity';
      readonly fromMs: number;
      readonly untilMs?: number;
      /** `*` matches any run of characters. */
      readonly instanceType?: string;
      readonly zone?: string;
      readonly capacityType?: CapacityType;
    }
  | {
      /**
       * A user changes a NodePool's or EC2NodeClass's spec: `spec` is merged into it as
       * `kubectl patch --type merge` does (objects merge, lists and values replace, null removes).
       */
      readonly kind: 'UpdateNodePool' | 'UpdateEC2NodeClass';
      readonly atMs: number;
      readonly name: string;
      readonly spec: Readonly<Record<string, unknown>>;
    }
  | {
      /** AWS publishes a new AL2023 release: `al2023@latest` resolves to its images from then on. */
      readonly kind: 'AMIRelease';
      readonly atMs: number;
      readonly version: string;
    }
  | {
      /**
       * The kubelets of `count` Ready nodes (of `nodePool` when given, by name) report NotReady
       * from `atMs` on and never recover.
       */
      readonly kind: 'NodeNotReady';
      readonly atMs: number;
      readonly count: number;
      readonly nodePool?: string;
    };

/** `patch` merged into `target` as a JSON merge patch (RFC 7386), without changing either. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const merged: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = mergePatch(merged[key], value);
  }
  return merged;
}

export interface ScenarioSettings {
  /** Whether consolidation may replace spot nodes by spot nodes. @default false */
  readonly spotToSpotConsolidation: boolean;
  /** Whether node repair replaces nodes unhealthy past their toleration. @default false */
  readonly nodeRepair: boolean;
  /** Karpenter's MIN_VALUES_POLICY. @default 'Strict' */
  readonly minValuesPolicy: MinValuesPolicy;
  /** Karpenter's PREFERENCE_POLICY. @default 'Respect' */
  readonly preferencePolicy: PreferencePolicy;
}

export interface Scenario {
  readonly name: string;
  readonly description?: string;
  readonly region: string;
  readonly zones: readonly string[];
  /** Virtual start instant, epoch milliseconds. */
  readonly startMs: number;
  readonly durationMs: number;
  readonly sampleIntervalMs: number;
  /** From launch until the instance runs and its node registers. */
  readonly bootDelayMs: number;
  /** The stack's settings (FlotillaCluster props) the controllers run with. */
  readonly settings: ScenarioSettings;
  readonly nodePools: readonly ScenarioManifest[];
  readonly ec2NodeClasses: readonly ScenarioManifest[];
  readonly workloads: readonly Workload[];
  readonly events: readonly ScenarioEvent[];
}

type Path = readonly (string | number)[];

function formatPath(p: Path): string {
  let out = '';
  for (const segment of p) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** `spec.template.spec.requirements[0].operator` or `spec.requirements.0.key` as a path. */
function parseField(field: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of field.split('.')) {
    const match = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (match === null) {
      out.push(part);
      continue;
    }
    if (match[1] !== '') out.push(/^\d+$/.test(match[1] ?? '') ? Number(match[1]) : (match[1] ?? ''));
    for (const index of (match[2] ?? '').matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}

/** Where a converter's ValidationError points inside the object it read. */
function fieldOf(error: ValidationError): (string | number)[] {
  const cause = error.cause as { issues?: { path?: PropertyKey[] }[] } | undefined;
  const issuePath = cause?.issues?.[0]?.path;
  if (Array.isArray(issuePath)) return issuePath.filter((s) => typeof s !== 'symbol') as (string | number)[];
  return parseField(error.field);
}

/**
 * Parses a scenario. Every problem found is reported at once, each with the line and column of
 * the field in `text`.
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
  const problemAt = (p: Path, message: string): ScenarioProblem => {
    const pos = lineCounter.linePos(offsetOf(doc.contents, p));
    return { line: pos.line, column: pos.col, field: formatPath(p), message };
  };

  const parsed = scenarioSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    throw new ScenarioError(
      file,
      parsed.error.issues.map((issue) =>
        problemAt(issue.path.filter((s) => typeof s !== 'symbol') as (string | number)[], issue.message),
      ),
    );
  }
  const s = parsed.data;
  const problems: ScenarioProblem[] = [];

  const classNames = new Set(s.ec2NodeClasses.map((c) => c.metadata.name));
  s.ec2NodeClasses.forEach((raw, i) => {
    try {
      parseEC2NodeClass(raw);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['ec2NodeClasses', i, ...fieldOf(error)], error.message));
    }
  });
  s.nodePools.forEach((raw, i) => {
    try {
      const pool = toClusterNodePool({ ...raw, metadata: { ...raw.metadata, uid: `scenario-${i}` } });
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

  const seen = new Set<string>();
  s.workloads.forEach((w, i) => {
    const key = `${w.namespace}/${w.name}`;
    if (seen.has(key)) problems.push(problemAt(['workloads', i, 'name'], `a second workload named "${key}"`));
    seen.add(key);
    try {
      toPod({
        metadata: {
          name: w.name,
          namespace: w.namespace,
          uid: 'scenario',
          labels: w.template.metadata?.labels ?? {},
        },
        spec: w.template.spec as unknown as V1Pod['spec'],
      } as V1Pod);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(problemAt(['workloads', i, 'template', ...fieldOf(error)], error.message));
    }
    if (w.kind === 'Deployment') {
      w.scale.forEach((step, j) => {
        if (step.at > s.duration) {
          problems.push(problemAt(['workloads', i, 'scale', j, 'at'], 'is after the end of the scenario'));
        }
      });
    }
  });
  // Edits apply in time order, each on the object as the earlier ones left it; the result must
  // still be a valid manifest.
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
    const after = { ...before, spec: mergePatch(before['spec'], e.spec) };
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
  const zones = s.zones ?? ['a', 'b', 'c'].map((letter) => `${s.region}${letter}`);
  zones.forEach((zone, i) => {
    if (!zone.startsWith(s.region)) {
      problems.push(problemAt(['zones', i], `zone "${zone}" is not in region ${s.region}`));
    }
  });
  if (s.sampleInterval <= 0) problems.push(problemAt(['sampleInterval'], 'must be longer than 0s'));
  if (s.duration <= 0) problems.push(problemAt(['duration'], 'must be longer than 0s'));
  if (problems.length > 0) throw new ScenarioError(file, problems);

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

/** Reads and parses a scenario file; problems name the file as given. @throws ScenarioError */
export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ScenarioError(file, [
      { line: 0, column: 0, field: '', message: `cannot be read: ${(error as Error).message}` },
    ]);
  }
  return parseScenario(text, path.relative(process.cwd(), file) || file);
}

/** The offset of the deepest node on `p` that exists: the key of a map entry, or a list item. */
function offsetOf(root: unknown, p: Path): number {
  let node = root;
  let offset = rangeStart(root);
  for (const segment of p) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && item.key.value === segment);
      if (pair === undefined) break;
      offset = rangeStart(pair.key, offset);
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined) break;
      offset = rangeStart(item, offset);
      node = item;
    } else {
      break;
    }
  }
  return offset;
}

function rangeStart(node: unknown, fallback = 0): number {
  const range = (node as { range?: readonly number[] } | null | undefined)?.range;
  return range?.[0] ?? fallback;
}
