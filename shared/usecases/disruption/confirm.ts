import type { Cluster, ClusterNode, ClusterNodeClaim, DrainPod, ReadResult } from '../../ports/cluster.ts';
import { type ClusterState, type SchedulingInput, toSchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from './candidates.ts';
import type { ClaimConditions } from './claim-view.ts';

// What a disruption pass read from a list (the cluster summary, perhaps: untrusted) replaced, for
// the objects a command or an expiry acts on and counts on, by what the API server says of them:
// each NodeClaim is read with a GET, each Node with its pods (nodeWithPods: what they request, as
// the API server has it) and the pods as the drain sees them (podsOnNode). The confirmed world
// is the pass's read with those objects swapped in (the summary's objects the API server does not
// have left out), from which the same pure decision functions decide again. An object that cannot
// be read throws (ClusterApiError): nothing is done on it, and it is never taken for absent.

/** A Node as the API server has it: with its pods (their specs), and those pods as the drain sees them. */
export interface ConfirmedNode {
  readonly node: ClusterNode;
  readonly pods: ReadResult<DrainPod>;
}

/** The cluster as a pass decides from it: its read, its NodeClaims with the pass's conditions. */
export interface PassWorld {
  readonly state: ClusterState;
  readonly claims: readonly ClusterNodeClaim[];
  readonly input: SchedulingInput | undefined;
}

/** Why the API server's Node takes no new pods in a confirmed world, if it takes none. */
export function closedNode(node: ClusterNode): string | undefined {
  if (node.deleting) return 'is being deleted';
  if (node.unschedulable === true) return 'is unschedulable';
  if (!node.ready) return 'is not Ready';
  return undefined;
}

/**
 * The reads of one confirmation: every object it read from the API server, by name, undefined for
 * those the API server does not have. Reads each object at most once.
 */
export class Confirmation {
  private readonly claimReads = new Map<string, ClusterNodeClaim | undefined>();
  private readonly nodeReads = new Map<string, ConfirmedNode | undefined>();
  /** Requests made to the API server. */
  requests = 0;

  constructor(
    private readonly cluster: Pick<Cluster, 'nodeClaim' | 'nodeWithPods' | 'podsOnNode'>,
    private readonly base: PassWorld,
    private readonly conditions: ClaimConditions,
    private readonly options: {
      readonly nowMs: number;
      readonly solveOptions?: SchedulingInput['solve']['options'];
    },
  ) {}

  hasClaim(name: string): boolean {
    return this.claimReads.has(name);
  }

  hasNode(name: string): boolean {
    return this.nodeReads.has(name);
  }

  /** The NodeClaim as the API server has it (read before). */
  claim(name: string): ClusterNodeClaim | undefined {
    return this.claimReads.get(name);
  }

  /** The Node as the API server has it (read before). */
  node(name: string): ConfirmedNode | undefined {
    return this.nodeReads.get(name);
  }

  /** GETs the NodeClaims not read yet. */
  async readClaims(names: Iterable<string>): Promise<void> {
    for (const name of new Set(names)) {
      if (this.claimReads.has(name)) continue;
      this.requests += 1;
      this.claimReads.set(name, await this.cluster.nodeClaim(name));
    }
  }

  /** Reads the Nodes not read yet with their pods (three requests each, at once). */
  async readNodes(names: Iterable<string>): Promise<void> {
    for (const name of new Set(names)) {
      if (this.nodeReads.has(name)) continue;
      this.requests += 3;
      const [node, pods] = await Promise.all([
        this.cluster.nodeWithPods(name),
        this.cluster.podsOnNode(name),
      ]);
      this.nodeReads.set(name, node === undefined ? undefined : { node, pods });
    }
  }

  /** The pods on a node read, as podsChanged asks for them (the read already made). */
  podsReader(): Pick<Cluster, 'podsOnNode'> {
    return {
      podsOnNode: async (name) => {
        await this.readNodes([name]);
        return this.nodeReads.get(name)?.pods ?? { items: [], problems: [] };
      },
    };
  }

  /**
   * The pass's world with the objects read swapped in: a NodeClaim or Node the API server does not
   * have is gone; one it has is its object (a NodeClaim's conditions computed on it, with its Node
   * as read); a Node's pods are those the API server has bound to it, with what they request, and
   * a Node that is not Ready, is deleting or unschedulable takes nothing new.
   */
  world(): PassWorld {
    const { state, claims, input } = this.base;
    const nodes = state.nodes.flatMap((n) => {
      if (!this.nodeReads.has(n.name)) return [n];
      const read = this.nodeReads.get(n.name);
      return read === undefined ? [] : [confirmedNode(read)];
    });
    const nodeFor = nodeIndex(nodes);
    const swap = (list: readonly ClusterNodeClaim[], withConditions: boolean) =>
      list.flatMap((c) => {
        if (!this.claimReads.has(c.name)) return [c];
        const fresh = this.claimReads.get(c.name);
        if (fresh === undefined) return [];
        return [withConditions && !fresh.deleting ? this.conditions(fresh, nodeFor(fresh)).view : fresh];
      });
    const confirmedState: ClusterState = { ...state, nodes, nodeClaims: swap(state.nodeClaims, false) };
    return {
      state: confirmedState,
      claims: swap(claims, true),
      input:
        input === undefined
          ? undefined
          : toSchedulingInput(confirmedState, input.selection, input.instanceTypes, {
              nowMs: this.options.nowMs,
              ...(this.options.solveOptions === undefined ? {} : { solveOptions: this.options.solveOptions }),
            }),
    };
  }
}

/**
 * The Node as the API server has it, with its pods as the API server has them (their requests too:
 * nothing of a confirmed Node's room comes from the pass's read); closed to new pods when it is
 * not Ready, is deleting or unschedulable.
 */
function confirmedNode(read: ConfirmedNode): ClusterNode {
  const unreadable = [
    ...(read.node.unreadablePods ?? []),
    ...read.pods.problems.map((p) => `pods on node ${read.node.name}: ${p.message}`),
  ];
  const closed = closedNode(read.node) !== undefined;
  const { unreadablePods: _, ...node } = read.node;
  return {
    ...node,
    ...(unreadable.length === 0 ? {} : { unreadablePods: unreadable }),
    ...(closed ? { unschedulable: true } : {}),
  };
}
