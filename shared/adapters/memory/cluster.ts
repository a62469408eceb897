import type { V1Node } from '@kubernetes/client-node';
import {
  PLACEMENT_GROUP_ANNOTATION,
  placementGroupAnnotation,
  toNodeClaimManifest,
  toQuantityMap,
} from '../../apis/index.ts';
import type { ResourceList, Taint } from '../../core/index.ts';
import { mergeOwnerReferences } from '../../ports/cluster.ts';
import { makeClusterReads } from './cluster-reads.ts';
import { makeEventRecorder } from './events.ts';
import {
  CUSTOM,
  keyOf,
  type Manifest,
  type MemoryKind,
  makeObjectStore,
  NAMESPACED,
  rfc3339,
  wholeSeconds,
} from './object-store.ts';
import { applyMetadata, statusWith } from './patches.ts';
import { makePodLifecycle } from './pod-lifecycle.ts';

export type { StoredEvent } from './events.ts';
export type { MemoryCluster, MemoryClusterOptions } from './memory-cluster.ts';

import type { MemoryCluster, MemoryClusterOptions } from './memory-cluster.ts';

export type { Manifest, MemoryKind } from './object-store.ts';

// The Cluster port in memory, for the simulator. Objects are kept in their Kubernetes shape and
// read through the same converters as the kube adapter, so both adapters see a manifest alike;
// the API server's own behaviour (finalizers, deletion, eviction against PodDisruptionBudgets,
// event deduplication, PDB status as kube-controller-manager keeps it) is reproduced here. Reads
// are in cluster-reads.ts and what happens to pods in pod-lifecycle.ts; this module holds the
// writes to NodeClaims, Nodes, NodePools and classes, deletion, and the simulator's knobs.

const sameTaint = (a: Taint, b: { key: string; effect: string }) => a.key === b.key && a.effect === b.effect;

