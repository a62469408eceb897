import type { Pod } from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim, DrainPod, ReadResult } from '../../ports/cluster.ts';
import { type ClusterState, type SchedulingInput, toSchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from './candidates.ts';
import type { ClaimConditions } from './claim-view.ts';

// What a disruption pass read from a list (the cluster summary, perhaps: untrusted) replaced, for
// the objects a command or an expiry acts on and counts on, by what the API server says of them:
// each NodeClaim and Node is read with a GET, each Node's pods with podsOnNode. The confirmed world
// is the pass's read with those objects swapped in (the summary's objects the API server does not
// have left out), from which the same pure decision functions decide again. An object that cannot
// be read throws (ClusterApiError): nothing is done on it, and it is never taken for absent.

/** A Node as the API server has it, with the pods it lists on it. */
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

/** Whether a pod the API server lists on a node is one that takes room there. */
function running(p: DrainPod): boolean {
  return p.phase !== 'Succeeded' && p.phase !== 'Failed' && p.deletedAtMs === undefined;
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
    private readonly cluster: Pick<Cluster, 'nodeClaim' | 'node' | 'podsOnNode'>,
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

  /** GETs the Nodes not read yet, and the pods on each. */
  async readNodes(names: Iterable<string>): Promise<void> {
    for (const name of new Set(names)) {
      if (this.nodeReads.has(name)) continue;
      this.requests += 1;
      const node = await this.cluster.node(name);
      if (node === undefined) {
        this.nodeReads.set(name, undefined);
        continue;
      }
      this.requests += 1;
      this.nodeReads.set(name, { node, pods: await this.cluster.podsOnNode(name) });
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
   * as read); a Node's pods are those of the pass's read that the API server lists on it, a pod it
   * lists there that the read did not have makes the Node's room unknown (it takes nothing new),
   * and a Node that is not Ready, is deleting or unschedulable takes nothing new.
   */
  world(): PassWorld {
    const { state, claims, input } = this.base;
    const nodes = state.nodes.flatMap((n) => {
      if (!this.nodeReads.has(n.name)) return [n];
      const read = this.nodeReads.get(n.name);
      return read === undefined ? [] : [confirmedNode(n, read)];
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

/** The Node as the API server has it, with the pods of the pass's read it confirms. */
function confirmedNode(listed: ClusterNode, read: ConfirmedNode): ClusterNode {
  const listedPods = new Map<string, Pod>(listed.pods.map((p) => [p.uid, p]));
  const live = read.pods.items.filter(running);
  const pods = live.flatMap((p) => {
    const pod = listedPods.get(p.uid);
    return pod === undefined ? [] : [pod];
  });
  const unknown = live
    .filter((p) => !listedPods.has(p.uid))
    .map((p) => `pod "${p.namespace}/${p.name}": not in the list read the decision was made on`);
  const unreadable = [
    ...unknown,
    ...read.pods.problems.map((p) => `pods on node ${listed.name}: ${p.message}`),
  ];
  const closed = closedNode(read.node) !== undefined;
  return {
    ...read.node,
    pods,
    ...(unreadable.length === 0 ? {} : { unreadablePods: unreadable }),
    ...(closed ? { unschedulable: true } : {}),
  };
}
