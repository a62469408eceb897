import {
  type RefreshCatalogOptions,
  type RefreshCatalogPorts,
  type RefreshCatalogResult,
  refreshCatalog,
} from './refresh.ts';

// The catalog Lambda's set-up: its ports and settings in, the refresh one invocation runs out. The
// Lambda's handler builds the ports from EC2, the Pricing API and DynamoDB; tests from moto.

/** What one catalog invocation runs. */
export interface Catalog {
  /** Refreshes the offering cache (and retires idle launch templates). */
  readonly refresh: () => Promise<RefreshCatalogResult>;
}

export function setUpCatalog(ports: RefreshCatalogPorts, config: RefreshCatalogOptions = {}): Catalog {
  return { refresh: () => refreshCatalog(ports, config) };
}
