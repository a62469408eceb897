import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type Affinity,
  type CapacityType,
  type CatalogInstanceType,
  type ContainerPort,
  computeCapacityAndOverhead,
  type DaemonSet,
  type ExistingNode,
  type InstanceType,
  instanceTypesFromCatalog,
  Label,
  type Labels,
  type NodeClassSettings,
  type NodePool,
  type NodeSelectorRequirement,
  type Offering,
  type Pod,
  parseResourceList,
  type ResourceList,
  type SolveInput,
  type Taint,
  type Toleration,
  type TopologySpreadConstraint,
  type VolumeTopology,
} from '../../../shared/core/index.ts';

export const REGION = 'us-east-1';
export const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'] as const;

/** `'a'` → `us-east-1a`; anything longer is taken as is. */
export function zoneName(z: string): string {
  return z.length === 1 ? `${REGION}${z}` : z;
}

let catalogCache: CatalogInstanceType[] | undefined;

/** The bundled catalog, parsed once. */
export function loadCatalog(): readonly CatalogInstanceType[] {
  if (catalogCache === undefined) {
    const path = fileURLToPath(new URL('../../../shared/catalog/instance-types.json', import.meta.url));
    catalogCache = JSON.parse(readFileSync(path, 'utf8')) as CatalogInstanceType[];
  }
  return catalogCache;
}

export interface CatalogTypesOptions {
  readonly zones?: readonly string[];
  readonly capacityTypes?: readonly CapacityType[];
  readonly nodeClass?: NodeClassSettings;
  /** Keep only these names (or a predicate over records). */
  readonly names?: readonly string[];
  readonly filter?: (r: CatalogInstanceType) => boolean;
  readonly isUnavailable?: (instanceType: string, zone: string, capacityType: CapacityType) => boolean;
}

/** Domain instance types from the bundled catalog, with on-demand and spot offerings per zone. */
export function catalogInstanceTypes(options: CatalogTypesOptions = {}): InstanceType[] {
  const names = options.names === undefined ? undefined : new Set(options.names);
  const records = loadCatalog().filter(
    (r) => (names === undefined || names.has(r.name)) && (options.filter === undefined || options.filter(r)),
  );
  return instanceTypesFromCatalog(records, {
    region: REGION,
    zones: (options.zones ?? ZONES).map(zoneName),
    ...(options.capacityTypes === undefined ? {} : { capacityTypes: options.capacityTypes }),
    ...(options.nodeClass === undefined ? {} : { nodeClass: options.nodeClass }),
    ...(options.isUnavailable === undefined ? {} : { isUnavailable: options.isUnavailable }),
  });
}

export interface FakeTypeOptions {
  readonly name: string;
  readonly cpu: number;
  readonly memoryGiB: number;
  readonly pods?: number;
  readonly price: number;
  readonly arch?: string;
  readonly zones?: readonly string[];
  readonly capacityTypes?: readonly CapacityType[];
  readonly extended?: ResourceList;
  readonly labels?: Labels;
}

/** A small made-up instance type (Karpenter-style overhead applies). */
export function fakeInstanceType(o: FakeTypeOptions): InstanceType {
  const { capacity, overhead } = computeCapacityAndOverhead({
    vcpu: o.cpu,
    memoryMiB: o.memoryGiB * 1024,
    arch: o.arch ?? 'amd64',
    eniMaxPods: o.pods ?? 110,
    ...(o.extended === undefined ? {} : { extended: o.extended }),
  });
  const offerings: Offering[] = [];
  for (const z of o.zones ?? ZONES) {
    for (const ct of o.capacityTypes ?? ['on-demand']) {
      offerings.push({
        zone: zoneName(z),
        capacityType: ct,
        priceUsdPerHour: ct === 'spot' ? o.price * 0.4 : o.price,
        available: true,
      });
    }
  }
  return {
    name: o.name,
    labels: {
      [Label.instanceType]: o.name,
      [Label.arch]: o.arch ?? 'amd64',
      [Label.os]: 'linux',
      [Label.instanceCpu]: String(o.cpu),
      [Label.instanceFamily]: o.name.split('.')[0] ?? o.name,
      ...(o.labels ?? {}),
    },
    capacity,
    overhead,
    offerings,
  };
}

