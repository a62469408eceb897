import type { V1DaemonSet, V1Node, V1Pod } from '@kubernetes/client-node';
import { bundledCatalog, makeMemoryCloud, makeMemoryNodeClassResolver } from '../../adapters/memory/index.ts';
import {
  parseEC2NodeClass,
  parseNodeOverlay,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toPod,
} from '../../apis/index.ts';
import {
  addResources,
  computePodRequests,
  type DaemonSet,
  FlotillaError,
  type InstanceType,
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
  subtractResources,
  type Taint,
} from '../../core/index.ts';
import { makeManualClock } from '../../ports/clock.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodeOverlay,
  ClusterNodePool,
} from '../../ports/cluster.ts';
import { kubeletProblems } from '../../usecases/nodeclass/kubelet.ts';
import { resolveNodeClassStatus } from '../../usecases/nodeclass/status.ts';
import {
  buildSchedulingInput,
  type ClusterState,
  poolInstanceTypes,
} from '../../usecases/state/cluster-state.ts';
import { unschedulableMessage } from '../../usecases/state/eligibility.ts';
import { expectedCapacityType } from '../../usecases/state/new-nodeclaim.ts';
import {
  convert,
  fieldProblem,
  isFinished,
  isPendingForPlan,
  kindOf,
  type Located,
  nameOf,
  newestTimestamp,
  type PlanFile,
  PlanInputError,
  type PlanProblem,
  readObjects,
  withUid,
} from './input.ts';
import { resolveTopology, type TopologySource } from './topology.ts';

// `flotilla plan`: what Flotilla would launch for a cluster snapshot (`kubectl get
// pods,nodes,daemonsets -A -o yaml`) and a set of NodePool and EC2NodeClass manifests. It runs the
// provisioner's own pieces (the kube adapter's converters, the scheduler, the in-memory cloud's
// view of the bundled catalog) without touching a cluster or AWS.

export interface PlanOptions {
  /**
   * Prices come from this region of the bundled catalog.
   * @default the region of the snapshot's Nodes (topology.kubernetes.io/region), else DEFAULT_REGION
   */
  readonly region?: string;
  /**
   * Zones every EC2NodeClass has a subnet in, as names (`us-west-2a`) or letters (`a`).
   * @default the zones of the snapshot's Nodes in that region, else a, b and c of the region
   */
  readonly zones?: readonly string[];
  /**
   * Leave out the offerings whose price the bundled catalog only assumes (see
   * CatalogOptions.knownPricesOnly). @default false: they are candidates, marked `priceAssumed`
   */
  readonly knownPricesOnly?: boolean;
  /** Decision time (feeds NodeClaim names). @default the newest creationTimestamp in the snapshot, else 0 */
  readonly nowMs?: number;
  readonly solveOptions?: SolveOptions;
}

/** A NodeClaim Flotilla would create. */
export interface PlannedNodeClaim {
  readonly name: string;
  readonly nodePool: string;
  readonly nodeClass: string;
  /**
   * Cheapest first, each with the price of its cheapest allowed offering, `priceAssumed` when the
   * catalog only assumes that price.
   */
  readonly instanceTypes: readonly (LaunchCandidate & { readonly priceAssumed?: boolean })[];
  /** What the launch most likely gets: reserved, then spot, when allowed and offered. */
  readonly capacityType: string;
  /** Zones the NodeClaim may launch in. */
  readonly zones: readonly string[];
  /** `namespace/name`. */
  readonly pods: readonly string[];
  /** The pods' requests plus DaemonSet overhead. */
  readonly requests: ResourceList;
  /** What the DaemonSets that would run on the NodeClaim request; empty when none would. */
  readonly daemonSetOverhead: ResourceList;
  readonly requirements: readonly NodeSelectorRequirement[];
  /** Requirements the pods added to the NodePool's (instance types left out). */
  readonly fromPods: readonly string[];
  readonly labels: Labels;
  readonly taints: readonly Taint[];
  /** $/hour of the cheapest candidate. */
  readonly priceUsdPerHour: number;
}

/** A candidate's price is assumed when an allowed offering at that price is. */
function markAssumed(
  candidate: LaunchCandidate,
  type: InstanceType | undefined,
  allowed: (capacityType: string) => boolean,
): LaunchCandidate & { readonly priceAssumed?: boolean } {
  const assumed = (type?.offerings ?? []).some(
    (o) =>
      o.priceAssumed === true && o.priceUsdPerHour === candidate.priceUsdPerHour && allowed(o.capacityType),
  );
  return assumed ? { ...candidate, priceAssumed: true } : candidate;
}

export interface PlanResult {
  readonly region: string;
  readonly zones: readonly string[];
  /** Where the region and the zones came from: the options, the snapshot's Nodes, or the default. */
  readonly regionFrom: TopologySource;
  readonly zonesFrom: TopologySource;
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
  /** Offerings with an assumed price were left out (PlanOptions.knownPricesOnly). */
  readonly knownPricesOnly: boolean;
  /** Objects of other kinds in the input, by kind (they do not affect the plan). */
  readonly ignoredKinds: Readonly<Record<string, number>>;
}

const podName = (p: PodRef) => `${p.namespace}/${p.name}`;

/** The region or zones to plan in cannot be used; `fromFlags` when the options named them. */
export class PlanTopologyError extends FlotillaError {
  readonly code = 'PlanTopologyError';

  constructor(
    message: string,
    readonly fromFlags: boolean,
  ) {
    super(message);
  }
}

