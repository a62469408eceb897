import type { z } from 'zod';
import { bundledCatalog, bundledCatalogRegions, makeCatalogResolver } from '../adapters/memory/index.ts';
import { unknownFieldMessage } from '../apis/schema/openapi.ts';
import {
  admitPriority,
  Label,
  type PriorityClass,
  Requirements,
  SYSTEM_PRIORITY_CLASS_PREFIX,
} from '../core/index.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import type { ClusterNodePool } from '../ports/cluster.ts';
import { checkManifest, checkPodSpec } from '../validation/manifests.ts';
import { foreignNodeTypes } from './initial-nodes.ts';

// The checks a scenario gets besides its own schema: its NodePools and EC2NodeClasses against
// the CRDs Flotilla ships (as `kubectl apply --validate=strict` checks them), its pod templates
// against Kubernetes' PodSpec, and the references between its parts. Each returns problems with
// the path of the field they are about; the caller turns paths into lines and columns.

export type ScenarioPath = readonly (string | number)[];

export interface PathProblem {
  readonly path: ScenarioPath;
  readonly message: string;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The names of the objects in a list of manifests as written. */
export function namesIn(list: unknown): Set<string> {
  if (!Array.isArray(list)) return new Set();
  return new Set(
    list.flatMap((m: unknown) => {
      const name = isObject(m) && isObject(m['metadata']) ? m['metadata']['name'] : undefined;
      return typeof name === 'string' ? [name] : [];
    }),
  );
}

/** Events as written, for the reference checks (which run even when other fields are wrong). */
export function eventRefs(
  raw: Record<string, unknown>,
): { kind: string; nodePool?: string; zone?: string }[] {
  const events = raw['events'];
  if (!Array.isArray(events)) return [];
  return events.map((e: unknown) => {
    const ref = (key: string) =>
      isObject(e) && typeof e[key] === 'string' ? { [key]: e[key] as string } : ({} as Record<string, never>);
    return { kind: isObject(e) ? String(e['kind']) : '', ...ref('nodePool'), ...ref('zone') };
  });
}

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

function at(root: unknown, path: ScenarioPath): unknown {
  let node = root;
  for (const segment of path) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment];
    else if (isObject(node) && typeof segment === 'string') node = node[segment];
    else return undefined;
  }
  return node;
}

