import { formatQuantity, parseQuantity, type QuantitySource } from './quantity.ts';

/**
 * Integer amounts per resource name. Units: `cpu` in millicores; `memory` and
 * `ephemeral-storage` in bytes; `pods` and extended resources (`nvidia.com/gpu`,
 * `aws.amazon.com/neuron`, `vpc.amazonaws.com/pod-eni`, …) in whole units. A missing name is 0.
 */
export type ResourceList = Readonly<Record<string, number>>;

/** Well-known resource names. */
export const Resource = {
  cpu: 'cpu',
  memory: 'memory',
  pods: 'pods',
  ephemeralStorage: 'ephemeral-storage',
  nvidiaGpu: 'nvidia.com/gpu',
  amdGpu: 'amd.com/gpu',
  neuron: 'aws.amazon.com/neuron',
  /** NeuronCores: a type's Neuron devices × the cores of each. */
  neuronCore: 'aws.amazon.com/neuroncore',
  podEni: 'vpc.amazonaws.com/pod-eni',
  efa: 'vpc.amazonaws.com/efa',
  /**
   * Nitro Enclaves slots: no instance type has it unless a NodeOverlay adds it; a NodeClaim that
   * requests it launches with enclaves enabled.
   */
  nitroSandbox: 'eks.amazonaws.com/nitro-sandbox',
  /** Only meaningful in NodePool limits: the number of nodes. */
  nodes: 'nodes',
} as const;

/** cpu is counted in millicores; every other resource in base units. */
export function resourceScale(name: string): 'milli' | 'base' {
  return name === Resource.cpu ? 'milli' : 'base';
}

/**
 * Parses a Kubernetes resource map (`{ cpu: "500m", memory: "1Gi" }`) into integers.
 * @throws InvalidQuantityError naming `object` and `field.<resource>`.
 */
export function parseResourceList(
  raw: Readonly<Record<string, string | number>>,
  source: QuantitySource,
): ResourceList {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(raw)) {
    out[name] = parseQuantity(value, resourceScale(name), {
      ...source,
      field: `${source.field}.${name}`,
    });
  }
  return out;
}

/** Component-wise sum. */
export function addResources(...lists: readonly ResourceList[]): ResourceList {
  const out: Record<string, number> = {};
  for (const list of lists) {
    for (const [name, value] of Object.entries(list)) out[name] = (out[name] ?? 0) + value;
  }
  return out;
}

/** Component-wise maximum. */
export function maxResources(...lists: readonly ResourceList[]): ResourceList {
  const out: Record<string, number> = {};
  for (const list of lists) {
    for (const [name, value] of Object.entries(list)) out[name] = Math.max(out[name] ?? 0, value);
  }
  return out;
}

/** `a - b`, floored at zero per resource. */
export function subtractResources(a: ResourceList, b: ResourceList): ResourceList {
  const out: Record<string, number> = { ...a };
  for (const [name, value] of Object.entries(b)) out[name] = Math.max(0, (out[name] ?? 0) - value);
  return out;
}

/** True when every requested amount is within `available` (missing = 0). */
export function fitsResources(requests: ResourceList, available: ResourceList): boolean {
  for (const [name, value] of Object.entries(requests)) {
    if (value > 0 && value > (available[name] ?? 0)) return false;
  }
  return true;
}

/** Human text: `cpu 1.5, memory 3Gi`. Zero amounts are left out. */
export function formatResources(list: ResourceList): string {
  return Object.entries(list)
    .filter(([, v]) => v > 0)
    .sort(([a], [b]) => resourceOrder(a) - resourceOrder(b) || a.localeCompare(b))
    .map(([name, value]) => `${name} ${formatQuantity(name, value)}`)
    .join(', ');
}

function resourceOrder(name: string): number {
  switch (name) {
    case Resource.cpu:
      return 0;
    case Resource.memory:
      return 1;
    case Resource.pods:
      return 2;
    case Resource.ephemeralStorage:
      return 3;
    default:
      return 4;
  }
}
