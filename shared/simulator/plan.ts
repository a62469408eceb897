import type { V1DaemonSet, V1Node, V1Pod } from '@kubernetes/client-node';
import { isMap, isSeq, LineCounter, parseAllDocuments, type Node as YamlNode } from 'yaml';
import { bundledCatalog } from '../adapters/memory/catalog.ts';
import { makeMemoryCloud } from '../adapters/memory/cloud.ts';
import { makeMemoryNodeClassResolver } from '../adapters/memory/nodeclass.ts';
import {
  isUnschedulable,
  parseEC2NodeClass,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toPod,
} from '../apis/index.ts';
import {
  type DaemonSet,
  FlotillaError,
  formatResources,
  Label,
  type Labels,
  type LaunchCandidate,
  type NodeSelectorRequirement,
  type Pod,
  type PodRef,
  type PoolReason,
  Requirements,
  type ResourceList,
  type SolveOptions,
  solve,
  type Taint,
  ValidationError,
} from '../core/index.ts';
import { makeManualClock } from '../ports/clock.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../ports/cluster.ts';
import { buildSchedulingInput, type ClusterState } from '../usecases/cluster-state.ts';
import { unschedulableMessage } from '../usecases/eligibility.ts';
import { resolveNodeClassStatus } from '../usecases/nodeclass-status.ts';
import { expectedCapacityType } from '../usecases/provision-plan.ts';

// `flotilla plan`: what Flotilla would launch for a cluster snapshot (`kubectl get
// pods,nodes,daemonsets -A -o yaml`) and a set of NodePool and EC2NodeClass manifests. It runs the
// provisioner's own pieces (the kube adapter's converters, the scheduler, the in-memory cloud's
// view of the bundled catalog) without touching a cluster or AWS.

/** One input file: its name (for messages) and its text. */
export interface PlanFile {
  readonly path: string;
  readonly text: string;
}

export interface PlanOptions {
  /** Prices come from this region of the bundled catalog. */
  readonly region: string;
  /** Zones every EC2NodeClass has a subnet in, e.g. `us-west-2a`. */
  readonly zones: readonly string[];
  /** Decision time (feeds NodeClaim names). @default the newest creationTimestamp in the snapshot, else 0 */
  readonly nowMs?: number;
  readonly solveOptions?: SolveOptions;
}

/** One problem in an input file, with where it is. */
export interface PlanProblem {
  readonly file: string;
  /** 1-based; absent when the problem has no place in the file. */
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
}

/** An input file cannot be read or one of its objects is malformed. Lists every problem found. */
export class PlanInputError extends FlotillaError {
  readonly code = 'PlanInputError';

  constructor(readonly problems: readonly PlanProblem[]) {
    super(
      [
        ...problems.slice(0, 20).map(formatProblem),
        ...(problems.length > 20 ? [`… and ${problems.length - 20} more problems`] : []),
      ].join('\n'),
    );
  }
}

