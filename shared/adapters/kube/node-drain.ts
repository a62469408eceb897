import type { V1Pod } from '@kubernetes/client-node';
import { toDrainPod, toVolumeAttachment } from '../../apis/index.ts';
import type { Taint } from '../../core/index.ts';
import { type Cluster, mergeOwnerReferences } from '../../ports/cluster.ts';
import { retryOnConflict } from './call.ts';
import { convertAll, type KubeContext, listAll, metadataChange, type RawObject } from './context.ts';
import {
  ClusterApiError,
  ClusterConflictError,
  ClusterNotFoundError,
  isNamespaceTerminating,
} from './errors.ts';

/** Node writes and what draining a node takes: its pods, evictions, deletions, volume attachments. */
export type KubeNodeDrain = Pick<
  Cluster,
  'patchNode' | 'podsOnNode' | 'evictPod' | 'deletePod' | 'volumeAttachments' | 'deleteNode'
>;

export function makeKubeNodeDrain(ctx: KubeContext): KubeNodeDrain {
  const { api, core, storage } = ctx;
  const limit = ctx.pageSize;

  return {
    async patchNode(name, patch) {
      await retryOnConflict(ctx.conflictAttempts, async () => {
        const current = await api.call(`get node "${name}"`, (o) => core.readNode({ name }, o));
        await ctx.beforeWrite('node', name);
        const same = (a: Taint, b: { key: string; effect: string }) =>
          a.key === b.key && a.effect === b.effect;
        let taints = current.spec?.taints ?? [];
        const taintsChange = patch.addTaints !== undefined || patch.removeTaints !== undefined;
        taints = taints.filter((t) => !(patch.removeTaints ?? []).some((r) => same(r, t)));
        for (const add of patch.addTaints ?? []) {
          if (!taints.some((t) => same(add, t))) {
            taints = [
              ...taints,
              { key: add.key, effect: add.effect, ...(add.value ? { value: add.value } : {}) },
            ];
          }
        }
        const owners = mergeOwnerReferences(
          current.metadata?.ownerReferences ?? [],
          patch.addOwnerReferences,
        );
        const body = {
          metadata: {
            ...metadataChange(current as RawObject, patch),
            ...(owners === undefined ? {} : { ownerReferences: owners }),
          },
          ...(taintsChange ? { spec: { taints } } : {}),
        };
        await api.patch(`patch node "${name}"`, (o) => core.patchNode({ name, body }, o));
      });
    },

    async podsOnNode(nodeName) {
      const pods = await listAll<V1Pod>(ctx, `list pods on node "${nodeName}"`, async (cont) => {
        const list = await api.call(`list pods on node "${nodeName}"`, (o) =>
          core.listPodForAllNamespaces(
            { fieldSelector: `spec.nodeName=${nodeName}`, limit, ...(cont ? { _continue: cont } : {}) },
            o,
          ),
        );
        return { items: list.items, next: list.metadata?._continue };
      });
      const claimVolumes = new Map<string, string>();
      const namespaces = new Set(
        pods
          .filter((p) => (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim))
          .map((p) => p.metadata?.namespace ?? ''),
      );
      for (const namespace of namespaces) {
        const claims = await api.call(`list persistentvolumeclaims in "${namespace}"`, (o) =>
          core.listNamespacedPersistentVolumeClaim({ namespace }, o),
        );
        for (const c of claims.items) {
          if (c.spec?.volumeName)
            claimVolumes.set(`${namespace}/${c.metadata?.name ?? ''}`, c.spec.volumeName);
        }
      }
      return convertAll(ctx, 'Pod', pods, (p) => toDrainPod(p, claimVolumes));
    },

    async evictPod(pod) {
      const operation = `evict pod "${pod.namespace}/${pod.name}"`;
      try {
        await api.call(
          operation,
          (o) =>
            core.createNamespacedPodEviction(
              {
                name: pod.name,
                namespace: pod.namespace,
                body: {
                  apiVersion: 'policy/v1',
                  kind: 'Eviction',
                  metadata: { name: pod.name, namespace: pod.namespace },
                  deleteOptions: { preconditions: { uid: pod.uid } },
                },
              },
              o,
            ),
          // A PodDisruptionBudget that allows no disruption answers 429: the drain waits on it.
          { tooManyRequestsIsAnswer: true },
        );
        return 'evicted';
      } catch (error) {
        // 409 here is the UID precondition failing: the pod was replaced by one of the same name.
        if (error instanceof ClusterNotFoundError || error instanceof ClusterConflictError) return 'gone';
        // The namespace is being deleted: no Eviction can be created in it, and its controller
        // deletes the pod anyway, so the drain only waits for it to go.
        if (isNamespaceTerminating(error)) return 'gone';
        if (error instanceof ClusterApiError && error.httpStatus === 429) return 'blocked';
        // Several PDBs over one pod: the API server refuses with 500 and this message.
        if (
          error instanceof ClusterApiError &&
          error.httpStatus === 500 &&
          /more than one PodDisruptionBudget/i.test(error.message)
        )
          return 'blocked';
        throw error;
      }
    },

    async deletePod(pod, gracePeriodSeconds) {
      try {
        await api.call(`delete pod "${pod.namespace}/${pod.name}"`, (o) =>
          core.deleteNamespacedPod(
            {
              name: pod.name,
              namespace: pod.namespace,
              gracePeriodSeconds,
              body: { gracePeriodSeconds, preconditions: { uid: pod.uid } },
            },
            o,
          ),
        );
      } catch (error) {
        if (error instanceof ClusterNotFoundError || error instanceof ClusterConflictError) return;
        throw error;
      }
    },

    async volumeAttachments(nodeName) {
      const raws = await listAll(ctx, 'list volumeattachments', async (cont) => {
        const l = await api.call('list volumeattachments', (o) =>
          storage.listVolumeAttachment({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      // A malformed attachment is skipped and logged; the drain goes on with the others.
      return convertAll(
        ctx,
        'VolumeAttachment',
        raws.filter((a) => a.spec?.nodeName === nodeName),
        toVolumeAttachment,
      ).items;
    },

    async deleteNode(name) {
      try {
        await api.call(`delete node "${name}"`, (o) => core.deleteNode({ name }, o));
      } catch (error) {
        if (!(error instanceof ClusterNotFoundError)) throw error;
      }
    },
  };
}