export interface PodOptions {
  readonly name?: string;
  readonly namespace?: string;
  readonly cpu?: string;
  readonly memory?: string;
  readonly requests?: Readonly<Record<string, string>>;
  readonly labels?: Labels;
  /** Shorthand for `nodeSelector: { topology.kubernetes.io/zone: … }`. */
  readonly zone?: string;
  readonly nodeSelector?: Labels;
  readonly required?: readonly (readonly NodeSelectorRequirement[])[];
  readonly preferred?: readonly {
    readonly weight: number;
    readonly reqs: readonly NodeSelectorRequirement[];
  }[];
  readonly affinity?: Affinity;
  readonly tolerations?: readonly Toleration[];
  readonly spread?: readonly TopologySpreadConstraint[];
  readonly hostPorts?: readonly number[];
  readonly volumeZones?: readonly string[];
  readonly createdAtMs?: number;
}

let podCounter = 0;

/** A pending pod: `pod({ cpu: '500m', zone: 'a' })`. */
export function pod(o: PodOptions = {}): Pod {
  podCounter += 1;
  const name = o.name ?? `pod-${podCounter}`;
  const namespace = o.namespace ?? 'default';
  const raw: Record<string, string> = { ...(o.requests ?? {}) };
  if (o.cpu !== undefined) raw['cpu'] = o.cpu;
  if (o.memory !== undefined) raw['memory'] = o.memory;
  const requests = parseResourceList(raw, { object: `pod "${namespace}/${name}"`, field: 'requests' });
  const nodeSelector: Record<string, string> = { ...(o.nodeSelector ?? {}) };
  if (o.zone !== undefined) nodeSelector[Label.zone] = zoneName(o.zone);
  const ports: ContainerPort[] = (o.hostPorts ?? []).map((p) => ({ containerPort: p, hostPort: p }));
  let affinity: Affinity | undefined = o.affinity;
  if (o.required !== undefined || o.preferred !== undefined) {
    affinity = {
      ...(affinity ?? {}),
      nodeAffinity: {
        ...(o.required === undefined
          ? {}
          : {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: o.required.map((t) => ({ matchExpressions: t })),
              },
            }),
        ...(o.preferred === undefined
          ? {}
          : {
              preferredDuringSchedulingIgnoredDuringExecution: o.preferred.map((p) => ({
                weight: p.weight,
                preference: { matchExpressions: p.reqs },
              })),
            }),
      },
    };
  }
  const volumeTopology: VolumeTopology[] | undefined =
    o.volumeZones === undefined
      ? undefined
      : [
          {
            claimName: `${name}-data`,
            terms: [[{ key: Label.zone, operator: 'In', values: o.volumeZones.map(zoneName) }]],
          },
        ];
  return {
    uid: `uid-${name}-${podCounter}`,
    name,
    namespace,
    createdAtMs: o.createdAtMs ?? podCounter,
    labels: o.labels ?? {},
    containers: [{ name: 'main', requests, ...(ports.length > 0 ? { ports } : {}) }],
    ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector } : {}),
    ...(affinity === undefined ? {} : { affinity }),
    ...(o.tolerations === undefined ? {} : { tolerations: o.tolerations }),
    ...(o.spread === undefined ? {} : { topologySpreadConstraints: o.spread }),
    ...(volumeTopology === undefined ? {} : { volumeTopology }),
  };
}

/** `count` pods built with `pod(options(i))`. */
export function pods(count: number, options: (i: number) => PodOptions): Pod[] {
  return Array.from({ length: count }, (_, i) => pod(options(i)));
}

export interface NodePoolOptions {
  readonly name?: string;
  readonly weight?: number;
  readonly nodeClassName?: string;
  readonly requirements?: readonly NodeSelectorRequirement[];
  readonly labels?: Labels;
  readonly taints?: readonly Taint[];
  readonly startupTaints?: readonly Taint[];
  readonly limits?: Readonly<Record<string, string>>;
}

