export {
  type LaunchTemplateJanitor,
  type RefreshCatalogOptions,
  type RefreshCatalogPorts,
  type RefreshCatalogResult,
  refreshCatalog,
} from './refresh-catalog.ts';
