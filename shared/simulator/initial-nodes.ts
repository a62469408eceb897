import {
  bundledCatalogRecords,
  launchTags,
  type MemoryCloud,
  type MemoryCluster,
} from '../adapters/memory/index.ts';
import { toQuantityMap } from '../apis/index.ts';
import {
  computeAllocatable,
  type InstanceType,
  instanceTypesFromCatalog,
  Label,
  type NodeClaimPlan,
  type NodeSelectorRequirement,
} from '../core/index.ts';
import type { EC2NodeClass } from '../ports/cloud.ts';
import { launchedLabels, launchedStatus, toNewNodeClaim } from '../usecases/state/new-nodeclaim.ts';
import type { InitialNode, Scenario } from './scenario-types.ts';

// The nodes a scenario's cluster has when the run starts. A node of a NodePool is Flotilla's: its
// NodeClaim, as the provisioner would have created it for that one offering, with the instance
// it launched (tagged as Flotilla tags it, on the EC2NodeClass's current image, subnet and
// security groups) and the launch written back as the provisioner writes it; its kubelet registers
// the Node as for any launch. Any other node is foreign (a Cluster Autoscaler node group's, say):
// an untagged instance and a Node that needs no NodeClaim, which Flotilla must never touch.

const cache = new Map<string, ReadonlyMap<string, InstanceType>>();

/**
 * The bundled catalog's instance types in `region`, with the default kubelet reservations: the
 * capacity and labels of a node Flotilla did not launch.
 */
export function foreignNodeTypes(
  region: string,
  zones: readonly string[],
): ReadonlyMap<string, InstanceType> {
  const key = `${region}/${zones.join(',')}`;
  let types = cache.get(key);
  if (types === undefined) {
    types = new Map(
      instanceTypesFromCatalog(bundledCatalogRecords(), { region, zones }).map((t) => [t.name, t]),
    );
    cache.set(key, types);
  }
  return types;
}

/** Keys the initial node's own offering pins in its NodeClaim's requirements. */
const PINNED = new Set<string>([Label.instanceType, Label.zone, Label.capacityType]);

/** Labels from the requirements that allow one value, as the provisioner's plan labels them. */
function singleValued(requirements: readonly NodeSelectorRequirement[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const r of requirements) {
    const only = r.values?.[0];
    if (r.operator === 'In' && r.values?.length === 1 && only !== undefined) labels[r.key] = only;
  }
  return labels;
}

/** The image of `nodeClass` that serves `type` (its architecture), as a launch would choose it. */
function imageFor(nodeClass: EC2NodeClass, type: InstanceType): string | undefined {
  const arch = type.labels[Label.arch];
  const amis = nodeClass.status?.amis ?? [];
  const serving = amis.find((ami) =>
    ami.requirements.every(
      (r) =>
        r.key !== Label.arch || r.operator !== 'In' || arch === undefined || (r.values ?? []).includes(arch),
    ),
  );
  return (serving ?? amis[0])?.id;
}

/**
 * Puts the scenario's initial nodes into the account and the cluster, launched `bootDelayMs`
 * before now so that their instances run at once. Needs the EC2NodeClasses resolved (the
 * controllers pass has run). The scenario was checked: its NodePools and instance types exist.
 */
