import {
  convertNodeClaims,
  isUnschedulable,
  makePodReader,
  makePodsByNode,
  makeVolumeIndex,
  parseEC2NodeClass,
  parseNodeOverlay,
  splitPod,
  toClaimDrivers,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toCsiNodeLimits,
  toDaemonSet,
  toPod,
  toPodDisruptionBudget,
  usesClaims,
  type VolumeIndex,
  withPods,
} from '../../apis/index.ts';
import { makeVersionedConversions } from '../../apis/versioned-conversions.ts';
import { Label, type Labels } from '../../core/index.ts';
import { type BoundPod, type Cluster, type ClusterNode, toNodeInfo } from '../../ports/cluster.ts';
import {
  convertAll,
  customPath,
  EC2NODECLASSES,
  type KubeContext,
  NODECLAIMS,
  NODEOVERLAYS,
  NODEPOOLS,
  seg,
  send,
  warnSkipped,
} from './context.ts';
import { ClusterNotFoundError } from './errors.ts';
import type { ListHead } from './http.ts';
import { makeNodeClaimCatchUp } from './nodeclaim-catch-up.ts';

/** The reads of the Cluster port: lists converted to domain objects, and single gets. */
export type KubeReads = Pick<
  Cluster,
  | 'provisionablePods'
  | 'boundPods'
  | 'nodes'
  | 'nodeInfos'
  | 'nodePools'
  | 'nodeClasses'
  | 'nodeOverlays'
  | 'nodeClaims'
  | 'daemonSets'
  | 'podDisruptionBudgets'
  | 'namespaceLabels'
  | 'volumeLimits'
  | 'nodeClaim'
  | 'node'
  | 'nodeWithPods'
>;

/** The objects of one NodePool, by their label. */
const poolSelector = (pool: string) => ({ labelSelector: `${Label.nodePool}=${pool}` });

/** Pods that may still run: the API server filters the others out. */
const NOT_FINISHED = 'status.phase!=Succeeded,status.phase!=Failed';

// Every list is one request without pagination: a consistent list the API server serves from its
// watch cache, gzipped on the wire, read item by item as it streams in (raw.ts), each item
// converted and dropped at once. Large pod lists are converted template by template
// (pod-templates.ts), so the pods of one workload share their scheduling fields in memory.