/** A schema issue in the words the CRD checks use: what the field must be, and what it is. */
function issueMessage(issue: z.core.$ZodIssue, given: unknown): string {
  const got = `got ${JSON.stringify(given)}`;
  switch (issue.code) {
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((v) => JSON.stringify(v)).join(', ')}, ${got}`;
    case 'invalid_type':
      return `must be ${issue.expected === 'array' ? 'a list' : `a ${issue.expected}`}, ${got}`;
    case 'too_small':
      return issue.origin === 'array'
        ? `must have at least ${String(issue.minimum)} item${issue.minimum === 1 ? '' : 's'}`
        : `must be at least ${String(issue.minimum)}, ${got}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}, ${got}`;
    default:
      return issue.message;
  }
}

/** The scenario schema's issues as problems, each at the field it is about. */
export function schemaIssueProblems(
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  knownFields: (path: ScenarioPath) => readonly string[],
): PathProblem[] {
  return issues.flatMap((issue): PathProblem[] => {
    const path = issue.path.filter((s): s is string | number => typeof s !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: [...path, key],
        message: unknownFieldMessage(key, knownFields(path)),
      }));
    }
    if (issue.code === 'invalid_union' && 'discriminator' in issue && 'options' in issue) {
      const options = (issue.options as readonly unknown[]).map(String).join(', ');
      const given = at(raw, path);
      return [
        {
          path,
          message:
            given === undefined
              ? `missing required field "${String(issue.discriminator)}" (one of ${options})`
              : `${JSON.stringify(given)} is not one of ${options}`,
        },
      ];
    }
    const given = at(raw, path);
    if (path.length > 0 && given === undefined) {
      return [{ path: path.slice(0, -1), message: `missing required field "${String(path.at(-1))}"` }];
    }
    return [{ path, message: issueMessage(issue, given) }];
  });
}

/**
 * Problems of the NodePools and EC2NodeClasses (against the CRDs) and of the workloads' pod
 * specs (against PodSpec), read from the scenario as written. Also returns the indexes of the
 * manifests that passed, for the checks that need a well-formed object.
 */
export function manifestProblems(raw: unknown): {
  problems: PathProblem[];
  sound: { nodePools: Set<number>; ec2NodeClasses: Set<number> };
  soundWorkloads: Set<number>;
  soundDaemonSets: Set<number>;
} {
  const problems: PathProblem[] = [];
  const sound = { nodePools: new Set<number>(), ec2NodeClasses: new Set<number>() };
  const soundWorkloads = new Set<number>();
  const soundDaemonSets = new Set<number>();
  if (!isObject(raw)) return { problems, sound, soundWorkloads, soundDaemonSets };
  for (const list of ['nodePools', 'ec2NodeClasses'] as const) {
    const items = raw[list];
    if (!Array.isArray(items)) continue;
    const names = new Map<string, number>();
    items.forEach((item: unknown, i) => {
      const found = checkManifest(item).map((p) => ({ path: [list, i, ...p.path], message: p.message }));
      problems.push(...found);
      if (found.length === 0) sound[list].add(i);
      const name = at(item, ['metadata', 'name']);
      if (typeof name !== 'string') return;
      const first = names.get(name);
      if (first !== undefined)
        problems.push({
          path: [list, i, 'metadata', 'name'],
          message: `a second object named "${name}" (the first is ${list}[${first}])`,
        });
      else names.set(name, i);
    });
  }
  for (const [list, soundOnes] of [
    ['workloads', soundWorkloads],
    ['daemonSets', soundDaemonSets],
  ] as const) {
    const items = raw[list];
    if (!Array.isArray(items)) continue;
    items.forEach((w: unknown, i) => {
      const spec = at(w, ['template', 'spec']);
      if (!isObject(spec)) return;
      const found = checkPodSpec(spec);
      if (found.length === 0) soundOnes.add(i);
      for (const p of found)
        problems.push({ path: [list, i, 'template', 'spec', ...p.path], message: p.message });
    });
  }
  return { problems, sound, soundWorkloads, soundDaemonSets };
}

/**
 * Problems of the PriorityClasses and of the pods' priorities, read from the scenario as written:
 * a class named like the built-in ones or twice, a second global default (as the API server
 * refuses them), and a pod template whose pods admission would refuse: one naming a PriorityClass
 * the cluster does not have, or setting a priority other than its class's.
 */
export function priorityProblems(raw: Record<string, unknown>): PathProblem[] {
  const problems: PathProblem[] = [];
  const classes: PriorityClass[] = [];
  const written = Array.isArray(raw['priorityClasses']) ? (raw['priorityClasses'] as unknown[]) : [];
  let firstDefault: string | undefined;
  written.forEach((c, i) => {
    if (!isObject(c) || typeof c['name'] !== 'string') return;
    const name = c['name'];
    if (name.startsWith(SYSTEM_PRIORITY_CLASS_PREFIX)) {
      problems.push({
        path: ['priorityClasses', i, 'name'],
        message: `"${SYSTEM_PRIORITY_CLASS_PREFIX}" is reserved for the built-in PriorityClasses (system-node-critical and system-cluster-critical exist already)`,
      });
      return;
    }
    if (classes.some((x) => x.name === name)) {
      problems.push({
        path: ['priorityClasses', i, 'name'],
        message: `a second PriorityClass named "${name}"`,
      });
      return;
    }
    const globalDefault = c['globalDefault'] === true;
    if (globalDefault && firstDefault !== undefined) {
      problems.push({
        path: ['priorityClasses', i, 'globalDefault'],
        message: `PriorityClass "${firstDefault}" is the global default already; only one may be`,
      });
    } else if (globalDefault) firstDefault = name;
    classes.push({ name, value: typeof c['value'] === 'number' ? c['value'] : 0, globalDefault });
  });
  for (const list of ['workloads', 'daemonSets'] as const) {
    const items = raw[list];
    if (!Array.isArray(items)) continue;
    items.forEach((w: unknown, i) => {
      const spec = at(w, ['template', 'spec']);
      if (!isObject(spec)) return;
      const className = spec['priorityClassName'];
      const priority = spec['priority'];
      // A value of the wrong type is the PodSpec check's to report.
      if (className !== undefined && typeof className !== 'string') return;
      if (priority !== undefined && typeof priority !== 'number') return;
      const admission = admitPriority({ priorityClassName: className, priority }, classes);
      if (admission.kind === 'refused') {
        problems.push({
          path: [list, i, 'template', 'spec', admission.field],
          message: `pods of this template are refused at admission: ${admission.message}`,
        });
      }
    });
  }
  return problems;
}

interface EventRef {
  readonly kind: string;
  readonly nodePool?: string | undefined;
  readonly zone?: string | undefined;
}

/** Problems of references: the region to the catalog, events to NodePools and zones. */
export function referenceProblems(s: {
  readonly region: string;
  readonly zones: readonly string[];
  readonly nodePoolNames: ReadonlySet<string>;
  readonly events: readonly EventRef[];
}): PathProblem[] {
  const problems: PathProblem[] = [];
  const regions = bundledCatalogRegions();
  if (!regions.has(s.region)) {
    problems.push({
      path: ['region'],
      message: `the bundled instance catalog has no prices for region "${s.region}"; use one of ${[...regions.keys()].sort().join(', ')}`,
    });
  }
  s.events.forEach((e, i) => {
    if (e.nodePool !== undefined && !s.nodePoolNames.has(e.nodePool)) {
      problems.push({
        path: ['events', i, 'nodePool'],
        message: `no NodePool named "${e.nodePool}" in nodePools (${[...s.nodePoolNames].join(', ')})`,
      });
    }
    if (e.zone !== undefined && !s.zones.includes(e.zone)) {
      problems.push({
        path: ['events', i, 'zone'],
        message: `zone "${e.zone}" is not one of the scenario's zones (${s.zones.join(', ')})`,
      });
    }
  });
  return problems;
}

