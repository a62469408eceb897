import { createHash } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  CustomObjectsApi,
  type KubeConfig,
  PolicyV1Api,
  StorageV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import {
  isUnschedulable,
  KARPENTER_GROUP,
  KARPENTER_VERSION,
  makeVolumeIndex,
  mergeConditions,
  parseEC2NodeClass,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toDrainPod,
  toNodeClaimManifest,
  toPod,
  toPodDisruptionBudget,
  toQuantityMap,
  toVolumeAttachment,
  usesClaims,
  type VolumeIndex,
} from '../../apis/index.ts';
import type { Labels, Pod, ResourceList, Taint } from '../../core/index.ts';
import { ValidationError } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Condition } from '../../ports/cloud.ts';
import {
  type BoundPod,
  type Cluster,
  type ClusterEvent,
  type ClusterNode,
  type ConditionUpdate,
  type MetadataPatch,
  mergeOwnerReferences,
  type ReadResult,
} from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type Caller, type KubeRetryOptions, makeCaller, makeLimiter, retryOnConflict } from './call.ts';
import { ClusterApiError, ClusterConflictError, ClusterNotFoundError } from './errors.ts';

/** Options of {@link makeKubeCluster}. */
export interface KubeClusterOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** @default the system clock */
  readonly clock?: Clock;
  /** API calls in flight at once, across all methods. @default 8 */
  readonly maxConcurrentCalls?: number;
  /** Each API call is aborted after this long. @default 10000 */
  readonly callTimeoutMs?: number;
  /** Attempts of a read-modify-write that keeps hitting 409 Conflict. @default 5 */
  readonly conflictAttempts?: number;
  /**
   * Retries of calls the API server could not answer for now (429, 5xx, timeouts); every retry is
   * logged. @default 5 attempts, 200 ms base, 5 s cap, no deadline
   */
  readonly retry?: Omit<KubeRetryOptions, 'onRetry'>;
  /** Page size of list calls. @default 500 */
  readonly pageSize?: number;
  /** A repeated event within this window is dropped; later ones bump its count. @default 300 */
  readonly eventDedupeSeconds?: number;
  /** `source.component` / `reportingComponent` of events. @default 'flotilla' */
  readonly component?: string;
  /** `reportingInstance` of events (e.g. the Lambda function name). @default component */
  readonly instance?: string;
  /**
   * Test seam: runs between the read and the write of every read-modify-write, so a test can
   * change the object there and cause a real 409 Conflict.
   */
  readonly beforeWrite?: (kind: string, name: string) => Promise<void>;
}

const NODECLAIMS = { group: KARPENTER_GROUP, version: KARPENTER_VERSION, plural: 'nodeclaims' } as const;
const NODEPOOLS = { group: KARPENTER_GROUP, version: KARPENTER_VERSION, plural: 'nodepools' } as const;
const EC2NODECLASSES = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' } as const;
/** Cluster-scoped objects' events go to `default`, as kubectl and client-go do. */
const CLUSTER_EVENT_NAMESPACE = 'default';

interface RawObject {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  status?: Record<string, unknown>;
}

