import type { V1Pod } from '@kubernetes/client-node';
import {
  convertNodeClaims,
  groupPodsByNode,
  isUnschedulable,
  makeVolumeIndex,
  parseEC2NodeClass,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toPod,
  toPodDisruptionBudget,
  usesClaims,
  type VolumeIndex,
  withPods,
} from '../../apis/index.ts';
import type { Labels } from '../../core/index.ts';
import type { BoundPod, Cluster, ClusterNode, ReadResult } from '../../ports/cluster.ts';
import {
  type CustomResource,
  convertAll,
  EC2NODECLASSES,
  type KubeContext,
  listAll,
  NODECLAIMS,
  NODEPOOLS,
  warnSkipped,
} from './context.ts';
import { ClusterNotFoundError } from './errors.ts';

/** The reads of the Cluster port: lists converted to domain objects, and single gets. */
export type KubeReads = Pick<
  Cluster,
  | 'provisionablePods'
  | 'boundPods'
  | 'nodes'
  | 'nodePools'
  | 'nodeClasses'
  | 'nodeClaims'
  | 'daemonSets'
  | 'podDisruptionBudgets'
  | 'namespaceLabels'
  | 'nodeClaim'
  | 'node'
>;

export function makeKubeReads(ctx: KubeContext): KubeReads {
  const { api, core, apps, policy, storage, custom } = ctx;
  const limit = ctx.pageSize;

  const listCustom = (what: CustomResource) =>
    listAll<unknown>(ctx, `list ${what.plural}`, async (cont) => {
      const body = (await api.call(`list ${what.plural}`, (o) =>
        custom.listClusterCustomObject({ ...what, limit, ...(cont ? { _continue: cont } : {}) }, o),
      )) as { items?: unknown[]; metadata?: { continue?: string } };
      return { items: body.items ?? [], next: body.metadata?.continue };
    });

  const listPods = () =>
    listAll<V1Pod>(ctx, 'list pods', async (cont) => {
      const list = await api.call('list pods', (o) =>
        core.listPodForAllNamespaces(
          {
            fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
            limit,
            ...(cont ? { _continue: cont } : {}),
          },
          o,
        ),
      );
      return { items: list.items, next: list.metadata?._continue };
    });

  async function volumeIndex(): Promise<VolumeIndex> {
    const [claims, volumes, classes] = await Promise.all([
      listAll(ctx, 'list persistentvolumeclaims', async (cont) => {
        const l = await api.call('list persistentvolumeclaims', (o) =>
          core.listPersistentVolumeClaimForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      }),
      listAll(ctx, 'list persistentvolumes', async (cont) => {
        const l = await api.call('list persistentvolumes', (o) =>
          core.listPersistentVolume({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      }),
      listAll(ctx, 'list storageclasses', async (cont) => {
        const l = await api.call('list storageclasses', (o) =>
          storage.listStorageClass({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      }),
    ]);
    return makeVolumeIndex(claims, volumes, classes);
  }

  async function boundPods(): Promise<ReadResult<BoundPod>> {
    const pods = (await listPods()).filter((p) => p.spec?.nodeName);
    return convertAll(ctx, 'Pod', pods, (p) => ({ pod: toPod(p), nodeName: p.spec?.nodeName ?? '' }));
  }

  return {
    async provisionablePods() {
      const pending = (await listPods()).filter(isUnschedulable);
      const index = pending.some(usesClaims) ? await volumeIndex() : undefined;
      return convertAll(ctx, 'Pod', pending, (p) => toPod(p, index));
    },

    boundPods,

    async nodes() {
      const [nodes, pods] = await Promise.all([
        listAll(ctx, 'list nodes', async (cont) => {
          const l = await api.call('list nodes', (o) =>
            core.listNode({ limit, ...(cont ? { _continue: cont } : {}) }, o),
          );
          return { items: l.items, next: l.metadata?._continue };
        }),
        listPods(),
      ]);
      const bound = groupPodsByNode(
        pods.filter((p) => p.spec?.nodeName),
        (p) => toPod(p),
        (problem) => warnSkipped(ctx, 'Pod', problem),
      );
      const result = convertAll<(typeof nodes)[number], ClusterNode>(ctx, 'Node', nodes, (n) =>
        withPods(toClusterNode(n, []), bound),
      );
      return { items: result.items, problems: [...bound.problems, ...result.problems] };
    },

    async nodePools() {
      return convertAll(ctx, 'NodePool', await listCustom(NODEPOOLS), toClusterNodePool);
    },

    async nodeClasses() {
      return convertAll(ctx, 'EC2NodeClass', await listCustom(EC2NODECLASSES), parseEC2NodeClass);
    },

    async nodeClaims() {
      return convertNodeClaims(await listCustom(NODECLAIMS), toClusterNodeClaim, (problem) =>
        warnSkipped(ctx, 'NodeClaim', problem),
      );
    },

    async daemonSets() {
      const raws = await listAll(ctx, 'list daemonsets', async (cont) => {
        const l = await api.call('list daemonsets', (o) =>
          apps.listDaemonSetForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return convertAll(ctx, 'DaemonSet', raws, toDaemonSet);
    },

    async podDisruptionBudgets() {
      const raws = await listAll(ctx, 'list poddisruptionbudgets', async (cont) => {
        const l = await api.call('list poddisruptionbudgets', (o) =>
          policy.listPodDisruptionBudgetForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return convertAll(ctx, 'PodDisruptionBudget', raws, toPodDisruptionBudget);
    },

    async namespaceLabels() {
      const raws = await listAll(ctx, 'list namespaces', async (cont) => {
        const l = await api.call('list namespaces', (o) =>
          core.listNamespace({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return new Map<string, Labels>(raws.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    },

    async nodeClaim(name) {
      try {
        const raw = await api.call(`get nodeClaim "${name}"`, (o) =>
          custom.getClusterCustomObject({ ...NODECLAIMS, name }, o),
        );
        return toClusterNodeClaim(raw);
      } catch (error) {
        if (error instanceof ClusterNotFoundError) return undefined;
        throw error;
      }
    },

    async node(name) {
      try {
        const raw = await api.call(`get node "${name}"`, (o) => core.readNode({ name }, o));
        return toClusterNode(raw, []);
      } catch (error) {
        if (error instanceof ClusterNotFoundError) return undefined;
        throw error;
      }
    },
  };
}
