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

let bundledRegions: ReadonlySet<string> | undefined;

/** The regions the bundled catalog has prices for. */
export function bundledCatalogRegions(): ReadonlySet<string> {
  bundledRegions ??= new Set(bundledCatalogRecords().flatMap((t) => Object.keys(t.onDemandPriceUsd)));
  return bundledRegions;
}

/** The bundled catalog in `region`, offered in `zones` as on-demand and spot. */
export function bundledCatalog(region: string, zones: readonly string[]): MemoryCatalog {
  return { kind: 'records', records: bundledCatalogRecords(), region, zones };
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
        nodeClass: settings,
      });
      cache.set(key, types);
    }
    return types;
  };
}
