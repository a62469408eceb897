import { createHash } from 'node:crypto';
import {
  type CapacityType,
  computeAllocatable,
  type InstanceType,
  Label,
  type Labels,
  NodeClaimConditionType,
  type NodeClaimPlan,
  type NodeSelectorRequirement,
} from '../../core/index.ts';
import { nodeClassFamily } from '../../ports/ami-family.ts';
import {
  type CloudInstance,
  type EC2NodeClass,
  kubeletConfigMap,
  type LaunchRequest,
} from '../../ports/cloud.ts';
import type {
  ClusterNodePool,
  MetadataPatch,
  NewNodeClaim,
  NodeClaimStatusPatch,
} from '../../ports/cluster.ts';

// The pure half of provisioning: how a solver decision becomes a NodeClaim, a launch request and
// the status written after the launch. No I/O here, so each mapping is unit-tested on its own.

/** Annotation Karpenter sets when minValues was relaxed under the BestEffort policy. */
export const MIN_VALUES_RELAXED_ANNOTATION = 'karpenter.sh/nodeclaim-min-values-relaxed';

/**
 * On a NodeClaim created for pending pods: the uids of those pods (comma-separated, at most
 * MAX_NOMINATED_PODS). While the claim is on its way, later plans put these pods back onto it
 * first (see InFlightNodeClaim.nominatedPodUids), rather than planning for them again.
 */
export const NOMINATED_PODS_ANNOTATION = 'flotilla.io/nominated-pods';
/** Keeps the annotation under about 7 KB; pods past this are planned for as any pending pod. */
export const MAX_NOMINATED_PODS = 200;

/** The pod uids a NodeClaim's nomination annotation names (none when it is absent). */
export function nominatedPodUids(annotations: Readonly<Record<string, string>>): readonly string[] {
  const raw = annotations[NOMINATED_PODS_ANNOTATION];
  return raw === undefined || raw === '' ? [] : raw.split(',');
}

/** The NodeClass label a NodeClaim and its node carry (`karpenter.k8s.aws/ec2nodeclass`). */
const NODE_CLASS_LABEL = Label.nodeClass;

/**
 * The NodeClaim name of one planned claim: `<nodePool>-<10 hex chars>`, a hash of the pool, the
 * sorted uids of its pods, the lease token the decision was made under and the re-planning round.
 * The same decision always gets the same name (and therefore the same EC2 ClientToken), while a
 * re-plan after insufficient capacity gets a new one.
 */
export function nodeClaimName(input: {
  readonly nodePoolName: string;
  readonly podUids: readonly string[];
  readonly leaseToken: number;
  readonly round: number;
}): string {
  const digest = createHash('sha256')
    .update(
      [input.nodePoolName, String(input.leaseToken), String(input.round), ...[...input.podUids].sort()].join(
        '\n',
      ),
    )
    .digest('hex')
    .slice(0, 10);
  // A Kubernetes name is at most 253 characters; leave room for the suffix.
  return `${input.nodePoolName.slice(0, 200)}-${digest}`;
}

/**
 * Version of {@link nodePoolHash}. Karpenter's own hash (version `v3`) is an FNV hash of Go
 * structures; Flotilla's is not byte-compatible with it, so it carries its own version: a drift
 * check compares hashes only when versions match, and NodeClaims Karpenter made are not
 * mistaken for drifted.
 */
export const NODEPOOL_HASH_VERSION = 'flotilla-v2';

/**
 * The hash of what a NodePool's template puts on its nodes, as Karpenter's
 * `karpenter.sh/nodepool-hash`: template labels and annotations, taints, startup taints,
 * expireAfter, terminationGracePeriod and the NodeClass reference. Requirements are left out, as in
 * Karpenter: a NodeClaim drifts only when its labels no longer satisfy them (RequirementsDrifted),
 * so widening a requirement replaces nothing. Behavioural fields (weight, limits, disruption) are
 * left out too, so changing them never makes nodes look drifted.
 * Independent of the order of labels and taints. A decimal string.
 */
export function nodePoolHash(pool: ClusterNodePool): string {
  const sortedEntries = (labels: Labels | undefined) =>
    Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const taints = (list: readonly { key: string; value?: string; effect: string }[] | undefined) =>
    (list ?? []).map((t) => [t.key, t.value ?? '', t.effect].join('\u0000')).sort();
  const canonical = JSON.stringify({
    labels: sortedEntries(pool.pool.labels),
    annotations: sortedEntries(pool.templateAnnotations),
    taints: taints(pool.pool.taints),
    startupTaints: taints(pool.pool.startupTaints),
    expireAfter: pool.expireAfter,
    terminationGracePeriod: pool.terminationGracePeriod ?? null,
    nodeClassRef: [pool.nodeClassRef.group, pool.nodeClassRef.kind, pool.nodeClassRef.name],
  });
  const digest = createHash('sha256').update(canonical).digest('hex').slice(0, 16);
  return BigInt(`0x${digest}`).toString(10);
}

