import { randomBytes } from 'node:crypto';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  PolicyV1Api,
  StorageV1Api,
  setHeaderOptions,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { makeRawApi } from '../../../shared/adapters/kube/raw.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { ClusterContractSubject, ContractManifest } from '../../contract/cluster-contract.ts';
import { forceDeleteNodeClaims } from '../../harness/cleanup.ts';
import { kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';
import type { RecordingKubeConfig } from '../../harness/kube/recording.ts';
import { waitFor } from '../../harness/proc.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const ignore = () => undefined;

const CUSTOM: Record<string, { group: string; version: string; plural: string }> = {
  NodePool: { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' },
  EC2NodeClass: { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' },
  NodeOverlay: { group: 'karpenter.sh', version: 'v1alpha1', plural: 'nodeoverlays' },
};

// The subject of the Cluster contract on the harness's API server: the kube adapter as Flotilla's
// own identity (the flotilla:controller group, bound by the rendered RBAC, through `recorder`), and
// seeding that plays a user, a kubelet or kube-controller-manager with the user's kubeconfig.

export async function kubeContractSubject(recorder: RecordingKubeConfig): Promise<ClusterContractSubject> {
  const cube = await kube();
  const kc = cube.userKubeConfig;
  const controllerKc = recorder;
  recorder.loadFromFile(cube.controllerKubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const policy = kc.makeApiClient(PolicyV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const batch = kc.makeApiClient(BatchV1Api);
  const storage = kc.makeApiClient(StorageV1Api);
  const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
  const cluster = makeKubeCluster({
    connection: makeRawApi(controllerKc),
    logger: makeLogger({}, { level: 'error', sink: () => undefined }),
    clock,
    // The NodeClaim catch-up from the first NodeClaim, as in a large cluster: the contract's
    // re-reads go through it, and the RBAC check sees its watch.
    nodeClaimCatchUpFrom: 0,
  });
  const id = randomBytes(3).toString('hex');
  const namespace = `contract-${id}`;
  const created: { kind: string; name: string }[] = [];

  await createNamespace(core, namespace, { team: `t-${id}` });

  async function createPod(manifest: ContractManifest): Promise<V1Pod> {
    return core.createNamespacedPod({ namespace, body: manifest as unknown as V1Pod });
  }

  /** What the pod's kubelet reports once its containers run: Running and Ready. */
  async function markRunning(name: string): Promise<void> {
    const now = new Date();
    await core.patchNamespacedPodStatus(
      {
        namespace,
        name,
        body: {
          status: {
            phase: 'Running',
            conditions: [
              { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
              { type: 'Ready', status: 'True', lastTransitionTime: now },
            ],
          },
        },
      },
      mergePatch,
    );
  }

  return {
    cluster,
    clock,
    id,
    namespace,
    async seed(manifest) {
      const name = manifest.metadata.name;
      created.push({ kind: manifest.kind, name });
      const target = CUSTOM[manifest.kind];
      if (target !== undefined) {
        await custom.createClusterCustomObject({ ...target, body: manifest });
      } else if (manifest.kind === 'PodDisruptionBudget') {
        await policy.createNamespacedPodDisruptionBudget({ namespace, body: manifest as never });
      } else if (manifest.kind === 'ReplicaSet') {
        await apps.createNamespacedReplicaSet({ namespace, body: manifest as never });
      } else if (manifest.kind === 'Job') {
        await batch.createNamespacedJob({ namespace, body: manifest as never });
      } else if (manifest.kind === 'DaemonSet') {
        await apps.createNamespacedDaemonSet({ namespace, body: manifest as never });
      } else if (manifest.kind === 'VolumeAttachment') {
        await storage.createVolumeAttachment({ body: manifest as never });
      } else if (manifest.kind === 'StorageClass') {
        await storage.createStorageClass({ body: manifest as never });
      } else if (manifest.kind === 'CSINode') {
        await storage.createCSINode({ body: manifest as never });
      } else if (manifest.kind === 'PersistentVolume') {
        await core.createPersistentVolume({ body: manifest as never });
      } else if (manifest.kind === 'PersistentVolumeClaim') {
        await core.createNamespacedPersistentVolumeClaim({ namespace, body: manifest as never });
      } else {
        throw new Error(`the kube fixture cannot seed ${manifest.kind}`);
      }
    },
    async seedNode(manifest) {
      const { status, ...rest } = manifest as ContractManifest & { status?: V1Node['status'] };
      created.push({ kind: 'Node', name: manifest.metadata.name });
      await core.createNode({ body: rest as unknown as V1Node });
      if (status !== undefined) {
        const now = new Date();
        const conditions = (status.conditions ?? []).map((c) => ({
          ...c,
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        }));
        await core.patchNodeStatus(
          { name: manifest.metadata.name, body: { status: { ...status, conditions } } },
          mergePatch,
        );
      }
    },
    async seedUnschedulablePod(manifest) {
      const pod = await createPod(manifest);
      await waitFor(
        `pod ${manifest.metadata.name} to be marked Unschedulable`,
        async () => {
          const read = await core.readNamespacedPod({ namespace, name: manifest.metadata.name });
          const cond = read.status?.conditions?.find((c) => c.type === 'PodScheduled');
          return cond?.status === 'False' && cond.reason === 'Unschedulable' ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );
      return pod.metadata?.uid ?? '';
    },
    async seedRunningPod(manifest, nodeName) {
      const spec = manifest['spec'] as Record<string, unknown>;
      const pod = await createPod({ ...manifest, spec: { ...spec, nodeName } });
      await markRunning(manifest.metadata.name);
      return pod.metadata?.uid ?? '';
    },
    async runOwnedPods(kind, name, count) {
      const owner =
        kind === 'ReplicaSet'
          ? await apps.readNamespacedReplicaSet({ namespace, name })
          : await batch.readNamespacedJob({ namespace, name });
      const uid = owner.metadata?.uid;
      // kube-controller-manager's ReplicaSet or Job controller creates (and replaces) the pods.
      const pods = await waitFor(
        `${count} pods of ${kind} ${name}`,
        async () => {
          const owned = (await core.listNamespacedPod({ namespace })).items.filter(
            (p) =>
              p.metadata?.deletionTimestamp == null &&
              (p.metadata?.ownerReferences ?? []).some((o) => o.uid === uid),
          );
          return owned.length === count ? owned : undefined;
        },
        { timeoutMs: 60_000 },
      );
      for (const p of pods) {
        const ready = (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
        if (!ready) await markRunning(p.metadata?.name ?? '');
      }
      const createdMs = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
      return pods
        .sort(
          (x, y) =>
            createdMs(x) - createdMs(y) || (x.metadata?.name ?? '').localeCompare(y.metadata?.name ?? ''),
        )
        .map((p) => ({ name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' }));
    },
    async finishPod(name) {
      await core.patchNamespacedPodStatus(
        { namespace, name, body: { status: { phase: 'Succeeded' } } },
        mergePatch,
      );
    },
    async waitForBudget(name, disruptionsAllowed) {
      await waitFor(
        `PodDisruptionBudget ${name} to allow ${disruptionsAllowed} disruptions`,
        async () => {
          const pdb = await policy.readNamespacedPodDisruptionBudget({ namespace, name });
          const st = pdb.status;
          const looked = (st?.conditions ?? []).some((c) => c.type === 'DisruptionAllowed');
          return looked && st?.disruptionsAllowed === disruptionsAllowed ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );
    },
    async podEvents(name) {
      const list = await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${name}`,
      });
      return list.items
        .filter((e) => e.source?.component === 'flotilla')
        .map((e) => ({ reason: e.reason ?? '', message: e.message ?? '', count: e.count ?? 0 }));
    },
    async cleanup() {
      const claims = await custom
        .listClusterCustomObject({ group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' })
        .then((l) =>
          ((l as { items: { metadata: { name: string } }[] }).items ?? []).map((c) => c.metadata.name),
        )
        .catch(() => [] as string[]);
      await forceDeleteNodeClaims(
        controllerKc,
        claims.filter((c) => c.endsWith(id)),
      );
      // Finalizers on Nodes and EC2NodeClasses are Flotilla's: it drops what a failed test left.
      const controllerCore = controllerKc.makeApiClient(CoreV1Api);
      const controllerCustom = controllerKc.makeApiClient(CustomObjectsApi);
      const noFinalizers = { metadata: { finalizers: null } };
      for (const { kind, name } of created.reverse()) {
        const target = CUSTOM[kind];
        if (kind === 'EC2NodeClass' && target !== undefined) {
          await controllerCustom
            .patchClusterCustomObject({ ...target, name, body: noFinalizers }, mergePatch)
            .catch(ignore);
        }
        if (target !== undefined) await custom.deleteClusterCustomObject({ ...target, name }).catch(ignore);
        if (kind === 'VolumeAttachment') await storage.deleteVolumeAttachment({ name }).catch(ignore);
        if (kind === 'StorageClass') await storage.deleteStorageClass({ name }).catch(ignore);
        if (kind === 'CSINode') await storage.deleteCSINode({ name }).catch(ignore);
        if (kind === 'PersistentVolume') await core.deletePersistentVolume({ name }).catch(ignore);
        if (kind === 'Node') {
          await controllerCore.patchNode({ name, body: noFinalizers }, mergePatch).catch(ignore);
          await core.deleteNode({ name }).catch(ignore);
        }
      }
      await core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 }).catch(ignore);
      await core.deleteNamespace({ name: namespace }).catch(ignore);
    },
  };
}
