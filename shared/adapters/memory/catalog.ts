import { readFileSync } from 'node:fs';
import {
  type CapacityType,
  type CatalogInstanceType,
  catalogHardware,
  catalogLabels,
  catalogOfferings,
  type InstanceType,
  type NodeClassSettings,
} from '../../core/index.ts';
import { nodeClassFamily } from '../../ports/ami-family.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import {
  classInstanceType,
  classShape,
  type ProviderSettings,
  type TypeHardware,
} from '../class-instance-types.ts';
import { nodeClassSettings } from '../launch-plan.ts';

/** Where the in-memory cloud's instance types come from. */
export type MemoryCatalog =
  | {
      /** Catalog records (the bundled catalog by default), resolved per NodeClass kubelet settings. */
      readonly kind: 'records';
      readonly records: readonly CatalogInstanceType[];
      /** Region whose prices are used, e.g. `us-east-1`. */
      readonly region: string;
      /** Zones every type is offered in. */
      readonly zones: readonly string[];
      /** @default ['on-demand', 'spot'] */
      readonly capacityTypes?: readonly CapacityType[];
      /** Leave out offerings whose price the catalog only assumes (see CatalogOptions). @default false */
      readonly knownPricesOnly?: boolean;
    }
  | {
      /** Instance types given as they are (capacity and overhead do not change per NodeClass). */
      readonly kind: 'types';
      readonly instanceTypes: readonly InstanceType[];
    };

let bundled: readonly CatalogInstanceType[] | undefined;

/** The records of `shared/catalog/instance-types.json`, read once. */
export function bundledCatalogRecords(): readonly CatalogInstanceType[] {
  if (bundled === undefined) {
    const url = new URL('../../catalog/instance-types.json', import.meta.url);
    bundled = JSON.parse(readFileSync(url, 'utf8')) as CatalogInstanceType[];
  }
  return bundled;
}

/** The region the simulator and `flotilla plan` use when given none. */
export const DEFAULT_REGION = 'us-east-1';

let regions: ReadonlyMap<string, readonly string[]> | undefined;

/**
 * The regions the bundled catalog has prices for, each with its zones named `<region>a`,
 * `<region>b`, …: as many as the highest zone id the catalog lists there (`use1-az6`: six), at
 * least three.
 */
export function bundledCatalogRegions(): ReadonlyMap<string, readonly string[]> {
  if (regions === undefined) {
    const zoneCounts = new Map<string, number>();
    for (const record of bundledCatalogRecords()) {
      for (const region of Object.keys(record.onDemandPriceUsd)) {
        const ids = record.zones?.[region];
        const highest = Math.max(0, ...(ids ?? []).map((id) => Number(/-az(\d+)$/.exec(id)?.[1] ?? 0)));
        zoneCounts.set(region, Math.max(zoneCounts.get(region) ?? 0, highest));
      }
    }
    regions = new Map(
      [...zoneCounts.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([region, count]) => [
          region,
          Array.from({ length: Math.max(count, 3) }, (_, i) => `${region}${String.fromCharCode(97 + i)}`),
        ]),
    );
  }
  return regions;
}

/**
 * The bundled catalog in `region`, offered in `zones` as on-demand and spot; with
 * `knownPricesOnly`, without the offerings whose price it only assumes.
 */
export function bundledCatalog(
  region: string,
  zones: readonly string[],
  options: { readonly knownPricesOnly?: boolean } = {},
): MemoryCatalog {
  return {
    kind: 'records',
    records: bundledCatalogRecords(),
    region,
    zones,
    ...(options.knownPricesOnly === true ? { knownPricesOnly: true } : {}),
  };
}

/**
 * Families whose processors support nested virtualization (`cpuOptions.nestedVirtualization:
 * enabled`). The bundled catalog does not record the processor feature EC2 reports, so the twin
 * assumes it for the 8th-generation Intel families EC2 announced it on.
 */
export const MEMORY_NESTED_VIRTUALIZATION_FAMILIES: ReadonlySet<string> = new Set(['c8i', 'm8i', 'r8i']);

