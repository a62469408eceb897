import type { V1Node, V1PersistentVolumeClaimList, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { toDrainPod, toVolumeAttachment } from '../../apis/index.ts';
import type { Taint } from '../../core/index.ts';
import { type Cluster, mergeOwnerReferences } from '../../ports/cluster.ts';
import { retryOnConflict } from './call.ts';
import {
  convertAll,
  type KubeContext,
  listAll,
  MERGE_PATCH,
  metadataChange,
  type RawObject,
  seg,
  send,
} from './context.ts';
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
  const limit = ctx.pageSize;
  const nodePath = (name: string) => `/api/v1/nodes/${seg(name)}`;
  const podPath = (pod: { namespace: string; name: string }) =>
    `/api/v1/namespaces/${seg(pod.namespace)}/pods/${seg(pod.name)}`;

  /** Every page of a paginated list. */
  const pages = <T>(operation: string, path: string, query: Readonly<Record<string, string>>) =>
    listAll<T>(ctx, operation, async (cont) => {
      const page = (await send(ctx, operation, {
        method: 'GET',
        path,
        query: { ...query, limit, ...(cont ? { continue: cont } : {}) },
      })) as { items?: T[]; metadata?: { continue?: string } };
      return { items: page.items ?? [], next: page.metadata?.continue };
    });

  return {
    async patchNode(name, patch) {
      await retryOnConflict(ctx.conflictAttempts, async () => {
        const current = (await send(ctx, `get node "${name}"`, {
          method: 'GET',
          path: nodePath(name),
        })) as V1Node;
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
        await send(ctx, `patch node "${name}"`, {
          method: 'PATCH',
          path: nodePath(name),
          body,
          contentType: MERGE_PATCH,
        });
      });
    },

    async podsOnNode(nodeName) {
      const pods = await pages<V1Pod>(`list pods on node "${nodeName}"`, '/api/v1/pods', {
        fieldSelector: `spec.nodeName=${nodeName}`,
      });
      const claimVolumes = new Map<string, string>();
      const namespaces = new Set(
        pods
          .filter((p) => (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim))
          .map((p) => p.metadata?.namespace ?? ''),
      );
      for (const namespace of namespaces) {
        const claims = (await send(ctx, `list persistentvolumeclaims in "${namespace}"`, {
          method: 'GET',
          path: `/api/v1/namespaces/${seg(namespace)}/persistentvolumeclaims`,
        })) as V1PersistentVolumeClaimList;
        for (const c of claims.items ?? []) {
          if (c.spec?.volumeName)
            claimVolumes.set(`${namespace}/${c.metadata?.name ?? ''}`, c.spec.volumeName);
        }
      }
      return convertAll(ctx, 'Pod', pods, (p) => toDrainPod(p, claimVolumes));
    },

    async evictPod(pod) {
      const operation = `evict pod "${pod.namespace}/${pod.name}"`;
      try {
        await send(
          ctx,
          operation,
          {
            method: 'POST',
            path: `${podPath(pod)}/eviction`,
            body: {
              apiVersion: 'policy/v1',
              kind: 'Eviction',
              metadata: { name: pod.name, namespace: pod.namespace },
              deleteOptions: { preconditions: { uid: pod.uid } },
            },
          },
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
        await send(ctx, `delete pod "${pod.namespace}/${pod.name}"`, {
          method: 'DELETE',
          path: podPath(pod),
          query: { gracePeriodSeconds },
          body: { gracePeriodSeconds, preconditions: { uid: pod.uid } },
        });
      } catch (error) {
        if (error instanceof ClusterNotFoundError || error instanceof ClusterConflictError) return;
        throw error;
      }
    },

    async volumeAttachments(nodeName) {
      const raws = await pages<V1VolumeAttachment>(
        'list volumeattachments',
        '/apis/storage.k8s.io/v1/volumeattachments',
        {},
      );
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
        await send(ctx, `delete node "${name}"`, { method: 'DELETE', path: nodePath(name) });
      } catch (error) {
        if (!(error instanceof ClusterNotFoundError)) throw error;
      }
    },
  };
}