/** The in-memory Cluster. Deterministic: uids come from a counter and time only from the clock. */
export function makeMemoryCluster(options: MemoryClusterOptions): MemoryCluster {
  const { clock } = options;
  const recorder = makeEventRecorder(clock, (options.eventDedupeSeconds ?? 300) * 1000);
  const objects = makeObjectStore(clock);
  const { store, find, must, create, update } = objects;
  const { reads, boundPods, budgets } = makeClusterReads(objects);
  const pods = makePodLifecycle(objects, clock, budgets);

  /** Deletes as the API server does: objects with finalizers are marked and kept. */
  function deleteObject(kind: MemoryKind, name: string, namespace?: string): void {
    const raw = find(kind, name, namespace);
    if (raw === undefined) return;
    if ((raw.metadata.finalizers ?? []).length === 0) {
      objects.remove(kind, keyOf(name, namespace));
      return;
    }
    if (raw.metadata.deletionTimestamp !== undefined) return;
    update(kind, raw, (copy) => {
      const now = wholeSeconds(clock.now());
      copy.metadata.deletionTimestamp = CUSTOM.has(kind) ? rfc3339(now) : now;
    });
  }

  const cluster: MemoryCluster = {
    ...reads,

    async createNodeClaim(claim) {
      if (find('NodeClaim', claim.name) !== undefined) return false;
      create(toNodeClaimManifest(claim) as unknown as Manifest);
      return true;
    },

    async patchNodeClaimStatus(name, patch) {
      const raw = must('NodeClaim', name, undefined, `patch status of nodeClaim "${name}"`);
      const status = (raw['status'] ?? {}) as Record<string, unknown>;
      const replace = (next: ResourceList | undefined) =>
        next === undefined ? undefined : toQuantityMap(next);
      update('NodeClaim', raw, (copy) => {
        copy['status'] = statusWith(
          raw,
          patch.conditions,
          clock.now(),
          {
            providerID: patch.providerId,
            imageID: patch.imageId,
            nodeName: patch.nodeName,
            capacity: replace(patch.capacity) ?? status['capacity'],
            allocatable: replace(patch.allocatable) ?? status['allocatable'],
            lastPodEventTime: patch.lastPodEventTime,
          },
          patch.removeConditions,
        );
      });
    },

    async patchNodeClaimMetadata(name, patch) {
      const raw = must('NodeClaim', name, undefined, `patch nodeClaim "${name}"`);
      update('NodeClaim', raw, (copy) => applyMetadata(copy, patch));
    },

    async patchNode(name, patch) {
      const raw = must('Node', name, undefined, `patch node "${name}"`);
      update('Node', raw, (copy) => {
        applyMetadata(copy, patch);
        const node = copy as unknown as V1Node;
        const owners = mergeOwnerReferences(node.metadata?.ownerReferences ?? [], patch.addOwnerReferences);
        if (owners !== undefined) node.metadata = { ...node.metadata, ownerReferences: owners };
        if (patch.addTaints === undefined && patch.removeTaints === undefined) return;
        let taints = (node.spec?.taints ?? []).filter(
          (t) => !(patch.removeTaints ?? []).some((r) => sameTaint(r, t)),
        );
        for (const add of patch.addTaints ?? []) {
          if (!taints.some((t) => sameTaint(add, t))) {
            taints = [
              ...taints,
              { key: add.key, effect: add.effect, ...(add.value ? { value: add.value } : {}) },
            ];
          }
        }
        node.spec = { ...(node.spec ?? {}), taints };
      });
    },

    async deleteNodeClaim(name) {
      deleteObject('NodeClaim', name);
    },

    async patchNodePoolStatus(name, patch) {
      const raw = must('NodePool', name, undefined, `patch status of nodePool "${name}"`);
      update('NodePool', raw, (copy) => {
        copy['status'] = statusWith(raw, patch.conditions, clock.now(), {
          resources: patch.resources === undefined ? undefined : toQuantityMap(patch.resources),
          nodes: patch.nodes,
          nodeClassObservedGeneration: patch.nodeClassObservedGeneration,
        });
      });
    },

    async patchNodePoolMetadata(name, patch) {
      const raw = must('NodePool', name, undefined, `patch nodePool "${name}"`);
      update('NodePool', raw, (copy) => applyMetadata(copy, patch));
    },

    async patchNodeClassStatus(name, status) {
      const raw = must('EC2NodeClass', name, undefined, `patch status of ec2NodeClass "${name}"`);
      // As the API server keeps it: the placement group in its annotation, not in the status.
      const { placementGroups: _group, ...fields } = status;
      update('EC2NodeClass', raw, (copy) => {
        applyMetadata(copy, {
          annotations: { [PLACEMENT_GROUP_ANNOTATION]: placementGroupAnnotation(status) },
        });
        copy['status'] = JSON.parse(JSON.stringify(fields)) as unknown;
      });
    },

    async patchNodeOverlayStatus(name, conditions) {
      const raw = must('NodeOverlay', name, undefined, `patch status of nodeOverlay "${name}"`);
      update('NodeOverlay', raw, (copy) => {
        copy['status'] = statusWith(raw, conditions, clock.now(), {});
      });
    },

    async patchNodeClassMetadata(name, patch) {
      const raw = must('EC2NodeClass', name, undefined, `patch ec2NodeClass "${name}"`);
      update('EC2NodeClass', raw, (copy) => applyMetadata(copy, patch));
    },

    async recordEvent(event) {
      recorder.record(event);
    },

    async nodeWithPods(name) {
      const node = await cluster.node(name);
      if (node === undefined) return undefined;
      const onNode = boundPods().items.filter((b) => b.nodeName === name);
      return { ...node, pods: onNode.map((b) => b.pod) };
    },

    async deleteNode(name) {
      deleteObject('Node', name);
    },

    create(manifest) {
      return create(manifest);
    },

    replaceSpec(kind, name, spec, namespace) {
      namespace = NAMESPACED.has(kind) ? (namespace ?? 'default') : undefined;
      const raw = must(kind, name, namespace, `replace spec of ${kind} "${name}"`);
      if (JSON.stringify(raw['spec'] ?? null) === JSON.stringify(spec)) return raw;
      return update(kind, raw, (copy) => {
        copy['spec'] = structuredClone(spec);
        if (CUSTOM.has(kind)) copy.metadata.generation = (copy.metadata.generation ?? 1) + 1;
      });
    },

    get(kind, name, namespace) {
      return find(kind, name, NAMESPACED.has(kind) ? (namespace ?? 'default') : undefined);
    },

    list(kind) {
      return [...store(kind).values()];
    },

    ...pods,

    setNodeReady(name, ready) {
      const raw = must('Node', name, undefined, `update status of node "${name}"`);
      update('Node', raw, (copy) => {
        const node = copy as unknown as V1Node;
        const conditions = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
        const now = wholeSeconds(clock.now());
        node.status = {
          ...(node.status ?? {}),
          conditions: [
            ...conditions,
            {
              type: 'Ready',
              status: ready ? 'True' : 'False',
              reason: ready ? 'KubeletReady' : 'KubeletNotReady',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        };
      });
    },

    events: () => recorder.list(),

    revision: () => objects.revision(),
  };

  return cluster;
}
