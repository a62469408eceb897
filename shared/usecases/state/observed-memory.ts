import { type InstanceType, Label, Requirements, Resource } from '../../core/index.ts';
import type { AmiStatus, EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';

// The memory capacity of registered Nodes, in place of the VM overhead estimate: Karpenter applies
// VM_MEMORY_OVERHEAD_PERCENT to a type only until it has seen a registered node of it launched from
// the class's current AMI, and then plans with that node's memory capacity (the smallest seen),
// keyed by the type and the class's AMIs. Flotilla keeps no cache between invocations, so each
// decision learns it again from the Nodes it reads. Those may come from the cluster summary,
// untrusted input: what a Node claims is bounded by the type's memory in the catalog (never more,
// never less than `MAX_OBSERVED_MEMORY_SHORTFALL` below it), and the smallest of the Nodes of a
// key wins: a forged Node raises a type's memory only where no real Node of its key is listed, and
// never past the catalog's (an error of the size of the estimate's own). Pure.

const MiB = 1024 * 1024;

/**
 * How far below the type's memory in the catalog a Node's memory capacity may be and still count
 * (the kernel, the hypervisor and reserved memory such as Graviton's CMA take a few percent; a
 * quarter, or 256 MiB on the smallest types, is far past any of them): the larger of the two.
 */
export const MAX_OBSERVED_MEMORY_SHORTFALL = { fraction: 0.25, bytes: 256 * MiB } as const;

/** Memory capacities of registered Nodes (bytes), by the key of their class's AMIs, then by type. */
export type ObservedMemory = ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;

/**
 * The key a class's observations share, as Karpenter keys them: its resolved AMIs as a set (two
 * classes with the same AMIs share what their nodes show).
 */
export function amiSetKey(amis: readonly AmiStatus[]): string {
  const canonical = amis
    .map((a) =>
      JSON.stringify([
        a.id,
        a.name ?? '',
        a.deprecated === true,
        a.requirements.map((r) => JSON.stringify([r.key, r.operator, [...(r.values ?? [])].sort()])).sort(),
      ]),
    )
    .sort();
  return JSON.stringify(canonical);
}

/** A class's AMIs with their requirements parsed (one that does not parse serves no type). */
type ParsedAmis = readonly { readonly id: string; readonly reqs: Requirements | undefined }[];

function parseAmis(amis: readonly AmiStatus[]): ParsedAmis {
  return amis.map((ami) => {
    try {
      return {
        id: ami.id,
        reqs: Requirements.parse(ami.requirements, { object: `ami "${ami.id}"`, field: 'requirements' }),
      };
    } catch {
      return { id: ami.id, reqs: undefined };
    }
  });
}

/** The AMI the class launches a node with these labels from: the first whose requirements they meet. */
function amiFor(labels: Readonly<Record<string, string>>, amis: ParsedAmis): string | undefined {
  return amis.find((ami) => ami.reqs?.matchesLabels(labels) === true)?.id;
}

/**
 * The memory capacity each registered Node shows (`karpenter.sh/registered: "true"`, a NodeClaim
 * with its provider ID, an EC2NodeClass with resolved AMIs), counted when the NodeClaim's image is
 * the AMI its class launches that type from now, as Karpenter counts it.
 */
export function observeMemory(state: {
  readonly nodes: readonly Pick<ClusterNode, 'providerId' | 'labels' | 'capacity'>[];
  readonly nodeClaims: readonly Pick<ClusterNodeClaim, 'nodeClassRef' | 'status'>[];
  readonly nodeClasses: readonly Pick<EC2NodeClass, 'name' | 'status'>[];
}): ObservedMemory {
  const claims = new Map<string, Pick<ClusterNodeClaim, 'nodeClassRef' | 'status'>>();
  for (const claim of state.nodeClaims) {
    if (claim.status.providerId !== undefined) claims.set(claim.status.providerId, claim);
  }
  const classes = new Map<string, { readonly key: string; readonly amis: ParsedAmis }>();
  for (const c of state.nodeClasses) {
    const amis = c.status?.amis ?? [];
    if (amis.length > 0) classes.set(c.name, { key: amiSetKey(amis), amis: parseAmis(amis) });
  }
  const out = new Map<string, Map<string, number[]>>();
  for (const node of state.nodes) {
    const memory = node.capacity?.[Resource.memory];
    const type = node.labels[Label.instanceType];
    if (node.labels[Label.registered] !== 'true' || memory === undefined || type === undefined) continue;
    const claim = node.providerId === undefined ? undefined : claims.get(node.providerId);
    const nodeClass = claim === undefined ? undefined : classes.get(claim.nodeClassRef.name);
    if (claim === undefined || nodeClass === undefined || claim.status.imageId === undefined) continue;
    if (amiFor(node.labels, nodeClass.amis) !== claim.status.imageId) continue;
    const byType = out.get(nodeClass.key) ?? new Map<string, number[]>();
    const seen = byType.get(type);
    if (seen === undefined) byType.set(type, [memory]);
    else seen.push(memory);
    out.set(nodeClass.key, byType);
  }
  return out;
}

/**
 * The memory capacity to plan a type with from what Nodes showed: the smallest observation within
 * the bounds (see `MAX_OBSERVED_MEMORY_SHORTFALL`), or undefined when none counts or the type's
 * memory in the catalog (`karpenter.k8s.aws/instance-memory`) is unknown.
 */
export function observedMemoryOf(type: InstanceType, observations: readonly number[]): number | undefined {
  const catalogMiB = Number(type.labels[Label.instanceMemory]);
  if (!Number.isFinite(catalogMiB) || catalogMiB <= 0) return undefined;
  const full = catalogMiB * MiB;
  const floor =
    full - Math.max(full * MAX_OBSERVED_MEMORY_SHORTFALL.fraction, MAX_OBSERVED_MEMORY_SHORTFALL.bytes);
  let smallest: number | undefined;
  for (const bytes of observations) {
    if (!Number.isFinite(bytes) || bytes > full || bytes < floor) continue;
    if (smallest === undefined || bytes < smallest) smallest = bytes;
  }
  return smallest;
}

/**
 * A class's instance types with the memory capacity its registered Nodes showed in place of the
 * VM overhead estimate, where they showed one (the rest of the overhead stays as computed); with
 * `lowerOnly`, only where that is less than the estimate.
 */
export function withObservedMemory(
  types: readonly InstanceType[],
  nodeClass: Pick<EC2NodeClass, 'status'>,
  observed: ObservedMemory,
  lowerOnly = false,
): readonly InstanceType[] {
  const amis = nodeClass.status?.amis ?? [];
  const byType = amis.length === 0 ? undefined : observed.get(amiSetKey(amis));
  if (byType === undefined || byType.size === 0) return types;
  return types.map((type) => {
    const seen = byType.get(type.name);
    const memory = seen === undefined ? undefined : observedMemoryOf(type, seen);
    const estimate = type.capacity[Resource.memory];
    if (memory === undefined || memory === estimate) return type;
    if (lowerOnly && estimate !== undefined && memory > estimate) return type;
    return { ...type, capacity: { ...type.capacity, [Resource.memory]: memory } };
  });
}
