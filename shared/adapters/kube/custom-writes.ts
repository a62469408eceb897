import {
  mergeConditions,
  PLACEMENT_GROUP_ANNOTATION,
  placementGroupAnnotation,
  toNodeClaimManifest,
  toQuantityMap,
  withoutConditions,
} from '../../apis/index.ts';
import type { ResourceList } from '../../core/index.ts';
import type { Condition } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, ConditionUpdate, MetadataPatch } from '../../ports/cluster.ts';
import { retryOnConflict } from './call.ts';
import {
  type CustomResource,
  customPath,
  EC2NODECLASSES,
  type KubeContext,
  MERGE_PATCH,
  metadataChange,
  NODECLAIMS,
  NODEOVERLAYS,
  NODEPOOLS,
  type RawObject,
  send,
} from './context.ts';
import { ClusterConflictError, ClusterNotFoundError } from './errors.ts';

/** The writes of NodeClaims, NodePools and EC2NodeClasses: create, delete, status and metadata. */
export type KubeCustomWrites = Pick<
  Cluster,
  | 'createNodeClaim'
  | 'patchNodeClaimStatus'
  | 'patchNodeClaimMetadata'
  | 'deleteNodeClaim'
  | 'patchNodePoolStatus'
  | 'patchNodePoolMetadata'
  | 'patchNodeClassStatus'
  | 'patchNodeClassMetadata'
  | 'patchNodeOverlayStatus'
>;

/** A replacement of a quantity map in a merge patch: dropped keys are set to null. */
function replaceQuantities(
  current: unknown,
  next: ResourceList | undefined,
): Record<string, string | null> | undefined {
  if (next === undefined) return undefined;
  const out: Record<string, string | null> = {};
  for (const key of Object.keys((current as Record<string, unknown> | undefined) ?? {})) out[key] = null;
  return { ...out, ...toQuantityMap(next) };
}

/** What a status patch of conditions reads of the NodeClaim (statusFields), from the domain NodeClaim. */
function rawNodeClaimStatus(claim: ClusterNodeClaim): RawObject {
  return {
    metadata: {
      ...(claim.resourceVersion === undefined ? {} : { resourceVersion: claim.resourceVersion }),
      ...(claim.generation === undefined ? {} : { generation: claim.generation }),
    },
    status: { conditions: claim.status.conditions },
  } as RawObject;
}