/** On a NodeClaim: the hash of the EC2NodeClass it was launched from, and the hash's version. */
export const NODECLASS_HASH_ANNOTATION = 'karpenter.k8s.aws/ec2nodeclass-hash';
export const NODECLASS_HASH_VERSION_ANNOTATION = 'karpenter.k8s.aws/ec2nodeclass-hash-version';
/** Flotilla's own version: its hash is never compared with one Karpenter wrote. */
export const NODECLASS_HASH_VERSION = 'flotilla-v1';

/**
 * The hash of what an EC2NodeClass puts on an instance directly: AMI family (as resolved, so an
 * alias and the same `amiFamily` hash alike), user data, tags,
 * kubelet settings, block devices, metadata options, public IP, monitoring, role and instance
 * profile, and when set the instance-store policy, network interfaces, CPU options, enclave options,
 * connection tracking and fleet context. Selector terms are left out, as in Karpenter: what they
 * select drifts through the resolved status instead (AMI, subnet, security-group and
 * placement-group drift), and so is `ipPrefixCount` (Karpenter does not hash it either). A
 * decimal string.
 */
export function nodeClassHash(nodeClass: EC2NodeClass): string {
  const spec = nodeClass.spec;
  const canonical = canonicalJson({
    amiFamily: nodeClassFamily(spec) ?? null,
    userData: spec.userData ?? null,
    tags: spec.tags ?? {},
    // The open map as the manifest holds it: a class with only v1.14's typed fields hashes as it
    // did, and a field only AL2023 passes on changes the hash as it changes the node.
    kubelet: spec.kubelet === undefined ? null : kubeletConfigMap(spec.kubelet),
    blockDeviceMappings: spec.blockDeviceMappings ?? [],
    metadataOptions: spec.metadataOptions,
    associatePublicIPAddress: spec.associatePublicIPAddress ?? null,
    detailedMonitoring: spec.detailedMonitoring ?? null,
    role: spec.role ?? null,
    instanceProfile: spec.instanceProfile ?? null,
    // Hashed only when set, so that classes without them keep the hash they had.
    ...(spec.instanceStorePolicy === undefined ? {} : { instanceStorePolicy: spec.instanceStorePolicy }),
    ...(spec.networkInterfaces === undefined ? {} : { networkInterfaces: spec.networkInterfaces }),
    ...(spec.cpuOptions === undefined ? {} : { cpuOptions: spec.cpuOptions }),
    ...(spec.enclaveOptions === undefined ? {} : { enclaveOptions: spec.enclaveOptions }),
    ...(spec.connectionTracking === undefined ? {} : { connectionTracking: spec.connectionTracking }),
    ...(spec.context === undefined ? {} : { context: spec.context }),
  });
  const digest = createHash('sha256').update(canonical).digest('hex').slice(0, 16);
  return BigInt(`0x${digest}`).toString(10);
}

/** JSON with object keys sorted at every level, so equal values hash equally. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** The NodeClaim to create for a plan, in Karpenter's v1 shape (see toNodeClaimManifest). */
export function toNewNodeClaim(
  name: string,
  plan: NodeClaimPlan,
  pool: ClusterNodePool,
  nodeClass?: EC2NodeClass,
): NewNodeClaim {
  return {
    name,
    nodePool: { name: pool.pool.name, uid: pool.uid },
    nodeClassRef: pool.nodeClassRef,
    labels: plan.labels,
    annotations: {
      ...pool.templateAnnotations,
      // As Karpenter's scheduler writes it on every NodeClaim it plans: whether minValues were relaxed.
      [MIN_VALUES_RELAXED_ANNOTATION]: plan.minValuesRelaxed ? 'true' : 'false',
      ...(plan.pods.length === 0
        ? {}
        : {
            [NOMINATED_PODS_ANNOTATION]: plan.pods
              .slice(0, MAX_NOMINATED_PODS)
              .map((p) => p.uid)
              .join(','),
          }),
      ...(nodeClass === undefined
        ? {}
        : {
            [NODECLASS_HASH_ANNOTATION]: nodeClassHash(nodeClass),
            [NODECLASS_HASH_VERSION_ANNOTATION]: NODECLASS_HASH_VERSION,
          }),
    },
    nodePoolHash: { hash: nodePoolHash(pool), version: NODEPOOL_HASH_VERSION },
    requirements: plan.requirements,
    requests: plan.requests,
    taints: plan.taints,
    startupTaints: plan.startupTaints,
    expireAfter: pool.expireAfter,
    ...(pool.terminationGracePeriod === undefined
      ? {}
      : { terminationGracePeriod: pool.terminationGracePeriod }),
  };
}

/**
 * The launch request for a plan. Candidates keep the plan's order (cheapest first); a candidate
 * the NodeClass no longer offers is left out.
 * @throws Error never; an empty `instanceTypes` is for the caller to refuse (see missingTypes).
 */