interface InitialNodeRef {
  readonly name?: string | undefined;
  readonly count: number;
  readonly nodePool?: string | undefined;
  readonly instanceType: string;
  readonly zone?: string | undefined;
  readonly capacityType: 'on-demand' | 'spot';
  readonly labels?: Readonly<Record<string, string>> | undefined;
  readonly taints?: readonly unknown[] | undefined;
}

/**
 * Problems of the nodes there at the start: a NodePool that exists, a zone of the scenario, an
 * instance type the catalog has; a NodePool's node must be one its requirements allow (its
 * labels and taints are the NodePool's).
 */
export function initialNodeProblems(
  nodes: readonly InitialNodeRef[],
  s: {
    readonly region: string;
    readonly zones: readonly string[];
    readonly pools: ReadonlyMap<string, ClusterNodePool>;
    readonly classes: ReadonlyMap<string, EC2NodeClass>;
  },
): PathProblem[] {
  const problems: PathProblem[] = [];
  const catalog = makeCatalogResolver(bundledCatalog(s.region, s.zones));
  const names = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (n.name !== undefined) {
      const first = names.get(n.name);
      if (first !== undefined)
        problems.push({
          path: ['nodes', i, 'name'],
          message: `a second node named "${n.name}" (the first is nodes[${first}])`,
        });
      else names.set(n.name, i);
    }
    const zone = n.zone ?? s.zones[0] ?? '';
    if (n.zone !== undefined && !s.zones.includes(n.zone)) {
      problems.push({
        path: ['nodes', i, 'zone'],
        message: `zone "${n.zone}" is not one of the scenario's zones (${s.zones.join(', ')})`,
      });
    }
    if (n.nodePool === undefined) {
      if (!foreignNodeTypes(s.region, s.zones).has(n.instanceType)) {
        problems.push({
          path: ['nodes', i, 'instanceType'],
          message: `the bundled instance catalog has no instance type "${n.instanceType}" in ${s.region}`,
        });
      }
      return;
    }
    for (const field of ['labels', 'taints'] as const) {
      if (n[field] !== undefined)
        problems.push({
          path: ['nodes', i, field],
          message: `a node of NodePool "${n.nodePool}" takes its ${field} from the NodePool's template; leave ${field} out, or leave out nodePool for a node Flotilla did not launch`,
        });
    }
    const pool = s.pools.get(n.nodePool);
    if (pool === undefined) {
      problems.push({
        path: ['nodes', i, 'nodePool'],
        message: `no NodePool named "${n.nodePool}" in nodePools (${[...s.pools.keys()].join(', ')})`,
      });
      return;
    }
    const nodeClass = s.classes.get(pool.nodeClassRef.name);
    if (nodeClass === undefined) return;
    const type = catalog(nodeClass).find((t) => t.name === n.instanceType);
    if (type === undefined) {
      problems.push({
        path: ['nodes', i, 'instanceType'],
        message: `the bundled instance catalog has no instance type "${n.instanceType}" in ${s.region}`,
      });
      return;
    }
    const labels = { ...type.labels, [Label.zone]: zone, [Label.capacityType]: n.capacityType };
    const reqs = Requirements.parse(pool.pool.requirements, {
      object: `nodePool "${n.nodePool}"`,
      field: 'spec.template.spec.requirements',
    });
    if (!reqs.matchesLabels(labels)) {
      problems.push({
        path: ['nodes', i, 'instanceType'],
        message: `NodePool "${n.nodePool}"'s requirements do not allow ${n.capacityType} ${n.instanceType} in ${zone}`,
      });
    }
  });
  return problems;
}
