import { Label } from '../../core/index.ts';
import type {
  Cluster,
  ClusterNode,
  ClusterNodeClaim,
  DrainPod,
  NodeInfo,
  ReadResult,
} from '../../ports/cluster.ts';
import { type ClusterState, type SchedulingInput, toSchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { ClaimConditions } from './claim-view.ts';
import { atMostParallel } from './parallel.ts';

// What a disruption pass read from a list (the cluster summary, perhaps: untrusted) replaced, for
// the objects a command or an expiry acts on and counts on, by what the API server says of them:
// each NodeClaim is read with a GET, each Node with its pods (nodeWithPods: what they request, as
// the API server has it) and a candidate's pods as the drain sees them too (podsOnNode), up to
// READ_PARALLELISM objects at once. The confirmed world
// is the pass's read with those objects swapped in (the summary's objects the API server does not
// have left out), from which the same pure decision functions decide again. A NodePool whose
// budget a command counts on is read whole, in one consistent list of its NodeClaims and one of
// its Nodes (label `karpenter.sh/nodepool`): its nodes, and those being disrupted, are the API
// server's. An object that cannot be read throws (ClusterApiError): nothing is done on it, and it
// is never taken for absent.

/**
 * A Node as the API server has it: with its pods (their specs), and for a candidate's Node those
 * pods as the drain sees them.
 */
export interface ConfirmedNode {
  readonly node: ClusterNode;
  readonly pods?: ReadResult<DrainPod>;
}

/** Objects a confirmation reads at once. */
export const READ_PARALLELISM = 8;

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
  private readonly poolReads = new Map<string, PoolRead>();
  /** Requests made to the API server. */
  requests = 0;

  constructor(
    private readonly cluster: Pick<
      Cluster,
      'nodeClaim' | 'nodeWithPods' | 'podsOnNode' | 'nodeClaims' | 'nodeInfos'
    >,
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

  /** GETs the NodeClaims not read yet, READ_PARALLELISM at once. */
  async readClaims(names: Iterable<string>): Promise<void> {
    const unread = [...new Set(names)].filter((n) => !this.claimReads.has(n));
    await atMostParallel(READ_PARALLELISM, unread, async (name) => {
      this.requests += 1;
      this.claimReads.set(name, await this.cluster.nodeClaim(name));
    });
  }

  /**
   * Reads the Nodes not read yet with their pods (nodeWithPods: two requests each),
   * READ_PARALLELISM at once: the Nodes a plan counts on as destinations.
   */
  async readNodes(names: Iterable<string>): Promise<void> {
    const unread = [...new Set(names)].filter((n) => !this.nodeReads.has(n));
    await atMostParallel(READ_PARALLELISM, unread, async (name) => {
      this.requests += 2;
      const node = await this.cluster.nodeWithPods(name);
      this.nodeReads.set(name, node === undefined ? undefined : { node });
    });
  }

  /**
   * Reads the candidates' Nodes as readNodes, and the pods on each the API server has as the drain
   * sees them (podsOnNode: one request more, for podsChanged), unless it has no such Node.
   */
  async readCandidateNodes(names: Iterable<string>): Promise<void> {
    const all = [...new Set(names)];
    await this.readNodes(all);
    const unread = all.filter((n) => {
      const read = this.nodeReads.get(n);
      return read !== undefined && read.pods === undefined;
    });
    await atMostParallel(READ_PARALLELISM, unread, async (name) => {
      this.requests += 1;
      const pods = await this.cluster.podsOnNode(name);
      const read = this.nodeReads.get(name);
      if (read !== undefined) this.nodeReads.set(name, { ...read, pods });
    });
  }

  /**
   * Lists the NodeClaims and the Nodes of each NodePool not read yet, consistently (two requests
   * each). Why the NodePool's nodes cannot all be counted, if one of them could not be read.
   */
  async readPools(names: Iterable<string>): Promise<string | undefined> {
    for (const nodePool of new Set(names)) {
      if (this.poolReads.has(nodePool)) continue;
      this.requests += 2;
      const [claims, nodes] = await Promise.all([
        this.cluster.nodeClaims({ consistent: true, nodePool }),
        this.cluster.nodeInfos({ consistent: true, nodePool }),
      ]);
      this.poolReads.set(nodePool, { claims: claims.items, nodes: nodes.items });
      const [problem] = [
        ...claims.unreadable.map((u) => `nodeClaim ${u.name}: ${u.problem}`),
        ...[...claims.problems, ...nodes.problems].map((p) => p.message),
      ];
      if (problem !== undefined) return `nodePool ${nodePool}'s nodes cannot all be read (${problem})`;
    }
    return undefined;
  }

  /**
   * What the NodePools' lists replace: their NodeClaims and Nodes by name, and the pass's Nodes
   * they govern (labelled with one of them, or the Node of one of their NodeClaims): those the
   * lists lack are gone. The Nodes the pass did not have come with no pods.
   */
  private pooled(base: readonly ClusterNode[]) {
    const names = new Set(this.poolReads.keys());
    const reads = [...this.poolReads.values()];
    const claims = new Map(reads.flatMap((r) => r.claims.map((c) => [c.name, c] as const)));
    const nodes = new Map(reads.flatMap((r) => r.nodes.map((n) => [n.name, n] as const)));
    const nodeFor = nodeIndex(base);
    const nodeNames = new Set([
      ...nodes.keys(),
      ...base.filter((n) => names.has(n.labels[Label.nodePool] ?? '')).map((n) => n.name),
      ...[...claims.values()].flatMap((c) => nodeFor(c)?.name ?? []),
    ]);
    const had = new Set(base.map((n) => n.name));
    const newNodes = [...nodes.values()].filter((n) => !had.has(n.name)).map((n) => listedNode(n, undefined));
    return { names, claims, nodes, nodeNames, newNodes };
  }

  /** The pods on a node read, as podsChanged asks for them (the read already made). */
  podsReader(): Pick<Cluster, 'podsOnNode'> {
    return {
      podsOnNode: async (name) => {
        await this.readCandidateNodes([name]);
        return this.nodeReads.get(name)?.pods ?? { items: [], problems: [] };
      },
    };
  }

  /**
   * The pass's world with the objects read swapped in: a NodeClaim or Node the API server does not
   * have is gone; one it has is its object (a NodeClaim's conditions computed on it, with its Node
   * as read; a Node read that the pass did not list is added); a Node's pods are those the API server has bound to it, with what they request, and
   * a Node that is not Ready, is deleting or unschedulable takes nothing new.
   */
  world(): PassWorld {
    const { state, claims, input } = this.base;
    const pools = this.pooled(state.nodes);
    // A Node read that the pass's read lacks (a NodeClaim's, as the API server has the NodeClaim).
    const had = new Set([...state.nodes, ...pools.newNodes].map((n) => n.name));
    const unlisted = [...this.nodeReads.values()].flatMap((r) =>
      r === undefined || had.has(r.node.name) ? [] : [r.node],
    );
    const nodes = [...state.nodes, ...pools.newNodes, ...unlisted].flatMap((n) => {
      if (!this.nodeReads.has(n.name)) {
        if (!pools.nodeNames.has(n.name)) return [n];
        const listed = pools.nodes.get(n.name);
        return listed === undefined ? [] : [listedNode(listed, n)];
      }
      const read = this.nodeReads.get(n.name);
      return read === undefined ? [] : [confirmedNode(read)];
    });
    const nodeFor = nodeIndex(nodes);
    const swap = (list: readonly ClusterNodeClaim[], withConditions: boolean) => {
      const had = new Set(list.map((c) => c.name));
      const added = [...pools.claims.values()].filter((c) => !had.has(c.name));
      return [...list, ...added].flatMap((c) => {
        const listed = pools.claims.get(c.name);
        if (!this.claimReads.has(c.name) && listed === undefined) {
          return c.nodePoolName !== undefined && pools.names.has(c.nodePoolName) ? [] : [c];
        }
        const fresh = this.claimReads.has(c.name) ? this.claimReads.get(c.name) : listed;
        if (fresh === undefined) return [];
        return [withConditions && !fresh.deleting ? this.conditions(fresh, nodeFor(fresh)).view : fresh];
      });
    };
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

/** A NodePool's NodeClaims and Nodes, as one consistent list each read them. */
interface PoolRead {
  readonly claims: readonly ClusterNodeClaim[];
  readonly nodes: readonly NodeInfo[];
}

/**
 * A Node of a NodePool's list: as the API server has it, with the pods the pass read on it (none
 * when the pass did not have it: should a simulation put pods there, it is read in the next
 * round); closed to new pods as confirmedNode.
 */
function listedNode(info: NodeInfo, read: ClusterNode | undefined): ClusterNode {
  const closed = closedNode({ ...info, pods: [] }) !== undefined;
  return {
    ...info,
    pods: read?.pods ?? [],
    ...(read?.unreadablePods === undefined ? {} : { unreadablePods: read.unreadablePods }),
    ...(closed ? { unschedulable: true } : {}),
  };
}

/**
 * The Node as the API server has it, with its pods as the API server has them (their requests too:
 * nothing of a confirmed Node's room comes from the pass's read); closed to new pods when it is
 * not Ready, is deleting or unschedulable.
 */
function confirmedNode(read: ConfirmedNode): ClusterNode {
  const unreadable = [
    ...(read.node.unreadablePods ?? []),
    ...(read.pods?.problems ?? []).map((p) => `pods on node ${read.node.name}: ${p.message}`),
  ];
  const closed = closedNode(read.node) !== undefined;
  const { unreadablePods: _, ...node } = read.node;
  return {
    ...node,
    ...(unreadable.length === 0 ? {} : { unreadablePods: unreadable }),
    ...(closed ? { unschedulable: true } : {}),
  };
}