/**
 * The NodeClass settings the capacity model reads (kubelet reservations, root volume size), as
 * the AWS adapter derives them.
 * @throws InvalidQuantityError naming the NodeClass field.
 */
export function memoryNodeClassSettings(nodeClass: EC2NodeClass): NodeClassSettings {
  return nodeClassSettings(nodeClass, nodeClassFamily(nodeClass.spec));
}

/** A catalog record as the hardware the NodeClass shaping reads. */
function recordHardware(r: CatalogInstanceType, region: string): TypeHardware {
  const base = catalogHardware(r);
  return {
    name: r.name,
    arch: r.arch,
    vcpu: r.vcpu,
    memoryMiB: r.memoryMiB,
    labels: catalogLabels(r, region),
    eniMaxPods: base.eniMaxPods,
    enis: r.enis ?? 0,
    ipv4PerEni: r.ipv4PerEni ?? 0,
    extended: base.extended ?? {},
    efaCount: r.efaCount ?? 0,
    ...(MEMORY_NESTED_VIRTUALIZATION_FAMILIES.has(r.family) ? { nestedVirtualization: true } : {}),
    // The bundled records do not carry EC2's NitroEnclavesSupport, and no rule from AWS
    // documentation was found to derive it by, so a class with `enclaveOptions.enabled` is offered
    // no type in the simulator (support unknown is not offered) and no type has the
    // `karpenter.k8s.aws/nitro-sandbox` label; a record that carries it says it.
    ...(r.nitroEnclaves === undefined ? {} : { nitroEnclaves: r.nitroEnclaves }),
    localNvmeGiB: r.localNvmeGiB ?? 0,
  };
}

/** What of a NodeClass shapes its instance types (the cache key of its resolved catalog). */
function shapeKey(nodeClass: EC2NodeClass): string {
  return JSON.stringify({ spec: nodeClass.spec, placementGroups: nodeClass.status?.placementGroups });
}

/**
 * The class with an image for every type: the resolved catalog does not depend on which AMIs the
 * class resolved to now (the cloud matches types to them per call), so an unresolved class, as a
 * scenario check reads it, shapes the same types.
 */
function anyImage(nodeClass: EC2NodeClass): EC2NodeClass {
  return {
    ...nodeClass,
    status: {
      subnets: [],
      securityGroups: [],
      conditions: [],
      ...nodeClass.status,
      amis: [{ id: 'any', requirements: [] }],
    },
  };
}

/**
 * Resolves a catalog into the instance types one NodeClass launches, shaped as the AWS adapter
 * shapes them (AMI family, AMIs, launch settings, kubelet, placement group), caching per class
 * configuration, under the cloud provider's settings (VM memory overhead, reserved ENIs). Offerings
 * are the catalog's on-demand and spot ones, in every zone; reserved offerings and back-offs are
 * the cloud's to add per call.
 */
export function makeCatalogResolver(
  catalog: MemoryCatalog,
  provider: ProviderSettings = {},
): (nodeClass: EC2NodeClass) => readonly InstanceType[] {
  if (catalog.kind === 'types') return () => catalog.instanceTypes;
  const cache = new Map<string, readonly InstanceType[]>();
  const options = {
    region: catalog.region,
    zones: catalog.zones,
    ...(catalog.capacityTypes === undefined ? {} : { capacityTypes: catalog.capacityTypes }),
    ...(catalog.knownPricesOnly === true ? { knownPricesOnly: true } : {}),
  };
  return (nodeClass) => {
    const key = shapeKey(nodeClass);
    let types = cache.get(key);
    if (types === undefined) {
      const shape = classShape(anyImage(nodeClass), nodeClassFamily(nodeClass.spec), provider);
      const out: InstanceType[] = [];
      for (const record of catalog.records) {
        const offerings = catalogOfferings(record, options);
        if (offerings === undefined || offerings.length === 0) continue;
        const shaped = classInstanceType(recordHardware(record, catalog.region), offerings, shape, new Set());
        if (shaped !== undefined) out.push(shaped);
      }
      types = out;
      cache.set(key, types);
    }
    return types;
  };
}
