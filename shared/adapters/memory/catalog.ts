import { readFileSync } from 'node:fs';
import {
  type CapacityType,
  type CatalogInstanceType,
  type InstanceType,
  instanceTypesFromCatalog,
  type NodeClassSettings,
} from '../../core/index.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
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

function isBottlerocket(nodeClass: EC2NodeClass): boolean {
  const alias = nodeClass.spec.amiSelectorTerms.find((t) => t.alias !== undefined)?.alias;
  return alias === undefined
    ? nodeClass.spec.amiFamily === 'Bottlerocket'
    : alias.startsWith('bottlerocket@');
}

/**
 * The NodeClass settings the capacity model reads (kubelet reservations, root volume size), as
 * the AWS adapter derives them.
 * @throws InvalidQuantityError naming the NodeClass field.
 */
export function memoryNodeClassSettings(nodeClass: EC2NodeClass): NodeClassSettings {
  return nodeClassSettings(nodeClass, isBottlerocket(nodeClass) ? 'Bottlerocket' : undefined);
}

/** Resolves a catalog into instance types for one NodeClass's settings, caching per settings. */
export function makeCatalogResolver(
  catalog: MemoryCatalog,
): (nodeClass: EC2NodeClass) => readonly InstanceType[] {
  if (catalog.kind === 'types') return () => catalog.instanceTypes;
  const cache = new Map<string, readonly InstanceType[]>();
  return (nodeClass) => {
    const settings = memoryNodeClassSettings(nodeClass);
    const key = JSON.stringify(settings);
    let types = cache.get(key);
    if (types === undefined) {
      types = instanceTypesFromCatalog(catalog.records, {
        region: catalog.region,
        zones: catalog.zones,
        ...(catalog.capacityTypes === undefined ? {} : { capacityTypes: catalog.capacityTypes }),
        ...(catalog.knownPricesOnly === true ? { knownPricesOnly: true } : {}),
        nodeClass: settings,
      });
      cache.set(key, types);
    }
    return types;
  };
}