export async function seedInitialNodes(options: {
  readonly scenario: Scenario;
  readonly cluster: MemoryCluster;
  readonly cloud: MemoryCloud;
  readonly clusterName: string;
  readonly nowMs: number;
}): Promise<void> {
  const { scenario, cluster, cloud } = options;
  const launchTime = new Date(options.nowMs - scenario.bootDelayMs);
  const pools = new Map((await cluster.nodePools()).items.map((p) => [p.pool.name, p]));
  const classes = new Map((await cluster.nodeClasses()).items.map((c) => [c.name, c]));
  for (const node of scenario.nodes) {
    const pool = node.nodePool === undefined ? undefined : pools.get(node.nodePool);
    if (pool === undefined) {
      addForeignNode(options, node, launchTime);
      continue;
    }
    const nodeClass = classes.get(pool.nodeClassRef.name);
    if (nodeClass === undefined) continue;
    const type = (await cloud.instanceTypes(nodeClass)).find((t) => t.name === node.instanceType);
    if (type === undefined) continue;
    const requirements: NodeSelectorRequirement[] = [
      ...pool.pool.requirements.filter((r) => !PINNED.has(r.key)),
      { key: Label.instanceType, operator: 'In', values: [node.instanceType] },
      { key: Label.zone, operator: 'In', values: [node.zone] },
      { key: Label.capacityType, operator: 'In', values: [node.capacityType] },
    ];
    const price = type.offerings.find((o) => o.zone === node.zone && o.capacityType === node.capacityType);
    const plan: NodeClaimPlan = {
      name: node.name,
      nodePoolName: pool.pool.name,
      nodeClassName: nodeClass.name,
      labels: { ...(pool.pool.labels ?? {}), ...singleValued(requirements) },
      requirements,
      taints: pool.pool.taints ?? [],
      startupTaints: pool.pool.startupTaints ?? [],
      pods: [],
      requests: {},
      instanceTypes: [{ name: type.name, priceUsdPerHour: price?.priceUsdPerHour ?? 0 }],
      minValuesRelaxed: false,
    };
    await cluster.createNodeClaim(toNewNodeClaim(node.name, plan, pool, nodeClass));
    const subnetId = nodeClass.status?.subnets.find((s) => s.zone === node.zone)?.id;
    const imageId = imageFor(nodeClass, type);
    const instance = cloud.addForeignInstance({
      instanceType: node.instanceType,
      zone: node.zone,
      capacityType: node.capacityType,
      launchTime,
      tags: launchTags(
        {
          nodeClaimName: node.name,
          nodePoolName: pool.pool.name,
          nodeClass,
          instanceTypes: [type],
          requirements,
          labels: plan.labels,
          taints: plan.taints,
          startupTaints: plan.startupTaints,
        },
        options.clusterName,
      ),
      ...(imageId === undefined ? {} : { imageId }),
      ...(subnetId === undefined ? {} : { subnetId }),
      securityGroupIds: (nodeClass.status?.securityGroups ?? []).map((g) => g.id),
    });
    await cluster.patchNodeClaimMetadata(node.name, launchedLabels(instance, type, plan.labels));
    await cluster.patchNodeClaimStatus(node.name, launchedStatus(instance, type));
  }
}

/** A node Flotilla did not launch: an untagged instance and its Node, Ready. */
function addForeignNode(
  options: { readonly scenario: Scenario; readonly cluster: MemoryCluster; readonly cloud: MemoryCloud },
  node: InitialNode,
  launchTime: Date,
): void {
  const { scenario, cluster, cloud } = options;
  const type = foreignNodeTypes(scenario.region, scenario.zones).get(node.instanceType);
  if (type === undefined) return;
  const instance = cloud.addForeignInstance({
    instanceType: node.instanceType,
    zone: node.zone,
    capacityType: node.capacityType,
    launchTime,
  });
  cluster.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: node.name,
      labels: {
        [Label.os]: 'linux',
        ...(type.labels[Label.arch] === undefined ? {} : { [Label.arch]: type.labels[Label.arch] }),
        [Label.instanceType]: node.instanceType,
        [Label.zone]: node.zone,
        [Label.region]: scenario.region,
        ...node.labels,
        [Label.hostname]: node.name,
      },
    },
    spec: {
      providerID: instance.providerId,
      taints: node.taints.map((t) => ({
        key: t.key,
        effect: t.effect,
        ...(t.value === undefined ? {} : { value: t.value }),
      })),
    },
    status: {
      capacity: toQuantityMap(type.capacity),
      allocatable: toQuantityMap(computeAllocatable(type)),
    },
  });
  cluster.setNodeReady(node.name, true);
}