/** A NodePool (default name `default`, nodeClass `default`). */
export function nodePool(o: NodePoolOptions = {}): NodePool {
  const name = o.name ?? 'default';
  return {
    name,
    nodeClassName: o.nodeClassName ?? 'default',
    requirements: o.requirements ?? [],
    ...(o.weight === undefined ? {} : { weight: o.weight }),
    ...(o.labels === undefined ? {} : { labels: o.labels }),
    ...(o.taints === undefined ? {} : { taints: o.taints }),
    ...(o.startupTaints === undefined ? {} : { startupTaints: o.startupTaints }),
    ...(o.limits === undefined
      ? {}
      : { limits: parseResourceList(o.limits, { object: `nodePool "${name}"`, field: 'spec.limits' }) }),
  };
}

export interface NodeOptions {
  readonly name: string;
  readonly cpu: string;
  readonly memory: string;
  readonly pods?: number;
  readonly zone?: string;
  readonly labels?: Labels;
  readonly taints?: readonly Taint[];
  readonly boundPods?: readonly Pod[];
  readonly nodePoolName?: string;
  readonly initialized?: boolean;
  readonly instanceType?: string;
}

/** An existing node. */
export function node(o: NodeOptions): ExistingNode {
  const allocatable = parseResourceList(
    { cpu: o.cpu, memory: o.memory, pods: String(o.pods ?? 110) },
    { object: `node "${o.name}"`, field: 'status.allocatable' },
  );
  return {
    name: o.name,
    labels: {
      [Label.hostname]: o.name,
      [Label.zone]: zoneName(o.zone ?? 'a'),
      [Label.arch]: 'amd64',
      [Label.os]: 'linux',
      [Label.capacityType]: 'on-demand',
      ...(o.instanceType === undefined ? {} : { [Label.instanceType]: o.instanceType }),
      ...(o.nodePoolName === undefined ? {} : { [Label.nodePool]: o.nodePoolName }),
      ...(o.labels ?? {}),
    },
    ...(o.taints === undefined ? {} : { taints: o.taints }),
    ...(o.nodePoolName === undefined ? {} : { nodePoolName: o.nodePoolName }),
    allocatable,
    pods: o.boundPods ?? [],
    initialized: o.initialized ?? true,
  };
}

/** A DaemonSet whose pods request `cpu`/`memory`. */
export function daemonSet(o: {
  readonly name: string;
  readonly cpu: string;
  readonly memory: string;
  readonly nodeSelector?: Labels;
  readonly tolerations?: readonly Toleration[];
  readonly hostPorts?: readonly number[];
}): DaemonSet {
  const template = pod({
    name: o.name,
    namespace: 'kube-system',
    cpu: o.cpu,
    memory: o.memory,
    ...(o.nodeSelector === undefined ? {} : { nodeSelector: o.nodeSelector }),
    ...(o.tolerations === undefined ? {} : { tolerations: o.tolerations }),
    ...(o.hostPorts === undefined ? {} : { hostPorts: o.hostPorts }),
  });
  return { namespace: 'kube-system', name: o.name, template };
}

/** A SolveInput with one nodeClass `default` unless `instanceTypes` maps others. */
export function solveInput(o: {
  readonly pods: readonly Pod[];
  readonly nodePools?: readonly NodePool[];
  readonly types?: readonly InstanceType[];
  readonly instanceTypes?: ReadonlyMap<string, readonly InstanceType[]>;
  readonly nodes?: readonly ExistingNode[];
  readonly daemonSets?: readonly DaemonSet[];
  readonly options?: SolveInput['options'];
  readonly nodeClaims?: SolveInput['nodeClaims'];
}): SolveInput {
  return {
    pods: o.pods,
    nodePools: o.nodePools ?? [nodePool()],
    instanceTypes: o.instanceTypes ?? new Map([['default', o.types ?? catalogInstanceTypes()]]),
    nowMs: 1_700_000_000_000,
    ...(o.nodes === undefined ? {} : { nodes: o.nodes }),
    ...(o.daemonSets === undefined ? {} : { daemonSets: o.daemonSets }),
    ...(o.options === undefined ? {} : { options: o.options }),
    ...(o.nodeClaims === undefined ? {} : { nodeClaims: o.nodeClaims }),
  };
}

/** Hourly cost of a plan: the cheapest candidate of every NodeClaim. */
export function planCost(result: {
  readonly nodeClaims: readonly { readonly instanceTypes: readonly { readonly priceUsdPerHour: number }[] }[];
}): number {
  return result.nodeClaims.reduce((sum, c) => sum + (c.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
}