export function makeKubeReads(ctx: KubeContext): KubeReads {
  const { api } = ctx;
  // A warm container converts only the NodeClaims that changed since its last list.
  const claimConversions = makeVersionedConversions(toClusterNodeClaim);

  /** Every item of a list, through `take` (called again from scratch if the list is retried). */
  const list = <T>(
    operation: string,
    path: string,
    query: Readonly<Record<string, string | undefined>>,
    take: () => { readonly add: (item: unknown) => void; readonly result: (head: ListHead) => T },
  ): Promise<T> =>
    api.call(operation, async () => {
      const sink = take();
      const head = await ctx.raw.list(
        {
          path,
          query,
          signal: AbortSignal.timeout(ctx.listTimeoutMs),
          idleTimeoutMs: ctx.listIdleTimeoutMs,
        },
        sink.add,
      );
      return sink.result(head);
    });

  /** Every item, raw. */
  const listRaw = (
    operation: string,
    path: string,
    query: Readonly<Record<string, string | undefined>> = {},
  ) =>
    list(operation, path, query, () => {
      const items: unknown[] = [];
      return { add: (item) => items.push(item), result: () => items };
    });

  // A warm container follows the NodeClaims with a short watch from its last read.
  const claimsHeld = makeNodeClaimCatchUp(ctx, () =>
    list('list nodeclaims', customPath(NODECLAIMS), {}, () => {
      const items: unknown[] = [];
      return {
        add: (item) => items.push(item),
        result: (head) => ({ items, resourceVersion: head.metadata?.resourceVersion }),
      };
    }),
  );

  async function volumeIndex(): Promise<VolumeIndex> {
    const [claims, volumes, classes] = await Promise.all([
      listRaw('list persistentvolumeclaims', '/api/v1/persistentvolumeclaims'),
      listRaw('list persistentvolumes', '/api/v1/persistentvolumes'),
      listRaw('list storageclasses', '/apis/storage.k8s.io/v1/storageclasses'),
    ]);
    return makeVolumeIndex(claims as never, volumes as never, classes as never);
  }

  /**
   * Bound, unfinished pods (of one node, given its name), template by template, with where each
   * unreadable one is bound.
   */
  const boundPodsByNode = (nodeName?: string) =>
    list(
      nodeName === undefined ? 'list pods' : `list pods of node "${nodeName}"`,
      '/api/v1/pods',
      { fieldSelector: nodeName === undefined ? NOT_FINISHED : `spec.nodeName=${nodeName},${NOT_FINISHED}` },
      () => {
        // Each pod is converted as it arrives; nothing of the raw list is kept.
        const reader = makePodReader();
        const byNode = makePodsByNode((problem) => warnSkipped(ctx, 'Pod', problem));
        return {
          add: (raw) => {
            const split = splitPod(raw);
            const nodeName = split.instance.nodeName;
            if (typeof nodeName === 'string' && nodeName !== '')
              byNode.add(nodeName, () => reader.read(split));
          },
          result: () => byNode.result(),
        };
      },
    );

  async function node(name: string): Promise<ClusterNode | undefined> {
    try {
      const raw = await send(ctx, `get node "${name}"`, {
        method: 'GET',
        path: `/api/v1/nodes/${seg(name)}`,
      });
      return toClusterNode(raw as never, []);
    } catch (error) {
      if (error instanceof ClusterNotFoundError) return undefined;
      throw error;
    }
  }

  return {
    async provisionablePods() {
      // Only pods not bound to a node travel; among them, those kube-scheduler gave up on.
      const pending = (
        await listRaw('list pending pods', '/api/v1/pods', {
          fieldSelector: `spec.nodeName=,${NOT_FINISHED}`,
        })
      ).filter((p) => isUnschedulable(p as never));
      const index = pending.some((p) => usesClaims(p as never)) ? await volumeIndex() : undefined;
      return convertAll(ctx, 'Pod', pending, (p) => toPod(p as never, index));
    },

    async boundPods() {
      const byNode = await boundPodsByNode();
      const items: BoundPod[] = [];
      for (const [nodeName, pods] of byNode.pods) for (const pod of pods) items.push({ pod, nodeName });
      return { items, problems: byNode.problems };
    },

    async nodes() {
      const [nodes, bound] = await Promise.all([listRaw('list nodes', '/api/v1/nodes'), boundPodsByNode()]);
      const result = convertAll<unknown, ClusterNode>(ctx, 'Node', nodes, (n) =>
        withPods(toClusterNode(n as never, []), bound),
      );
      return { items: result.items, problems: [...bound.problems, ...result.problems] };
    },

    async nodeInfos(options) {
      const pool = options?.nodePool;
      const raws =
        pool === undefined
          ? await listRaw('list nodes', '/api/v1/nodes')
          : await listRaw(`list nodes of nodePool "${pool}"`, '/api/v1/nodes', poolSelector(pool));
      return convertAll(ctx, 'Node', raws, (n) => toNodeInfo(toClusterNode(n as never, [])));
    },

    async nodePools() {
      return convertAll(
        ctx,
        'NodePool',
        await listRaw('list nodepools', customPath(NODEPOOLS)),
        toClusterNodePool,
      );
    },

    async nodeClasses() {
      return convertAll(
        ctx,
        'EC2NodeClass',
        await listRaw('list ec2nodeclasses', customPath(EC2NODECLASSES)),
        parseEC2NodeClass,
      );
    },

    async nodeOverlays() {
      // An overlay that does not validate is still an item (its status says why); only a nameless one is a problem.
      const raws = await listRaw('list nodeoverlays', customPath(NODEOVERLAYS));
      return convertAll(ctx, 'NodeOverlay', raws, parseNodeOverlay);
    },

    async nodeClaims(options) {
      const pool = options?.nodePool;
      if (pool !== undefined) {
        // One NodePool's: converted apart, so the whole list's conversions are kept.
        const raws = await listRaw(
          `list nodeclaims of nodePool "${pool}"`,
          customPath(NODECLAIMS),
          poolSelector(pool),
        );
        return convertNodeClaims(raws, toClusterNodeClaim, (problem) =>
          warnSkipped(ctx, 'NodeClaim', problem),
        );
      }
      const raws = await claimsHeld.read();
      return claimConversions.read((convert) =>
        convertNodeClaims(raws, convert, (problem) => warnSkipped(ctx, 'NodeClaim', problem)),
      );
    },

    async daemonSets() {
      return convertAll(ctx, 'DaemonSet', await listRaw('list daemonsets', '/apis/apps/v1/daemonsets'), (d) =>
        toDaemonSet(d as never),
      );
    },

    async podDisruptionBudgets() {
      return convertAll(
        ctx,
        'PodDisruptionBudget',
        await listRaw('list poddisruptionbudgets', '/apis/policy/v1/poddisruptionbudgets'),
        (b) => toPodDisruptionBudget(b as never),
      );
    },

    async namespaceLabels() {
      const raws = (await listRaw('list namespaces', '/api/v1/namespaces')) as {
        metadata?: { name?: string; labels?: Labels };
      }[];
      return new Map<string, Labels>(raws.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    },

    async volumeLimits() {
      const csiNodes = convertAll(
        ctx,
        'CSINode',
        await listRaw('list csinodes', '/apis/storage.k8s.io/v1/csinodes'),
        toCsiNodeLimits,
      );
      const nodes = new Map(
        csiNodes.items.filter((n) => Object.keys(n.limits).length > 0).map((n) => [n.nodeName, n.limits]),
      );
      if (nodes.size === 0) return { nodes, claimDrivers: new Map(), problems: csiNodes.problems };
      const claims = toClaimDrivers(await volumeIndex());
      for (const problem of claims.problems) warnSkipped(ctx, 'PersistentVolumeClaim', problem);
      return { nodes, claimDrivers: claims.drivers, problems: [...csiNodes.problems, ...claims.problems] };
    },

    async nodeClaim(name) {
      try {
        const raw = await send(ctx, `get nodeClaim "${name}"`, {
          method: 'GET',
          path: customPath(NODECLAIMS, name),
        });
        return toClusterNodeClaim(raw);
      } catch (error) {
        if (error instanceof ClusterNotFoundError) return undefined;
        throw error;
      }
    },

    node,

    async nodeWithPods(name) {
      // The pods of the Node the API server has, by the name it gives (never a name only a cache
      // gave reaches a field selector); a pod that does not convert marks the Node as having pods
      // it cannot read (withPods).
      const read = await node(name);
      return read === undefined ? undefined : withPods(read, await boundPodsByNode(read.name));
    },
  };
}
