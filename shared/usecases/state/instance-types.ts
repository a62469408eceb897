import type { InstanceType, SolveOptions } from '../../core/index.ts';
import type { Cloud, EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';
import type { NodePoolSelection } from './eligibility.ts';
import { observeMemory, withObservedMemory } from './observed-memory.ts';

// The instance types a scheduling input is built on, read once per EC2NodeClass: those of the
// NodePools that may launch, and, to price running nodes only, those of NodePools left out for
// now (their schedules hold them; or, while a dollar limit applies, any reason at all), so that a
// paused or held pool's nodes still count at their prices.

/** What of the cluster state the read needs. */
type StateRead = Omit<Parameters<typeof observeMemory>[0], 'nodeClasses'> & {
  readonly nodePools: readonly ClusterNodePool[];
  readonly nodeClasses: readonly EC2NodeClass[];
};

/** What of the scheduling options the read needs. */
interface ReadOptions {
  readonly observedMemory?: 'learn' | 'lowerOnly';
  readonly solveOptions?: SolveOptions;
}

/**
 * Instance types per class name, with the memory registered Nodes show (`withObservedMemory`).
 * @throws CloudApiError / CatalogUnavailableError when an eligible pool's class cannot be read; a
 *   class read for pricing only is left out when it cannot be (its nodes then have no price).
 */
export async function readInstanceTypes(
  state: StateRead,
  selection: NodePoolSelection,
  cloud: Pick<Cloud, 'instanceTypes'>,
  options: ReadOptions,
): Promise<Map<string, readonly InstanceType[]>> {
  const observed = observeMemory(state);
  const out = new Map<string, readonly InstanceType[]>();
  const read = async (nodeClass: EC2NodeClass) =>
    withObservedMemory(
      await cloud.instanceTypes(nodeClass),
      nodeClass,
      observed,
      options.observedMemory === 'lowerOnly',
    );
  for (const { nodeClass } of selection.eligible) {
    if (!out.has(nodeClass.name)) out.set(nodeClass.name, await read(nodeClass));
  }
  for (const nodeClass of pricingClasses(state, selection, options)) {
    if (out.has(nodeClass.name)) continue;
    try {
      out.set(nodeClass.name, await read(nodeClass));
    } catch {
      // Pricing only: its nodes go unpriced, and a dollar limit they count against says so.
    }
  }
  return out;
}

function pricingClasses(
  state: StateRead,
  selection: NodePoolSelection,
  options: ReadOptions,
): readonly EC2NodeClass[] {
  const dollarLimited =
    options.solveOptions?.maxCostPerHour !== undefined ||
    state.nodePools.some((p) => p.pool.costLimit !== undefined);
  if (!dollarLimited) return selection.heldClasses ?? [];
  const names = new Set(state.nodePools.map((p) => p.nodeClassRef.name));
  return state.nodeClasses.filter((c) => names.has(c.name));
}