function formatProblem(p: PlanProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column ?? 1}`;
  return `${where}: ${p.message}`;
}

/** A NodeClaim Flotilla would create. */
export interface PlannedNodeClaim {
  readonly name: string;
  readonly nodePool: string;
  readonly nodeClass: string;
  /** Cheapest first, each with the price of its cheapest allowed offering. */
  readonly instanceTypes: readonly LaunchCandidate[];
  /** What the launch most likely gets: reserved, then spot, when allowed and offered. */
  readonly capacityType: string;
  /** Zones the NodeClaim may launch in. */
  readonly zones: readonly string[];
  /** `namespace/name`. */
  readonly pods: readonly string[];
  /** The pods' requests plus DaemonSet overhead. */
  readonly requests: ResourceList;
  readonly requirements: readonly NodeSelectorRequirement[];
  /** Requirements the pods added to the NodePool's (instance types left out). */
  readonly fromPods: readonly string[];
  readonly labels: Labels;
  readonly taints: readonly Taint[];
  /** $/hour of the cheapest candidate. */
  readonly priceUsdPerHour: number;
}

export interface PlanResult {
  readonly region: string;
  readonly zones: readonly string[];
  readonly nowMs: number;
  /** Pods the plan was made for. */
  readonly pendingPods: number;
  readonly nodeClaims: readonly PlannedNodeClaim[];
  /** Sum over the NodeClaims of their cheapest candidate. */
  readonly totalUsdPerHour: number;
  /** Pending pods that fit a node or NodeClaim that already exists. */
  readonly placements: readonly { readonly pod: string; readonly on: string }[];
  readonly unschedulable: readonly {
    readonly pod: string;
    readonly reasons: readonly PoolReason[];
    readonly message: string;
  }[];
  readonly skippedNodePools: readonly { readonly nodePool: string; readonly reason: string }[];
  /** Objects of other kinds in the input, by kind (they do not affect the plan). */
  readonly ignoredKinds: Readonly<Record<string, number>>;
}

/** An object read from a YAML file, with the node it came from for error positions. */
interface Located {
  readonly value: Record<string, unknown>;
  readonly node: YamlNode | undefined;
  readonly file: string;
  readonly lines: LineCounter;
}

function readObjects(file: PlanFile, problems: PlanProblem[]): Located[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(file.text, { lineCounter: lines, prettyErrors: false });
  const out: Located[] = [];
  const docList = Array.isArray(docs) ? docs : [docs];
  for (const doc of docList) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = lines.linePos(e.pos[0]);
        problems.push({
          file: file.path,
          line: pos.line,
          column: pos.col,
          message: `YAML: ${e.message.split('\n')[0]}`,
        });
      }
      continue;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const place = (node: YamlNode | undefined) => {
      const offset = node?.range?.[0];
      return offset === undefined
        ? {}
        : { line: lines.linePos(offset).line, column: lines.linePos(offset).col };
    };
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push({
        file: file.path,
        ...place(doc.contents ?? undefined),
        message: 'expected a Kubernetes object (a mapping with kind), got a scalar or a list',
      });
      continue;
    }
    const object = value as Record<string, unknown>;
    if (object['kind'] === 'List' || (object['kind'] === undefined && Array.isArray(object['items']))) {
      const itemsNode = isMap(doc.contents) ? doc.contents.get('items', true) : undefined;
      const items = object['items'];
      if (!Array.isArray(items)) {
        problems.push({
          file: file.path,
          ...place(doc.contents ?? undefined),
          message: 'kind List: items: expected a list',
        });
        continue;
      }
      items.forEach((item: unknown, i) => {
        const node = isSeq(itemsNode) ? (itemsNode.items[i] as YamlNode | undefined) : undefined;
        if (item === null || typeof item !== 'object' || Array.isArray(item)) {
          problems.push({
            file: file.path,
            ...place(node),
            message: `items[${i}]: expected a Kubernetes object`,
          });
          return;
        }
        out.push({ value: item as Record<string, unknown>, node, file: file.path, lines });
      });
    } else {
      out.push({ value: object, node: doc.contents ?? undefined, file: file.path, lines });
    }
  }
  return out;
}

/** `spec.containers[0].resources` or `spec.template.0.x` → segments, numbers as numbers. */
function pathSegments(field: string): (string | number)[] {
  return field
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .filter((s) => s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** The deepest node along `path` that exists. */
function deepest(node: YamlNode | undefined, path: readonly (string | number)[]): YamlNode | undefined {
  let current = node;
  for (const key of path) {
    let next: unknown;
    // Some converters name one requirement as a list of one (`requirements[3][0]`): skip the index.
    if (isMap(current) && typeof key === 'number' && !current.has(String(key))) continue;
    if (isMap(current)) next = current.get(String(key), true);
    else if (isSeq(current) && typeof key === 'number') next = current.get(key, true);
    if (next === undefined || next === null || typeof next !== 'object') break;
    current = next as YamlNode;
  }
  return current;
}

/** The path an error points at: the first zod issue's, else the ValidationError's field. */
function errorPath(error: ValidationError): (string | number)[] {
  const issues = (error.cause as { issues?: { path?: unknown }[] } | undefined)?.issues;
  const first = issues?.[0]?.path;
  if (Array.isArray(first))
    return first.filter((s): s is string | number => typeof s === 'string' || typeof s === 'number');
  return pathSegments(error.field);
}

function problemAt(item: Located, error: unknown): PlanProblem {
  if (!(error instanceof ValidationError)) throw error;
  const node = deepest(item.node, errorPath(error));
  const offset = node?.range?.[0];
  const pos = offset === undefined ? undefined : item.lines.linePos(offset);
  return {
    file: item.file,
    ...(pos === undefined ? {} : { line: pos.line, column: pos.col }),
    message: error.message,
  };
}

function convert<T>(item: Located, problems: PlanProblem[], fn: (raw: never) => T): T | undefined {
  try {
    return fn(item.value as never);
  } catch (error) {
    problems.push(problemAt(item, error));
    return undefined;
  }
}

/**
 * A pod the plan places: one kube-scheduler marked unschedulable (as the provisioner reads it),
 * or, in a hand-made snapshot, one kube-scheduler has not looked at yet: phase Pending, not
 * bound or nominated, no PodScheduled condition, not a DaemonSet or static pod. Pods held by
 * scheduling gates (PodScheduled False, reason SchedulingGated) are not pending.
 */
export function isPendingForPlan(pod: V1Pod): boolean {
  if (isUnschedulable(pod)) return true;
  if (pod.spec?.nodeName || pod.status?.nominatedNodeName || pod.metadata?.deletionTimestamp) return false;
  if ((pod.status?.phase ?? 'Pending') !== 'Pending') return false;
  if ((pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet' || o.kind === 'Node'))
    return false;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror']) return false;
  return !(pod.status?.conditions ?? []).some((c) => c.type === 'PodScheduled');
}

const isFinished = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

function kindOf(item: Located): string {
  return typeof item.value['kind'] === 'string' ? item.value['kind'] : '<no kind>';
}

/** Manifests as users write them have no uid; the converters need one. */
function withUid(item: Located, fallback: string): Located {
  const metadata = (item.value['metadata'] ?? {}) as Record<string, unknown>;
  if (typeof metadata !== 'object' || metadata === null || metadata['uid'] !== undefined) return item;
  return { ...item, value: { ...item.value, metadata: { ...metadata, uid: fallback } } };
}

function nameOf(item: Located): string {
  const metadata = item.value['metadata'] as { name?: unknown; namespace?: unknown } | undefined;
  const name = typeof metadata?.name === 'string' ? metadata.name : '<unnamed>';
  return typeof metadata?.namespace === 'string' ? `${metadata.namespace}/${name}` : name;
}

function newestTimestamp(items: readonly Located[]): number | undefined {
  let newest: number | undefined;
  for (const item of items) {
    const stamp = (item.value['metadata'] as { creationTimestamp?: unknown } | undefined)?.creationTimestamp;
    const ms = typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
    if (Number.isFinite(ms) && (newest === undefined || ms > newest)) newest = ms;
  }
  return newest;
}

const podName = (p: PodRef) => `${p.namespace}/${p.name}`;

/**
 * Plans the NodeClaims Flotilla would create for the pending pods of a cluster snapshot, with
 * every NodePool in `nodePools` treated as Ready and every EC2NodeClass resolved to subnets in
 * `options.zones` and the EKS-optimized AL2023 images. Instance types and prices come from the
 * bundled catalog for `options.region`.
 * @throws PlanInputError listing every malformed object, with file, line and field.
 */
export async function planFromSnapshot(
  cluster: PlanFile,
  nodePools: PlanFile,
  options: PlanOptions,
): Promise<PlanResult> {
  const problems: PlanProblem[] = [];
  const clusterItems = readObjects(cluster, problems);
  const poolItems = readObjects(nodePools, problems);
  const ignoredKinds: Record<string, number> = {};
  const ignore = (item: Located) => {
    ignoredKinds[kindOf(item)] = (ignoredKinds[kindOf(item)] ?? 0) + 1;
  };

  const pending: Pod[] = [];
  const bound = new Map<string, Pod[]>();
  const rawNodes: Located[] = [];
  const daemonSets: DaemonSet[] = [];
  const namespaceLabels = new Map<string, Labels>();
  const claims: ClusterNodeClaim[] = [];
  const pools: ClusterNodePool[] = [];
  const nodeClasses = new Map<string, EC2NodeClass>();

  for (const item of [...clusterItems, ...poolItems]) {
    switch (kindOf(item)) {
      case 'Pod': {
        const raw = item.value as unknown as V1Pod;
        const nodeName = raw.spec?.nodeName;
        if (isFinished(raw)) break;
        if (nodeName) {
          const pod = convert(withUid(item, nameOf(item)), problems, toPod);
          if (pod !== undefined) bound.set(nodeName, [...(bound.get(nodeName) ?? []), pod]);
        } else if (isPendingForPlan(raw)) {
          const pod = convert(withUid(item, nameOf(item)), problems, toPod);
          if (pod !== undefined) pending.push(pod);
        }
        break;
      }
      case 'Node':
        rawNodes.push(withUid(item, nameOf(item)));
        break;
      case 'DaemonSet': {
        const ds = convert(item, problems, (raw: V1DaemonSet) => toDaemonSet(raw));
        if (ds !== undefined) daemonSets.push(ds);
        break;
      }
      case 'Namespace': {
        const meta = item.value['metadata'] as { name?: string; labels?: Labels } | undefined;
        if (meta?.name !== undefined) namespaceLabels.set(meta.name, meta.labels ?? {});
        break;
      }
      case 'NodeClaim': {
        const claim = convert(withUid(item, nameOf(item)), problems, toClusterNodeClaim);
        if (claim !== undefined) claims.push(claim);
        break;
      }
      case 'NodePool': {
        const pool = convert(withUid(item, `nodepool-${nameOf(item)}`), problems, toClusterNodePool);
        if (pool !== undefined) pools.push(pool);
        break;
      }
      case 'EC2NodeClass': {
        const nodeClass = convert(item, problems, parseEC2NodeClass);
        if (nodeClass !== undefined) nodeClasses.set(nodeClass.name, nodeClass);
        break;
      }
      default:
        ignore(item);
    }
  }
  const nodes: ClusterNode[] = [];
  for (const item of rawNodes) {
    const name = nameOf(item);
    const node = convert(item, problems, (raw: V1Node) => toClusterNode(raw, bound.get(name) ?? []));
    if (node !== undefined) nodes.push(node);
  }
  if (pools.length === 0 && !problems.some((p) => p.file === nodePools.path)) {
    problems.push({ file: nodePools.path, message: 'no NodePool (karpenter.sh/v1) found' });
  }
  if (problems.length > 0) throw new PlanInputError(problems);

  // NodePools as the provisioner chooses them, once the NodeClass controller has resolved each
  // class (in a fixed network: the plan does not read AWS).
  const clock = makeManualClock(new Date(0));
  const resolver = makeMemoryNodeClassResolver({ zones: options.zones });
  const cloud = makeMemoryCloud({
    clock,
    clusterName: 'plan',
    catalog: bundledCatalog(options.region, options.zones),
  });
  const resolved: EC2NodeClass[] = [];
  for (const stored of nodeClasses.values()) {
    resolved.push({ ...stored, status: await resolveNodeClassStatus(resolver, stored, clock.now()) });
  }
  const nowMs = options.nowMs ?? newestTimestamp(clusterItems) ?? 0;
  const state: ClusterState = {
    pendingPods: pending,
    nodes,
    nodeClaims: claims,
    nodePools: pools,
    nodeClasses: resolved,
    daemonSets,
    namespaceLabels,
  };
  const input = await buildSchedulingInput(state, cloud, {
    nowMs,
    ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
  });
  const skippedNodePools = input.selection.skipped;
  const usable = [...input.nodePools.values()];
  const typesByClass = input.instanceTypes;
  const result = solve(input.solve);

  const poolsByName = new Map(usable.map((p) => [p.pool.name, p]));
  const nodeClaims = result.nodeClaims.map((plan): PlannedNodeClaim => {
    const types = new Map((typesByClass.get(plan.nodeClassName) ?? []).map((t) => [t.name, t]));
    const candidates = plan.instanceTypes.flatMap((c) => {
      const t = types.get(c.name);
      return t === undefined ? [] : [t];
    });
    const reqs = Requirements.parse(plan.requirements, {
      object: `nodeClaim "${plan.name}"`,
      field: 'requirements',
    });
    const zoneReq = reqs.get(Label.zone);
    const zones = options.zones.filter(
      (z) =>
        (zoneReq === undefined || zoneReq.admits(z)) &&
        candidates.some((t) => t.offerings.some((o) => o.available && o.zone === z)),
    );
    const pool = poolsByName.get(plan.nodePoolName)?.pool;
    const poolReqs =
      pool === undefined
        ? Requirements.none
        : Requirements.parse(pool.requirements, { object: `nodePool "${pool.name}"`, field: 'requirements' });
    const fromPods = [...reqs.values()]
      .filter((r) => r.key !== Label.instanceType && r.key !== Label.nodePool)
      .filter((r) => String(poolReqs.get(r.key) ?? '') !== String(r))
      .filter((r) => pool?.labels?.[r.key] === undefined)
      .map(String);
    return {
      name: plan.name,
      nodePool: plan.nodePoolName,
      nodeClass: plan.nodeClassName,
      instanceTypes: plan.instanceTypes,
      capacityType: expectedCapacityType(plan.requirements, candidates),
      zones,
      pods: plan.pods.map(podName),
      requests: plan.requests,
      requirements: plan.requirements,
      fromPods,
      labels: plan.labels,
      taints: plan.taints,
      priceUsdPerHour: plan.instanceTypes[0]?.priceUsdPerHour ?? 0,
    };
  });

  return {
    region: options.region,
    zones: options.zones,
    nowMs,
    pendingPods: pending.length,
    nodeClaims,
    totalUsdPerHour: nodeClaims.reduce((sum, c) => sum + c.priceUsdPerHour, 0),
    placements: result.placements.map((p) => ({
      pod: podName(p.pod),
      on: p.kind === 'existingNode' ? `node ${p.nodeName}` : `nodeClaim ${p.nodeClaimName}`,
    })),
    unschedulable: result.unschedulable.map((u) => ({
      pod: podName(u.pod),
      reasons: u.reasons,
      message: unschedulableMessage(u, { eligible: usable.length, skipped: skippedNodePools }),
    })),
    skippedNodePools,
    ignoredKinds,
  };
}

/** Candidates and pods listed per NodeClaim before "… and N more". */
const MAX_LISTED = 8;

function capped(items: readonly string[], max = MAX_LISTED): string {
  const more = items.length - max;
  return `${items.slice(0, max).join(', ')}${more > 0 ? `, … and ${more} more` : ''}`;
}

const usd = (n: number) => `$${n.toFixed(4)}`;

/** The plan as text for a terminal. */
export function renderPlan(plan: PlanResult): string {
  const out: string[] = [
    `Plan for ${plan.pendingPods} pending ${plan.pendingPods === 1 ? 'pod' : 'pods'} in ${plan.region} (zones ${plan.zones.join(', ')}), prices from the bundled catalog`,
    '',
  ];
  plan.nodeClaims.forEach((c, i) => {
    out.push(
      `NodeClaim ${i + 1}: ${c.name} (nodePool ${c.nodePool}, ec2NodeClass ${c.nodeClass})`,
      `  instance types, cheapest first (${c.instanceTypes.length}): ${capped(c.instanceTypes.map((t) => `${t.name} ${usd(t.priceUsdPerHour)}`))}`,
      `  capacity type: ${c.capacityType}; zones: ${c.zones.join(', ') || 'none'}`,
      `  pods (${c.pods.length}): ${capped(c.pods)}`,
      `  why: the pods request ${formatResources(c.requests)} with DaemonSet overhead; ${
        c.fromPods.length === 0
          ? 'the pods add no requirements to the NodePool'
          : `the pods require ${c.fromPods.join('; ')}`
      }${c.taints.length === 0 ? '' : `; they tolerate the NodePool's taints (${c.taints.map((t) => `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`).join(', ')})`}`,
      `  $/hour: ${usd(c.priceUsdPerHour)} (${c.instanceTypes[0]?.name ?? 'no candidate'})`,
      '',
    );
  });
  out.push(
    `Total: ${plan.nodeClaims.length} ${plan.nodeClaims.length === 1 ? 'NodeClaim' : 'NodeClaims'}, ${usd(plan.totalUsdPerHour)}/hour`,
  );
  if (plan.placements.length > 0) {
    out.push('', `Pods that fit existing capacity (${plan.placements.length}):`);
    for (const p of plan.placements) out.push(`  ${p.pod} on ${p.on}`);
  }
  if (plan.unschedulable.length > 0) {
    out.push('', `Pods that cannot be scheduled (${plan.unschedulable.length}):`);
    for (const u of plan.unschedulable) out.push(`  ${u.pod}: ${u.message}`);
  }
  if (plan.skippedNodePools.length > 0) {
    out.push('', 'NodePools left out:');
    for (const s of plan.skippedNodePools) out.push(`  ${s.nodePool}: ${s.reason}`);
  }
  const ignored = Object.entries(plan.ignoredKinds).sort(([a], [b]) => (a < b ? -1 : 1));
  if (ignored.length > 0) out.push('', `Ignored objects: ${ignored.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  return `${out.join('\n')}\n`;
}