export function toLaunchRequest(
  name: string,
  plan: NodeClaimPlan,
  nodeClass: EC2NodeClass,
  instanceTypes: ReadonlyMap<string, InstanceType>,
): LaunchRequest {
  return {
    nodeClaimName: name,
    nodePoolName: plan.nodePoolName,
    nodeClass,
    instanceTypes: plan.instanceTypes.flatMap((c) => {
      const type = instanceTypes.get(c.name);
      return type === undefined ? [] : [type];
    }),
    requirements: plan.requirements,
    labels: { ...plan.labels, [Label.nodePool]: plan.nodePoolName, [NODE_CLASS_LABEL]: nodeClass.name },
    taints: plan.taints,
    startupTaints: plan.startupTaints,
    requests: plan.requests,
  };
}

function allowedValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
): Set<string> | undefined {
  let allowed: Set<string> | undefined;
  for (const r of requirements) {
    if (r.key !== key) continue;
    if (r.operator === 'In') {
      const values = new Set(r.values ?? []);
      allowed = allowed === undefined ? values : new Set([...allowed].filter((v) => values.has(v)));
    } else if (r.operator === 'NotIn') {
      const excluded = new Set(r.values ?? []);
      allowed = new Set([...(allowed ?? ['reserved', 'spot', 'on-demand'])].filter((v) => !excluded.has(v)));
    } else if (r.operator === 'DoesNotExist') {
      allowed = new Set();
    }
  }
  return allowed;
}

/**
 * The capacity type a launch will most likely use, as the AWS provider chooses it: `reserved`,
 * then `spot`, when the requirements allow it and a candidate has an available offering of it;
 * else `on-demand`. For the decision log only; the launched instance says what it really got.
 */
export function expectedCapacityType(
  requirements: readonly NodeSelectorRequirement[],
  candidates: readonly InstanceType[],
): CapacityType {
  const allowed = allowedValues(requirements, Label.capacityType);
  for (const type of ['reserved', 'spot'] as const) {
    if (allowed !== undefined && !allowed.has(type)) continue;
    if (allowed === undefined && type === 'reserved') continue;
    if (candidates.some((c) => c.offerings.some((o) => o.available && o.capacityType === type))) return type;
  }
  return 'on-demand';
}

/**
 * Whether a planned NodeClaim would now launch on another capacity type than the one it was
 * planned for: its candidates had an available offering of that type when the plan was made
 * (`plannedTypes`) and have none now (`currentTypes`, after insufficient capacity backed offerings
 * off). Such a claim was sized and priced for the capacity it can no longer get (spot-sized nodes
 * launched on-demand); its pods are better planned again with the offerings as they are now.
 */
export function fallsBack(
  plan: Pick<NodeClaimPlan, 'requirements' | 'instanceTypes'>,
  plannedTypes: ReadonlyMap<string, InstanceType>,
  currentTypes: ReadonlyMap<string, InstanceType>,
): boolean {
  const candidates = (types: ReadonlyMap<string, InstanceType>) =>
    plan.instanceTypes.flatMap((c) => {
      const type = types.get(c.name);
      return type === undefined ? [] : [type];
    });
  return (
    expectedCapacityType(plan.requirements, candidates(plannedTypes)) !==
    expectedCapacityType(plan.requirements, candidates(currentTypes))
  );
}

/**
 * The NodeClaim status after a successful launch: provider and image ids, capacity and
 * allocatable of the launched type, and `Launched=True`.
 */
export function launchedStatus(
  instance: CloudInstance,
  type: InstanceType | undefined,
): NodeClaimStatusPatch {
  return {
    providerId: instance.providerId,
    ...(instance.imageId === undefined ? {} : { imageId: instance.imageId }),
    ...(type === undefined ? {} : { capacity: type.capacity, allocatable: computeAllocatable(type) }),
    conditions: [
      {
        type: NodeClaimConditionType.launched,
        status: 'True',
        reason: NodeClaimConditionType.launched,
        message: '',
      },
    ],
  };
}

/**
 * Labels the cloud resolved at launch (instance type labels, zone, capacity type, for a node
 * in a capacity reservation its id, type and whether it is interruptible, and in a `partition` placement group the partition
 * EC2 put it in, as Karpenter's registration hook reads it from the instance), merged under
 * the plan's own labels: a label the user set on the NodePool wins, as in Karpenter.
 */
export function launchedLabels(
  instance: CloudInstance,
  type: InstanceType | undefined,
  planLabels: Labels,
): MetadataPatch {
  const resolved: Record<string, string> = {
    ...(type?.labels ?? {}),
    [Label.instanceType]: instance.instanceType,
    [Label.zone]: instance.zone,
    [Label.capacityType]: instance.capacityType,
    ...(instance.capacityReservationId === undefined
      ? {}
      : {
          [Label.capacityReservationId]: instance.capacityReservationId,
          [Label.capacityReservationType]: instance.capacityReservationType ?? 'default',
          [Label.capacityReservationInterruptible]: String(
            instance.capacityReservationInterruptible === true,
          ),
        }),
    ...(instance.placementGroup?.partition === undefined
      ? {}
      : { [Label.placementGroupPartition]: instance.placementGroup.partition }),
  };
  for (const key of Object.keys(planLabels)) delete resolved[key];
  return { labels: resolved };
}