export function makeKubeCustomWrites(ctx: KubeContext): KubeCustomWrites {
  /** A merge patch of a custom object (or of its status). */
  const mergePatch = (
    operation: string,
    what: CustomResource,
    name: string,
    body: unknown,
    status?: 'status',
  ) =>
    send(ctx, operation, {
      method: 'PATCH',
      path: customPath(what, name, status),
      body,
      contentType: MERGE_PATCH,
    });

  /**
   * Read-modify-write of a custom object: reads it, then sends `write`'s patch with the read's
   * resourceVersion, again from the read while another writer got in between.
   */
  async function readModifyWrite(
    what: CustomResource,
    kind: string,
    name: string,
    write: (current: RawObject) => Promise<unknown>,
    asRead?: RawObject,
  ): Promise<void> {
    // The object as a list read it is the first attempt's basis; a conflict means it changed since,
    // and the next attempt reads it again.
    let known = asRead?.metadata?.resourceVersion === undefined ? undefined : asRead;
    await retryOnConflict(ctx.conflictAttempts, async () => {
      const current =
        known ??
        ((await send(ctx, `get ${kind} "${name}"`, {
          method: 'GET',
          path: customPath(what, name),
        })) as RawObject);
      known = undefined;
      await ctx.beforeWrite(kind, name);
      await write(current);
    });
  }

  /** Read-modify-write of a custom object's status through the status subresource. */
  async function patchCustomStatus(
    what: CustomResource,
    kind: string,
    name: string,
    change: (current: RawObject) => Record<string, unknown>,
    asRead?: RawObject,
  ): Promise<void> {
    await readModifyWrite(
      what,
      kind,
      name,
      (current) =>
        mergePatch(
          `patch status of ${kind} "${name}"`,
          what,
          name,
          { metadata: { resourceVersion: current.metadata?.resourceVersion }, status: change(current) },
          'status',
        ),
      asRead,
    );
  }

  /**
   * A custom object's metadata: labels and annotations alone are one merge patch (it changes only
   * the keys it names, whatever was written since); finalizers, a list, are a read-modify-write.
   */
  async function patchCustomMetadata(
    what: CustomResource,
    kind: string,
    name: string,
    patch: MetadataPatch,
  ): Promise<void> {
    if (patch.addFinalizers === undefined && patch.removeFinalizers === undefined) {
      await ctx.beforeWrite(kind, name);
      await mergePatch(`patch ${kind} "${name}"`, what, name, { metadata: metadataChange({}, patch) });
      return;
    }
    await readModifyWrite(what, kind, name, (current) =>
      mergePatch(`patch ${kind} "${name}"`, what, name, { metadata: metadataChange(current, patch) }),
    );
  }

  function statusFields(
    current: RawObject,
    conditions: readonly ConditionUpdate[] | undefined,
    fields: Record<string, unknown>,
    removeConditions?: readonly string[],
  ): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
    const removing = (removeConditions ?? []).length > 0;
    if ((conditions !== undefined && conditions.length > 0) || removing) {
      const existing = withoutConditions(
        (current.status?.['conditions'] ?? []) as Condition[],
        removeConditions,
      );
      out['conditions'] = mergeConditions(
        existing,
        conditions ?? [],
        ctx.clock.now(),
        current.metadata?.generation,
      );
    }
    return out;
  }

  return {
    async createNodeClaim(claim) {
      try {
        await send(ctx, `create nodeClaim "${claim.name}"`, {
          method: 'POST',
          path: customPath(NODECLAIMS),
          body: toNodeClaimManifest(claim),
        });
        return true;
      } catch (error) {
        if (error instanceof ClusterConflictError) return false;
        throw error;
      }
    },

    async patchNodeClaimStatus(name, patch, asRead) {
      await patchCustomStatus(
        NODECLAIMS,
        'nodeClaim',
        name,
        (current) =>
          statusFields(
            current,
            patch.conditions,
            {
              providerID: patch.providerId,
              imageID: patch.imageId,
              nodeName: patch.nodeName,
              capacity: replaceQuantities(current.status?.['capacity'], patch.capacity),
              allocatable: replaceQuantities(current.status?.['allocatable'], patch.allocatable),
              lastPodEventTime: patch.lastPodEventTime,
            },
            patch.removeConditions,
          ),
        // Quantities are replaced key by key from the NodeClaim as the API server has it.
        asRead === undefined || patch.capacity !== undefined || patch.allocatable !== undefined
          ? undefined
          : rawNodeClaimStatus(asRead),
      );
    },

    async patchNodeClaimMetadata(name, patch) {
      await patchCustomMetadata(NODECLAIMS, 'nodeClaim', name, patch);
    },

    async deleteNodeClaim(name) {
      try {
        await send(ctx, `delete nodeClaim "${name}"`, {
          method: 'DELETE',
          path: customPath(NODECLAIMS, name),
        });
      } catch (error) {
        if (!(error instanceof ClusterNotFoundError)) throw error;
      }
    },

    async patchNodePoolStatus(name, patch) {
      await patchCustomStatus(NODEPOOLS, 'nodePool', name, (current) =>
        statusFields(current, patch.conditions, {
          resources: replaceQuantities(current.status?.['resources'], patch.resources),
          nodes: patch.nodes,
          nodeClassObservedGeneration: patch.nodeClassObservedGeneration,
        }),
      );
    },

    async patchNodeOverlayStatus(name, conditions) {
      await patchCustomStatus(NODEOVERLAYS, 'nodeOverlay', name, (current) =>
        statusFields(current, conditions, {}),
      );
    },

    async patchNodePoolMetadata(name, patch) {
      await patchCustomMetadata(NODEPOOLS, 'nodePool', name, patch);
    },

    async patchNodeClassStatus(name, status) {
      // The placement group goes in an annotation (Karpenter's CRD has no status field for it),
      // written first so a reader that sees the new conditions also sees the group.
      const { placementGroups: _group, ...fields } = status;
      await patchCustomMetadata(EC2NODECLASSES, 'ec2NodeClass', name, {
        annotations: { [PLACEMENT_GROUP_ANNOTATION]: placementGroupAnnotation(status) },
      });
      // A merge patch replaces lists whole; a profile no longer resolved, or reservations no
      // longer selected, are removed with null.
      await mergePatch(
        `patch status of ec2NodeClass "${name}"`,
        EC2NODECLASSES,
        name,
        {
          status: {
            ...fields,
            instanceProfile: status.instanceProfile ?? null,
            capacityReservations: status.capacityReservations ?? null,
          },
        },
        'status',
      );
    },

    async patchNodeClassMetadata(name, patch) {
      await patchCustomMetadata(EC2NODECLASSES, 'ec2NodeClass', name, patch);
    },
  };
}
