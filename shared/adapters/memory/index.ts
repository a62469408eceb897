export { type MemoryAlarms, makeMemoryAlarms } from './alarms.ts';
export {
  bundledCatalog,
  bundledCatalogRecords,
  bundledCatalogRegions,
  DEFAULT_REGION,
  MEMORY_NESTED_VIRTUALIZATION_FAMILIES,
  type MemoryCatalog,
  makeCatalogResolver,
  memoryNodeClassSettings,
} from './catalog.ts';
export {
  type CapacityWindow,
  type FleetCall,
  type ForeignInstanceInput,
  launchTags,
  MAX_INSTANCE_TYPES,
  type MemoryCloud,
  type MemoryCloudOptions,
  MemoryTag,
  makeMemoryCloud,
} from './cloud.ts';
export {
  type Manifest,
  type MemoryCluster,
  type MemoryClusterOptions,
  type MemoryKind,
  makeMemoryCluster,
  type StoredEvent,
} from './cluster.ts';
export { makeMemoryLeaseStore } from './lease.ts';
export {
  MEMORY_AL2023_AMIS,
  type MemoryNodeClassResolverOptions,
  makeMemoryNodeClassResolver,
  memoryAl2023Release,
  memoryFamilyAmis,
} from './nodeclass.ts';
export { type MemoryTerminationQueue, makeMemoryTerminationQueue } from './termination-queue.ts';
export { makeMemoryUnavailableOfferings } from './unavailable-offerings.ts';
export { type MemoryWakeUps, makeMemoryWakeUps } from './wake-ups.ts';