/** What to say of a snapshot with no Pod and no Node: what it has instead, and what to pass. */
function noPodsOrNodes(items: readonly Located[]): string {
  const kinds = new Map<string, number>();
  for (const item of items) kinds.set(kindOf(item), (kinds.get(kindOf(item)) ?? 0) + 1);
  const has =
    kinds.size === 0
      ? 'it has no objects'
      : `it has ${[...kinds.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([kind, n]) => `${kind} ${n}`)
          .join(', ')}`;
  return `no Pod or Node found (${has}); the snapshot is what \`kubectl get pods,nodes,daemonsets -A -o yaml\` prints, not the manifests a Deployment is made from`;
}

/**
 * Plans the NodeClaims Flotilla would create for the pending pods of a cluster snapshot, with
 * every NodePool in `nodePools` treated as Ready and every EC2NodeClass resolved to subnets in
 * the zones (see PlanOptions) and the EKS-optimized AL2023 images. Instance types and prices come
 * from the bundled catalog for the region.
 * @throws PlanInputError listing every malformed object, with file, line and field, or saying the
 *   snapshot has no Pod or Node.
 * @throws PlanTopologyError when the region is not in the catalog, or a zone not in the region.
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
  const nodeOverlays: ClusterNodeOverlay[] = [];

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
        // A kubelet map the class's controller would refuse is a problem of the input, not left to a class never Ready.
        for (const p of nodeClass === undefined ? [] : kubeletProblems(nodeClass))
          problems.push(fieldProblem(item, ['spec', 'kubelet', ...p.path], p.problem));
        break;
      }
      case 'NodeOverlay': {
        // An overlay the cluster would mark invalid is a problem of the plan's input, not left out.
        const overlay = convert(item, problems, parseNodeOverlay);
        if (overlay?.invalid !== undefined) problems.push({ file: item.file, message: overlay.invalid });
        else if (overlay !== undefined) nodeOverlays.push(overlay);
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
  const podsOrNodes = clusterItems.filter((i) => kindOf(i) === 'Pod' || kindOf(i) === 'Node').length;
  if (podsOrNodes === 0 && !problems.some((p) => p.file === cluster.path)) {
    problems.push({ file: cluster.path, message: noPodsOrNodes(clusterItems) });
  }
  if (problems.length > 0) throw new PlanInputError(problems);
  const topology = resolveTopology({
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.zones === undefined ? {} : { zones: options.zones.join(',') }),
    nodeLabels: nodes.map((n) => n.labels),
  });
  if ('problem' in topology) throw new PlanTopologyError(topology.problem, topology.fromFlags);
  const { region, zones } = topology;

  // NodePools as the provisioner chooses them, once the NodeClass controller has resolved each
  // class (in a fixed network: the plan does not read AWS).
  const clock = makeManualClock(new Date(0));
  const resolver = makeMemoryNodeClassResolver({ zones });
  const cloud = makeMemoryCloud({
    clock,
    clusterName: 'plan',
    catalog: bundledCatalog(region, zones, { knownPricesOnly: options.knownPricesOnly === true }),
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
    nodeOverlays,
    daemonSets,
    namespaceLabels,
  };
  const input = await buildSchedulingInput(state, cloud, {
    nowMs,
    ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
  });
  const skippedNodePools = input.selection.skipped;
  const usable = [...input.nodePools.values()];
  const result = solve(input.solve);

  const poolsByName = new Map(usable.map((p) => [p.pool.name, p]));
  const pendingByName = new Map(pending.map((p) => [podName(p), p]));
  const nodeClaims = result.nodeClaims.map((plan): PlannedNodeClaim => {
    const podRequests = addResources(
      ...plan.pods.flatMap((ref) => {
        const pod = pendingByName.get(podName(ref));
        return pod === undefined ? [] : [computePodRequests(pod)];
      }),
    );
    const daemonSetOverhead = Object.fromEntries(
      Object.entries(subtractResources(plan.requests, podRequests)).filter(([, v]) => v > 0),
    );
    const types = new Map(
      poolInstanceTypes(input, plan.nodePoolName, plan.nodeClassName).map((t) => [t.name, t]),
    );
    const candidates = plan.instanceTypes.flatMap((c) => {
      const t = types.get(c.name);
      return t === undefined ? [] : [t];
    });
    const reqs = Requirements.parse(plan.requirements, {
      object: `nodeClaim "${plan.name}"`,
      field: 'requirements',
    });
    const zoneReq = reqs.get(Label.zone);
    const capacityReq = reqs.get(Label.capacityType);
    const allowedCapacity = (c: string) => capacityReq === undefined || capacityReq.admits(c);
    const claimZones = zones.filter(
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
      instanceTypes: plan.instanceTypes.map((c) => markAssumed(c, types.get(c.name), allowedCapacity)),
      capacityType: expectedCapacityType(plan.requirements, candidates),
      zones: claimZones,
      pods: plan.pods.map(podName),
      requests: plan.requests,
      daemonSetOverhead,
      requirements: plan.requirements,
      fromPods,
      labels: plan.labels,
      taints: plan.taints,
      priceUsdPerHour: plan.instanceTypes[0]?.priceUsdPerHour ?? 0,
    };
  });

  return {
    region,
    zones,
    regionFrom: topology.regionFrom,
    zonesFrom: topology.zonesFrom,
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
    knownPricesOnly: options.knownPricesOnly === true,
    ignoredKinds,
  };
}
