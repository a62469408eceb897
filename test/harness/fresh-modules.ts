import { vi } from 'vitest';

// First setup file of the harness tests. A harness worker runs its files one after another in one
// process (isolate: false): loading the product, the SDK and the Kubernetes client once per worker
// instead of once per file. Each file still gets the project's own modules evaluated afresh, so no
// per-process cache of the product (a catalog generation, a launch template it made, a client
// bound to a server) outlives the moto and cluster state of the file before. Packages in
// node_modules are loaded once and kept; iam-check.ts patches the SDK's send so that a second
// file's patch replaces the first.
vi.resetModules();