/** The Cluster port over @kubernetes/client-node. */
export function makeKubeCluster(options: KubeClusterOptions): Cluster {
  const kc = options.kubeConfig;
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  const storage = kc.makeApiClient(StorageV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const logger = options.logger;
  const api: Caller = makeCaller(
    makeLimiter(options.maxConcurrentCalls ?? 8),
    options.callTimeoutMs ?? 10_000,
    {
      ...options.retry,
      onRetry: (retry) => logger.warn('kube call retried', { ...retry }),
    },
  );
  const clock = options.clock ?? { now: () => new Date() };
  const attempts = options.conflictAttempts ?? 5;
  const limit = options.pageSize ?? 500;
  const beforeWrite = options.beforeWrite ?? (async () => {});
  const component = options.component ?? 'flotilla';

  /** Every page of a list. */
  async function listAll<T>(
    operation: string,
    page: (cont: string | undefined) => Promise<{ items: T[]; next: string | undefined }>,
  ): Promise<T[]> {
    const out: T[] = [];
    let cont: string | undefined;
    do {
      const result = await page(cont);
      out.push(...result.items);
      cont = result.next || undefined;
    } while (cont !== undefined);
    if (out.length === 0) logger.debug('kube list empty', { operation });
    return out;
  }

  const listCustom = (what: { group: string; version: string; plural: string }) =>
    listAll<unknown>(`list ${what.plural}`, async (cont) => {
      const body = (await api.call(`list ${what.plural}`, (o) =>
        custom.listClusterCustomObject({ ...what, limit, ...(cont ? { _continue: cont } : {}) }, o),
      )) as { items?: unknown[]; metadata?: { continue?: string } };
      return { items: body.items ?? [], next: body.metadata?.continue };
    });

  const listPods = () =>
    listAll<V1Pod>('list pods', async (cont) => {
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

  /** Converts each item; a ValidationError skips the item and is reported. */
  function convertAll<R, T>(kind: string, raws: readonly R[], convert: (raw: R) => T): ReadResult<T> {
    const items: T[] = [];
    const problems: ValidationError[] = [];
    for (const raw of raws) {
      try {
        items.push(convert(raw));
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        problems.push(error);
        logger.warn('skipped malformed object', {
          kind,
          object: error.object,
          field: error.field,
          problem: error.message,
        });
      }
    }
    return { items, problems };
  }

  async function volumeIndex(): Promise<VolumeIndex> {
    const [claims, volumes, classes] = await Promise.all([
      listAll('list persistentvolumeclaims', async (cont) => {
        const l = await api.call('list persistentvolumeclaims', (o) =>
          core.listPersistentVolumeClaimForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      }),
      listAll('list persistentvolumes', async (cont) => {
        const l = await api.call('list persistentvolumes', (o) =>
          core.listPersistentVolume({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      }),
      listAll('list storageclasses', async (cont) => {
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
    return convertAll('Pod', pods, (p) => ({ pod: toPod(p), nodeName: p.spec?.nodeName ?? '' }));
  }

  type CustomResource = { group: string; version: string; plural: string };

  /**
   * Read-modify-write of a custom object: reads it, then sends `write`'s patch with the read's
   * resourceVersion, again from the read while another writer got in between.
   */
  async function readModifyWrite(
    what: CustomResource,
    kind: string,
    name: string,
    write: (current: RawObject) => Promise<unknown>,
  ): Promise<void> {
    await retryOnConflict(attempts, async () => {
      const current = (await api.call(`get ${kind} "${name}"`, (o) =>
        custom.getClusterCustomObject({ ...what, name }, o),
      )) as RawObject;
      await beforeWrite(kind, name);
      await write(current);
    });
  }

  /** Read-modify-write of a custom object's status through the status subresource. */
  async function patchCustomStatus(
    what: CustomResource,
    kind: string,
    name: string,
    change: (current: RawObject) => Record<string, unknown>,
  ): Promise<void> {
    await readModifyWrite(what, kind, name, (current) =>
      api.patch(`patch status of ${kind} "${name}"`, (o) =>
        custom.patchClusterCustomObjectStatus(
          {
            ...what,
            name,
            body: {
              metadata: { resourceVersion: current.metadata?.resourceVersion },
              status: change(current),
            },
          },
          o,
        ),
      ),
    );
  }

  /** Read-modify-write of a custom object's metadata (labels, annotations, finalizers). */
  async function patchCustomMetadata(
    what: CustomResource,
    kind: string,
    name: string,
    patch: MetadataPatch,
  ): Promise<void> {
    await readModifyWrite(what, kind, name, (current) =>
      api.patch(`patch ${kind} "${name}"`, (o) =>
        custom.patchClusterCustomObject(
          { ...what, name, body: { metadata: metadataChange(current, patch) } },
          o,
        ),
      ),
    );
  }

  function statusFields(
    current: RawObject,
    conditions: readonly ConditionUpdate[] | undefined,
    fields: Record<string, unknown>,
  ): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
    if (conditions !== undefined && conditions.length > 0) {
      const existing = (current.status?.['conditions'] ?? []) as Condition[];
      out['conditions'] = mergeConditions(existing, conditions, clock.now(), current.metadata?.generation);
    }
    return out;
  }

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

  function metadataChange(current: RawObject, patch: MetadataPatch): Record<string, unknown> {
    const finalizers = new Set(current.metadata?.finalizers ?? []);
    for (const f of patch.addFinalizers ?? []) finalizers.add(f);
    for (const f of patch.removeFinalizers ?? []) finalizers.delete(f);
    return {
      resourceVersion: current.metadata?.resourceVersion,
      ...(patch.labels ? { labels: patch.labels } : {}),
      ...(patch.annotations ? { annotations: patch.annotations } : {}),
      ...(patch.addFinalizers || patch.removeFinalizers ? { finalizers: [...finalizers] } : {}),
    };
  }

  async function recordEvent(event: ClusterEvent): Promise<void> {
    const s = event.subject;
    const namespace = s.kind === 'Pod' ? s.namespace : CLUSTER_EVENT_NAMESPACE;
    const digest = createHash('sha256')
      .update(
        [s.kind, s.kind === 'Pod' ? s.namespace : '', s.name, event.type, event.reason, event.message].join(
          '\n',
        ),
      )
      .digest('hex')
      .slice(0, 16);
    const name = `${s.name.slice(0, 200)}.${digest}`;
    const now = clock.now();
    const dedupeMs = (options.eventDedupeSeconds ?? 300) * 1000;
    await retryOnConflict(attempts, async () => {
      let existing: CoreV1Event | undefined;
      try {
        existing = await api.call(`get event "${namespace}/${name}"`, (o) =>
          core.readNamespacedEvent({ namespace, name }, o),
        );
      } catch (error) {
        if (!(error instanceof ClusterNotFoundError)) throw error;
      }
      if (existing === undefined) {
        const body: CoreV1Event = {
          metadata: { name, namespace },
          involvedObject: {
            kind: s.kind,
            name: s.name,
            ...(s.kind === 'Pod' ? { apiVersion: 'v1', namespace: s.namespace } : {}),
            ...(s.kind === 'NodeClaim' || s.kind === 'NodePool'
              ? { apiVersion: `${KARPENTER_GROUP}/${KARPENTER_VERSION}` }
              : {}),
            ...(s.kind === 'EC2NodeClass'
              ? { apiVersion: `${EC2NODECLASSES.group}/${EC2NODECLASSES.version}` }
              : {}),
            ...(s.kind === 'Node' ? { apiVersion: 'v1' } : {}),
            ...(s.uid === undefined ? {} : { uid: s.uid }),
          },
          type: event.type,
          reason: event.reason,
          message: event.message.slice(0, 1024),
          count: 1,
          firstTimestamp: now,
          lastTimestamp: now,
          source: { component },
          reportingComponent: component,
          reportingInstance: options.instance ?? component,
        };
        try {
          await api.call(`create event "${namespace}/${name}"`, (o) =>
            core.createNamespacedEvent({ namespace, body }, o),
          );
        } catch (error) {
          // Created concurrently by another invocation: that one counts.
          if (!(error instanceof ClusterConflictError)) throw error;
        }
        return;
      }
      const last = existing.lastTimestamp ?? existing.firstTimestamp;
      if (last !== undefined && now.getTime() - new Date(last).getTime() < dedupeMs) return;
      await beforeWrite('Event', name);
      // The resourceVersion makes the count exact: a concurrent bump conflicts and is retried.
      await api.patch(`patch event "${namespace}/${name}"`, (o) =>
        core.patchNamespacedEvent(
          {
            namespace,
            name,
            body: {
              metadata: { resourceVersion: existing.metadata?.resourceVersion },
              count: (existing.count ?? 1) + 1,
              lastTimestamp: now,
            },
          },
          o,
        ),
      );
    });
  }

  return {
    async provisionablePods() {
      const pending = (await listPods()).filter(isUnschedulable);
      const index = pending.some(usesClaims) ? await volumeIndex() : undefined;
      return convertAll('Pod', pending, (p) => toPod(p, index));
    },

    boundPods,

    async nodes() {
      const [nodes, bound] = await Promise.all([
        listAll('list nodes', async (cont) => {
          const l = await api.call('list nodes', (o) =>
            core.listNode({ limit, ...(cont ? { _continue: cont } : {}) }, o),
          );
          return { items: l.items, next: l.metadata?._continue };
        }),
        boundPods(),
      ]);
      const byNode = new Map<string, Pod[]>();
      for (const { pod, nodeName } of bound.items) {
        const list = byNode.get(nodeName) ?? [];
        list.push(pod);
        byNode.set(nodeName, list);
      }
      const result = convertAll<(typeof nodes)[number], ClusterNode>('Node', nodes, (n) =>
        toClusterNode(n, byNode.get(n.metadata?.name ?? '') ?? []),
      );
      return { items: result.items, problems: [...bound.problems, ...result.problems] };
    },

    async nodePools() {
      return convertAll('NodePool', await listCustom(NODEPOOLS), toClusterNodePool);
    },

    async nodeClasses() {
      return convertAll('EC2NodeClass', await listCustom(EC2NODECLASSES), parseEC2NodeClass);
    },

    async nodeClaims() {
      return convertAll('NodeClaim', await listCustom(NODECLAIMS), toClusterNodeClaim);
    },

    async daemonSets() {
      const raws = await listAll('list daemonsets', async (cont) => {
        const l = await api.call('list daemonsets', (o) =>
          apps.listDaemonSetForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return convertAll('DaemonSet', raws, toDaemonSet);
    },

    async podDisruptionBudgets() {
      const raws = await listAll('list poddisruptionbudgets', async (cont) => {
        const l = await api.call('list poddisruptionbudgets', (o) =>
          policy.listPodDisruptionBudgetForAllNamespaces({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return convertAll('PodDisruptionBudget', raws, toPodDisruptionBudget);
    },

    async namespaceLabels() {
      const raws = await listAll('list namespaces', async (cont) => {
        const l = await api.call('list namespaces', (o) =>
          core.listNamespace({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return new Map<string, Labels>(raws.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    },

    async createNodeClaim(claim) {
      try {
        await api.call(`create nodeClaim "${claim.name}"`, (o) =>
          custom.createClusterCustomObject({ ...NODECLAIMS, body: toNodeClaimManifest(claim) }, o),
        );
        return true;
      } catch (error) {
        if (error instanceof ClusterConflictError) return false;
        throw error;
      }
    },

    async patchNodeClaimStatus(name, patch) {
      await patchCustomStatus(NODECLAIMS, 'nodeClaim', name, (current) =>
        statusFields(current, patch.conditions, {
          providerID: patch.providerId,
          imageID: patch.imageId,
          nodeName: patch.nodeName,
          capacity: replaceQuantities(current.status?.['capacity'], patch.capacity),
          allocatable: replaceQuantities(current.status?.['allocatable'], patch.allocatable),
        }),
      );
    },

    async patchNodeClaimMetadata(name, patch) {
      await patchCustomMetadata(NODECLAIMS, 'nodeClaim', name, patch);
    },

    async patchNode(name, patch) {
      await retryOnConflict(attempts, async () => {
        const current = await api.call(`get node "${name}"`, (o) => core.readNode({ name }, o));
        await beforeWrite('node', name);
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

    async deleteNodeClaim(name) {
      try {
        await api.call(`delete nodeClaim "${name}"`, (o) =>
          custom.deleteClusterCustomObject({ ...NODECLAIMS, name }, o),
        );
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

    async patchNodeClassStatus(name, status) {
      // A merge patch replaces lists whole; a profile no longer resolved is removed with null.
      await api.patch(`patch status of ec2NodeClass "${name}"`, (o) =>
        custom.patchClusterCustomObjectStatus(
          {
            ...EC2NODECLASSES,
            name,
            body: { status: { ...status, instanceProfile: status.instanceProfile ?? null } },
          },
          o,
        ),
      );
    },

    async patchNodeClassMetadata(name, patch) {
      await patchCustomMetadata(EC2NODECLASSES, 'ec2NodeClass', name, patch);
    },

    recordEvent,

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

    async podsOnNode(nodeName) {
      const pods = await listAll<V1Pod>(`list pods on node "${nodeName}"`, async (cont) => {
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
      return convertAll('Pod', pods, (p) => toDrainPod(p, claimVolumes));
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
        if (
          error instanceof ClusterApiError &&
          error.httpStatus === 403 &&
          /being terminated|NamespaceTerminating/.test(error.message)
        )
          return 'gone';
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
      const raws = await listAll('list volumeattachments', async (cont) => {
        const l = await api.call('list volumeattachments', (o) =>
          storage.listVolumeAttachment({ limit, ...(cont ? { _continue: cont } : {}) }, o),
        );
        return { items: l.items, next: l.metadata?._continue };
      });
      return raws.filter((a) => a.spec.nodeName === nodeName).map(toVolumeAttachment);
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
