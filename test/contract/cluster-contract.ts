import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../shared/ports/clock.ts';
import type { Cluster, NewNodeClaim } from '../../shared/ports/cluster.ts';
import { ec2NodeClass } from '../fixtures/node-classes.ts';

/** A Kubernetes manifest as written in YAML. */
export type ContractManifest = Record<string, unknown> & {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string } & Record<string, unknown>;
};

/** An event as stored, read back from the cluster. */
export interface ContractEvent {
  readonly reason: string;
  readonly message: string;
  readonly count: number;
}

/**
 * What one implementation of the Cluster port hands the contract suite. The kube side seeds
 * through the real API server (and kube-scheduler, kube-controller-manager), the memory side
 * through its knobs. Object names carry `id`; the suite only looks at its own objects.
 */
export interface ClusterContractSubject {
  readonly cluster: Cluster;
  /** The clock the cluster adapter reads for condition and event times; the suite moves it. */
  readonly clock: ManualClock;
  /** Unique per run; in every object name the suite creates. */
  readonly id: string;
  /** A namespace of the suite's own, labelled `team: t-<id>`. */
  readonly namespace: string;
  /**
   * Creates a cluster-scoped object (NodePool, EC2NodeClass, VolumeAttachment, StorageClass,
   * PersistentVolume, CSINode), a PDB, a PersistentVolumeClaim, a DaemonSet, a ReplicaSet or a Job.
   */
  seed(manifest: ContractManifest): Promise<void>;
  /** Creates a Node with its `status` (capacity, allocatable, conditions) as given. */
  seedNode(manifest: ContractManifest): Promise<void>;
  /** Creates a pod and waits until it is marked PodScheduled=False/Unschedulable. */
  seedUnschedulablePod(manifest: ContractManifest): Promise<string>;
  /** Creates a pod bound to `nodeName`, Running and Ready; returns its uid. */
  seedRunningPod(manifest: ContractManifest, nodeName: string): Promise<string>;
  /**
   * The pods of the ReplicaSet or Job `name` (seeded before, its pod template bound to a node by
   * `spec.nodeName`) that are not being deleted, once there are `count`, each made Running and
   * Ready as its kubelet would; oldest first. On the API server kube-controller-manager creates
   * them (this waits for it); the memory side creates them as that controller would.
   */
  runOwnedPods(
    kind: 'ReplicaSet' | 'Job',
    name: string,
    count: number,
  ): Promise<readonly { readonly name: string; readonly uid: string }[]>;
  /** Sets a pod's phase to Succeeded, as its kubelet does when its containers exit 0. */
  finishPod(name: string): Promise<void>;
  /**
   * Waits until the disruption controller has looked at the PodDisruptionBudget (its
   * DisruptionAllowed condition is set) and it allows exactly `disruptionsAllowed`.
   */
  waitForBudget(name: string, disruptionsAllowed: number): Promise<void>;
  /** Events about the pod `name` in the suite's namespace. */
  podEvents(name: string): Promise<readonly ContractEvent[]>;
  /** Removes what the suite created. */
  cleanup(): Promise<void>;
}

const GiB = 2 ** 30;

function container(cpu: string, memory = '64Mi') {
  return {
    name: 'app',
    image: 'public.ecr.aws/docker/library/busybox:stable',
    resources: { requests: { cpu, memory } },
  };
}

/**
 * The behaviour every Cluster implementation promises (shared/ports/cluster.ts), run against the
 * kube adapter on a real API server and the simulator's in-memory cluster, so the simulator
 * behaves as a cluster does.
 */
export function describeClusterContract(
  name: string,
  makeSubject: () => Promise<ClusterContractSubject>,
): void {
  describe(`Cluster contract: ${name}`, () => {
    let s: ClusterContractSubject;
    let ns: string;
    let n: (base: string) => string;
    let nodeName: string;
    let poolName: string;
    let poolUid: string;
    let className: string;

    beforeAll(async () => {
      s = await makeSubject();
      ns = s.namespace;
      n = (base) => `${base}-${s.id}`;
      nodeName = n('ct-node');
      poolName = n('ct-pool');
      className = n('ct-class');
      await s.seedNode({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: nodeName,
          labels: {
            'karpenter.sh/nodepool': poolName,
            'topology.kubernetes.io/zone': 'us-east-1a',
            'kubernetes.io/hostname': nodeName,
          },
        },
        // The taint keeps other pods of a shared cluster off this node.
        spec: {
          providerID: `aws:///us-east-1a/i-0${s.id}`,
          taints: [{ key: 'flotilla.test/contract', value: s.id, effect: 'NoSchedule' }],
        },
        status: {
          capacity: { cpu: '4', memory: '16Gi', pods: '58' },
          allocatable: { cpu: '3920m', memory: '15Gi', pods: '58' },
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
        },
      });
      await s.seed(ec2NodeClass(className, {}, { discovery: s.id }));
      await s.seed({
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: { name: poolName },
        spec: {
          weight: 5,
          limits: { cpu: '64' },
          template: {
            metadata: { labels: { team: 'web' } },
            spec: {
              nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: className },
              requirements: [
                { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
              ],
              taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
              expireAfter: '24h',
            },
          },
        },
      });
      const pool = (await s.cluster.nodePools()).items.find((p) => p.pool.name === poolName);
      poolUid = pool?.uid ?? '';
    });

    afterAll(async () => {
      await s?.cleanup();
    });

    const claimOf = (name: string): NewNodeClaim => ({
      name,
      nodePool: { name: poolName, uid: poolUid },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: className },
      labels: { team: 'web' },
      annotations: { note: 'x' },
      nodePoolHash: { hash: '42', version: 'v3' },
      requirements: [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large', 'c5.large'] },
      ],
      requests: { cpu: 1500, memory: 2 * GiB, pods: 3 },
      taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
      startupTaints: [{ key: 'cilium', effect: 'NoExecute' }],
      expireAfter: '24h',
    });

    it('reads NodePools and EC2NodeClasses in domain terms', async () => {
      const pool = (await s.cluster.nodePools()).items.find((p) => p.pool.name === poolName);
      expect(pool).toMatchObject({
        pool: {
          weight: 5,
          nodeClassName: className,
          labels: { team: 'web' },
          limits: { cpu: 64_000 },
          taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
        },
        expireAfter: '24h',
        ready: false,
        deleting: false,
      });
      expect(pool?.uid).not.toBe('');
      const nodeClass = (await s.cluster.nodeClasses()).items.find((c) => c.name === className);
      expect(nodeClass?.spec.amiSelectorTerms).toEqual([{ alias: 'al2023@latest' }]);
      expect(nodeClass?.spec.metadataOptions.httpTokens).toBe('required');
    });

    it('writes NodePool status: conditions merged by type, resources replaced', async () => {
      await s.cluster.patchNodePoolStatus(poolName, {
        conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '' }],
        resources: { cpu: 4000, memory: 16 * GiB },
        nodes: 1,
        nodeClassObservedGeneration: 2,
      });
      const firstAt = s.clock.now();
      s.clock.advance(60_000);
      await s.cluster.patchNodePoolStatus(poolName, {
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Ready', message: 'still' },
          { type: 'NodeRegistrationHealthy', status: 'True', reason: 'Healthy', message: '' },
        ],
        resources: { cpu: 2000 },
      });
      const pool = (await s.cluster.nodePools()).items.find((p) => p.pool.name === poolName);
      expect(pool?.ready).toBe(true);
      expect(pool?.resources).toEqual({ cpu: 2000 });
      expect(pool?.nodes).toBe(1);
      expect(pool?.nodeClassObservedGeneration).toBe(2);
      const ready = pool?.conditions.find((c) => c.type === 'Ready');
      expect(ready?.message).toBe('still');
      expect(Date.parse(ready?.lastTransitionTime ?? '')).toBe(Math.floor(firstAt.getTime() / 1000) * 1000);
      await expect(s.cluster.patchNodePoolStatus(n('missing-pool'), { nodes: 1 })).rejects.toMatchObject({
        code: 'ClusterNotFound',
      });
    });

    it('reads NodeOverlays in domain terms and merges their status conditions by type', async () => {
      const name = n('overlay');
      await s.seed({
        apiVersion: 'karpenter.sh/v1alpha1',
        kind: 'NodeOverlay',
        metadata: { name },
        spec: {
          weight: 3,
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }],
          priceAdjustment: '-10%',
          capacity: { 'example.com/fpga': '2' },
        },
      });
      const read = async () => (await s.cluster.nodeOverlays()).items.find((o) => o.name === name);
      expect((await read())?.overlay).toEqual({
        name,
        weight: 3,
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }],
        price: { kind: 'percent', percent: -10 },
        capacity: { 'example.com/fpga': 2 },
      });
      const validated = {
        type: 'ValidationSucceeded',
        status: 'True',
        reason: 'ValidationSucceeded',
        message: '',
      } as const;
      await s.cluster.patchNodeOverlayStatus(name, [
        validated,
        { type: 'Ready', status: 'True', reason: 'Ready', message: '' },
      ]);
      const firstAt = s.clock.now();
      s.clock.advance(60_000);
      await s.cluster.patchNodeOverlayStatus(name, [
        { type: 'Ready', status: 'True', reason: 'Ready', message: 'still' },
      ]);
      const conditions = (await read())?.conditions ?? [];
      expect(conditions.map((c) => c.type).sort()).toEqual(['Ready', 'ValidationSucceeded']);
      const ready = conditions.find((c) => c.type === 'Ready');
      expect(ready).toMatchObject({ message: 'still', observedGeneration: 1 });
      expect(Date.parse(ready?.lastTransitionTime ?? '')).toBe(Math.floor(firstAt.getTime() / 1000) * 1000);
      await expect(s.cluster.patchNodeOverlayStatus(n('missing-overlay'), [validated])).rejects.toMatchObject(
        {
          code: 'ClusterNotFound',
        },
      );
    });

    it('patches NodePool annotations: the keys named, nothing else', async () => {
      const annotationsOf = async () =>
        (await s.cluster.nodePools()).items.find((p) => p.pool.name === poolName)?.annotations ?? {};
      await s.cluster.patchNodePoolMetadata(poolName, {
        annotations: { 'flotilla.io/contract-a': '{"n":1}', 'flotilla.io/contract-b': 'b' },
      });
      await s.cluster.patchNodePoolMetadata(poolName, {
        annotations: { 'flotilla.io/contract-a': '{"n":2}' },
      });
      expect(await annotationsOf()).toMatchObject({
        'flotilla.io/contract-a': '{"n":2}',
        'flotilla.io/contract-b': 'b',
      });
      await s.cluster.patchNodePoolMetadata(poolName, {
        annotations: { 'flotilla.io/contract-a': null, 'flotilla.io/contract-b': null },
      });
      const after = await annotationsOf();
      expect(after['flotilla.io/contract-a']).toBeUndefined();
      expect(after['flotilla.io/contract-b']).toBeUndefined();
      // The spec is untouched.
      const pool = (await s.cluster.nodePools()).items.find((p) => p.pool.name === poolName);
      expect(pool?.expireAfter).toBe('24h');
      await expect(
        s.cluster.patchNodePoolMetadata(n('missing-pool'), { annotations: { 'flotilla.io/x': 'y' } }),
      ).rejects.toMatchObject({ code: 'ClusterNotFound' });
    });

    it('replaces EC2NodeClass status whole through the status subresource', async () => {
      // A class of its own: a Ready class would change what the NodePool tests read. It selects a
      // placement group, whose resolution is read back with the status (the kube adapter keeps it
      // in an annotation: Karpenter's CRD has no status field for it).
      const name = n('ct-class-status');
      await s.seed(ec2NodeClass(name, { placementGroupSelector: { name: 'training' } }, { discovery: s.id }));
      const read = async () => (await s.cluster.nodeClasses()).items.find((c) => c.name === name);
      const generation = (await read())?.generation;
      const amis = [
        {
          id: 'ami-0123',
          name: 'al2023-ami',
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] }],
        },
      ];
      await s.cluster.patchNodeClassStatus(name, {
        subnets: [
          { id: 'subnet-a', zone: 'us-east-1a', zoneID: 'use1-az1' },
          { id: 'subnet-b', zone: 'us-east-1b' },
        ],
        securityGroups: [{ id: 'sg-1', name: 'nodes' }],
        amis,
        instanceProfile: `profile-${s.id}`,
        placementGroups: [
          { id: 'pg-0123', name: 'training', state: 'available', strategy: 'partition', partitionCount: 3 },
        ],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'Ready',
            message: '',
            lastTransitionTime: '2026-11-21T10:00:00Z',
          },
        ],
      });
      let nodeClass = await read();
      expect(nodeClass?.status).toEqual({
        subnets: [
          { id: 'subnet-a', zone: 'us-east-1a', zoneID: 'use1-az1' },
          { id: 'subnet-b', zone: 'us-east-1b' },
        ],
        securityGroups: [{ id: 'sg-1', name: 'nodes' }],
        amis,
        instanceProfile: `profile-${s.id}`,
        placementGroups: [
          { id: 'pg-0123', name: 'training', state: 'available', strategy: 'partition', partitionCount: 3 },
        ],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'Ready',
            message: '',
            lastTransitionTime: '2026-11-21T10:00:00Z',
          },
        ],
      });
      // Lists are replaced, not merged, and an instance profile or placement group no longer resolved goes.
      const notReady = {
        type: 'Ready',
        status: 'False' as const,
        reason: 'SecurityGroupsNotFound',
        message: 'no security group matches',
        lastTransitionTime: '2026-11-21T10:05:00Z',
      };
      await s.cluster.patchNodeClassStatus(name, {
        subnets: [{ id: 'subnet-b', zone: 'us-east-1b' }],
        securityGroups: [],
        amis,
        conditions: [notReady],
      });
      nodeClass = await read();
      expect(nodeClass?.status).toEqual({
        subnets: [{ id: 'subnet-b', zone: 'us-east-1b' }],
        securityGroups: [],
        amis,
        conditions: [notReady],
      });
      // The status subresource leaves the spec and its generation alone.
      expect(nodeClass?.generation).toBe(generation);
      expect(nodeClass?.spec.amiSelectorTerms).toEqual([{ alias: 'al2023@latest' }]);
      await expect(
        s.cluster.patchNodeClassStatus(n('missing-class'), {
          subnets: [],
          securityGroups: [],
          amis: [],
          conditions: [],
        }),
      ).rejects.toMatchObject({ code: 'ClusterNotFound' });
    });

    it('patches EC2NodeClass metadata: finalizers added once and removed', async () => {
      const finalizersOf = async () =>
        (await s.cluster.nodeClasses()).items.find((c) => c.name === className)?.finalizers ?? [];
      await s.cluster.patchNodeClassMetadata(className, {
        labels: { team: 'web' },
        addFinalizers: ['karpenter.k8s.aws/termination'],
      });
      await s.cluster.patchNodeClassMetadata(className, { addFinalizers: ['karpenter.k8s.aws/termination'] });
      expect(await finalizersOf()).toEqual(['karpenter.k8s.aws/termination']);
      await s.cluster.patchNodeClassMetadata(className, {
        labels: { team: null },
        removeFinalizers: ['karpenter.k8s.aws/termination'],
      });
      expect(await finalizersOf()).toEqual([]);
      // The spec is untouched.
      const nodeClass = (await s.cluster.nodeClasses()).items.find((c) => c.name === className);
      expect(nodeClass?.spec.subnetSelectorTerms).toEqual([{ tags: { 'karpenter.sh/discovery': s.id } }]);
      await expect(
        s.cluster.patchNodeClassMetadata(n('missing-class'), { addFinalizers: ['x.example.com/y'] }),
      ).rejects.toMatchObject({ code: 'ClusterNotFound' });
    });

    it('creates a NodeClaim once, with the termination finalizer and its NodePool labels', async () => {
      const name = n('ct-claim');
      expect(await s.cluster.createNodeClaim(claimOf(name))).toBe(true);
      expect(await s.cluster.createNodeClaim(claimOf(name))).toBe(false);
      const claim = await s.cluster.nodeClaim(name);
      expect(claim).toMatchObject({
        name,
        nodePoolName: poolName,
        labels: {
          team: 'web',
          'karpenter.sh/nodepool': poolName,
          'karpenter.k8s.aws/ec2nodeclass': className,
        },
        annotations: {
          note: 'x',
          'karpenter.sh/nodepool-hash': '42',
          'karpenter.sh/nodepool-hash-version': 'v3',
        },
        finalizers: ['karpenter.sh/termination'],
        requests: { cpu: 1500, memory: 2 * GiB, pods: 3 },
        startupTaints: [{ key: 'cilium', effect: 'NoExecute' }],
        expireAfter: '24h',
        deleting: false,
      });
      expect(claim?.createdAtMs).toBeTypeOf('number');
      expect((await s.cluster.nodeClaims()).items.map((c) => c.name)).toContain(name);
      expect(await s.cluster.nodeClaim(n('missing-claim'))).toBeUndefined();
    });

    it("lists one NodePool's NodeClaims and Nodes by their karpenter.sh/nodepool label", async () => {
      const name = n('ct-pool-claim');
      await s.cluster.createNodeClaim(claimOf(name));
      const other = n('ct-other-pool');
      const otherNode = n('ct-other-node');
      await s.seedNode({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: otherNode, labels: { 'karpenter.sh/nodepool': other } },
        spec: { taints: [{ key: 'flotilla.test/contract', value: s.id, effect: 'NoSchedule' }] },
        status: { capacity: { cpu: '2' }, allocatable: { cpu: '2' } },
      });
      const claims = await s.cluster.nodeClaims({ consistent: true, nodePool: poolName });
      expect(claims.items.map((c) => c.name)).toContain(name);
      expect(claims.items.every((c) => c.nodePoolName === poolName)).toBe(true);
      expect((await s.cluster.nodeClaims({ consistent: true, nodePool: other })).items).toEqual([]);
      const nodes = (await s.cluster.nodeInfos({ consistent: true, nodePool: poolName })).items;
      expect(nodes.map((x) => x.name)).toContain(nodeName);
      expect(nodes.every((x) => x.labels['karpenter.sh/nodepool'] === poolName)).toBe(true);
      const others = await s.cluster.nodeInfos({ consistent: true, nodePool: other });
      expect(others.items.map((x) => x.name)).toEqual([otherNode]);
    });

    it('patches NodeClaim status, keeping lastTransitionTime while a condition keeps its status', async () => {
      const name = n('ct-status');
      await s.cluster.createNodeClaim(claimOf(name));
      await s.cluster.patchNodeClaimStatus(name, {
        conditions: [{ type: 'Launched', status: 'Unknown', reason: 'Launching', message: '' }],
      });
      s.clock.advance(30_000);
      const launchedAt = s.clock.now();
      await s.cluster.patchNodeClaimStatus(name, {
        providerId: 'aws:///us-east-1a/i-0abc',
        imageId: 'ami-0123',
        capacity: { cpu: 2000, memory: 8 * GiB, pods: 29 },
        allocatable: { cpu: 1930, memory: 7 * GiB, pods: 29 },
        conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
      });
      s.clock.advance(30_000);
      await s.cluster.patchNodeClaimStatus(name, {
        nodeName: 'node-a',
        conditions: [
          { type: 'Launched', status: 'True', reason: 'Launched', message: 'again' },
          { type: 'Registered', status: 'True', reason: 'Registered', message: '' },
        ],
      });
      const claim = await s.cluster.nodeClaim(name);
      expect(claim?.status).toMatchObject({
        providerId: 'aws:///us-east-1a/i-0abc',
        imageId: 'ami-0123',
        nodeName: 'node-a',
        capacity: { cpu: 2000, memory: 8 * GiB, pods: 29 },
        allocatable: { cpu: 1930, memory: 7 * GiB, pods: 29 },
      });
      const launched = claim?.status.conditions.find((c) => c.type === 'Launched');
      expect(launched?.message).toBe('again');
      expect(Date.parse(launched?.lastTransitionTime ?? '')).toBe(
        Math.floor(launchedAt.getTime() / 1000) * 1000,
      );
      expect(claim?.status.conditions.map((c) => c.type)).toEqual(['Launched', 'Registered']);
      await expect(
        s.cluster.patchNodeClaimStatus(n('missing-claim'), { nodeName: 'x' }),
      ).rejects.toMatchObject({
        code: 'ClusterNotFound',
      });
    });

    it('patches NodeClaim metadata: labels set and removed, finalizers added and removed', async () => {
      const name = n('ct-meta');
      await s.cluster.createNodeClaim(claimOf(name));
      await s.cluster.patchNodeClaimMetadata(name, {
        labels: { 'node.kubernetes.io/instance-type': 'm5.large', team: null },
        addFinalizers: ['example.com/hold'],
      });
      let claim = await s.cluster.nodeClaim(name);
      expect(claim?.labels['node.kubernetes.io/instance-type']).toBe('m5.large');
      expect(claim?.labels['team']).toBeUndefined();
      expect([...(claim?.finalizers ?? [])].sort()).toEqual(['example.com/hold', 'karpenter.sh/termination']);
      await s.cluster.patchNodeClaimMetadata(name, { removeFinalizers: ['example.com/hold'] });
      claim = await s.cluster.nodeClaim(name);
      expect(claim?.finalizers).toEqual(['karpenter.sh/termination']);
      await expect(
        s.cluster.patchNodeClaimMetadata(n('missing-claim'), { labels: { a: 'b' } }),
      ).rejects.toMatchObject({ code: 'ClusterNotFound' });
    });

    it('reads every NodeClaim as it is now, whatever changed since its last read', async () => {
      const kept = n('ct-reread-kept');
      const gone = n('ct-reread-gone');
      const added = n('ct-reread-added');
      await s.cluster.createNodeClaim(claimOf(kept));
      await s.cluster.createNodeClaim(claimOf(gone));
      const before = (await s.cluster.nodeClaims({ consistent: true })).items.map((c) => c.name);
      expect(before).toEqual(expect.arrayContaining([kept, gone]));
      await s.cluster.createNodeClaim(claimOf(added));
      await s.cluster.patchNodeClaimMetadata(kept, { labels: { reread: 'yes' } });
      await s.cluster.deleteNodeClaim(gone);
      await s.cluster.patchNodeClaimMetadata(gone, { removeFinalizers: ['karpenter.sh/termination'] });
      const after = (await s.cluster.nodeClaims({ consistent: true })).items;
      expect(after.map((c) => c.name)).toEqual(expect.arrayContaining([kept, added]));
      expect(after.map((c) => c.name)).not.toContain(gone);
      expect(after.find((c) => c.name === kept)?.labels['reread']).toBe('yes');
    });

    it('keeps a deleted NodeClaim until its finalizers are removed', async () => {
      const name = n('ct-delete');
      await s.cluster.createNodeClaim(claimOf(name));
      await s.cluster.deleteNodeClaim(name);
      const deleting = await s.cluster.nodeClaim(name);
      expect(deleting?.deleting).toBe(true);
      expect(deleting?.deletedAtMs).toBeTypeOf('number');
      // A second delete of an object being deleted changes nothing.
      await s.cluster.deleteNodeClaim(name);
      expect((await s.cluster.nodeClaim(name))?.deleting).toBe(true);
      await s.cluster.patchNodeClaimMetadata(name, { removeFinalizers: ['karpenter.sh/termination'] });
      expect(await s.cluster.nodeClaim(name)).toBeUndefined();
      await s.cluster.deleteNodeClaim(name);
    });

    it('reads nodes with their bound pods, and bound pods on their own', async () => {
      const uid = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'bound', namespace: ns, labels: { app: 'bound' } },
          spec: { containers: [container('250m')] },
        },
        nodeName,
      );
      const node = (await s.cluster.nodes()).items.find((x) => x.name === nodeName);
      expect(node).toMatchObject({
        nodePoolName: poolName,
        providerId: `aws:///us-east-1a/i-0${s.id}`,
        capacity: { cpu: 4000, memory: 16 * GiB, pods: 58 },
        allocatable: { cpu: 3920, memory: 15 * GiB, pods: 58 },
        deleting: false,
        unschedulable: false,
      });
      expect(node?.taints).toContainEqual({
        key: 'flotilla.test/contract',
        value: s.id,
        effect: 'NoSchedule',
      });
      expect(node?.pods.map((p) => [p.uid, p.name])).toEqual([[uid, 'bound']]);
      // The same Node read without a pod: everything but its pods.
      const info = (await s.cluster.nodeInfos()).items.find((x) => x.name === nodeName);
      const { pods: _pods, ...withoutPods } = node ?? { pods: [] };
      expect(info).toEqual(withoutPods);
      const bound = (await s.cluster.boundPods()).items.filter((b) => b.pod.namespace === ns);
      expect(bound.map((b) => [b.pod.name, b.nodeName])).toContainEqual(['bound', nodeName]);
      const one = await s.cluster.node(nodeName);
      expect(one?.name).toBe(nodeName);
      expect(one?.pods).toEqual([]);
      expect(await s.cluster.node(n('missing-node'))).toBeUndefined();
      // One Node with its pods, as a confirmation reads it: the same Node, the same pods.
      expect(await s.cluster.nodeWithPods(nodeName)).toEqual(node);
      expect(await s.cluster.nodeWithPods(n('missing-node'))).toBeUndefined();
    });

    it('lists as provisionable only the pods kube-scheduler marked Unschedulable', async () => {
      const uid = await s.seedUnschedulablePod({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'stuck', namespace: ns, labels: { app: 'stuck' } },
        spec: {
          containers: [container('1500m', '1Gi')],
          nodeSelector: { 'flotilla.test/none': s.id },
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
        },
      });
      const pods = (await s.cluster.provisionablePods()).items.filter((p) => p.namespace === ns);
      expect(pods.map((p) => p.name)).toEqual(['stuck']);
      expect(pods[0]).toMatchObject({
        uid,
        labels: { app: 'stuck' },
        nodeSelector: { 'flotilla.test/none': s.id },
        containers: [{ name: 'app', requests: { cpu: 1500, memory: GiB } }],
      });
      expect(pods[0]?.tolerations).toContainEqual({
        key: 'dedicated',
        operator: 'Equal',
        value: 'web',
        effect: 'NoSchedule',
      });
      const namespaces = await s.cluster.namespaceLabels();
      expect(namespaces.get(ns)).toMatchObject({ team: `t-${s.id}` });
    });

    it('patches a Node: labels, taints by key and effect, finalizers, owners', async () => {
      // A real owner: the API server's garbage collector removes objects whose owner is missing.
      await s.cluster.createNodeClaim(claimOf(n('owner')));
      const owner = {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        name: n('owner'),
        uid: (await s.cluster.nodeClaim(n('owner')))?.uid ?? '',
        blockOwnerDeletion: true,
      };
      await s.cluster.patchNode(nodeName, {
        labels: { 'karpenter.sh/initialized': 'true' },
        addTaints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }],
        addFinalizers: ['karpenter.sh/termination'],
        addOwnerReferences: [owner],
      });
      // An owner already there is not added twice.
      await s.cluster.patchNode(nodeName, { addOwnerReferences: [owner] });
      let node = await s.cluster.node(nodeName);
      expect(node?.ownerReferences).toEqual([owner]);
      expect(node?.labels['karpenter.sh/initialized']).toBe('true');
      expect(node?.taints?.map((t) => t.key).sort()).toEqual([
        'flotilla.test/contract',
        'karpenter.sh/disrupted',
      ]);
      expect(node?.finalizers).toEqual(['karpenter.sh/termination']);
      await s.cluster.patchNode(nodeName, {
        removeTaints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }],
        removeFinalizers: ['karpenter.sh/termination'],
      });
      node = await s.cluster.node(nodeName);
      expect(node?.taints?.map((t) => t.key)).toEqual(['flotilla.test/contract']);
      expect(node?.finalizers).toEqual([]);
      await expect(s.cluster.patchNode(n('missing-node'), { labels: { a: 'b' } })).rejects.toMatchObject({
        code: 'ClusterNotFound',
      });
    });

    it('records an event once within the dedupe window and counts a later repeat', async () => {
      const event = {
        subject: { kind: 'Pod' as const, namespace: ns, name: 'stuck' },
        type: 'Warning' as const,
        reason: 'FailedScheduling',
        message: `no nodePool fits (${s.id})`,
      };
      await s.cluster.recordEvent(event);
      await s.cluster.recordEvent(event);
      expect(await s.podEvents('stuck')).toEqual([
        { reason: 'FailedScheduling', message: event.message, count: 1 },
      ]);
      s.clock.advance(301_000);
      await s.cluster.recordEvent(event);
      expect(await s.podEvents('stuck')).toEqual([
        { reason: 'FailedScheduling', message: event.message, count: 2 },
      ]);
    });

    it('keys an event by its dedupe values: a new message within its own window is dropped, a later one replaces it', async () => {
      const event = {
        subject: { kind: 'Pod' as const, namespace: ns, name: 'held' },
        type: 'Normal' as const,
        reason: 'DoNotDisruptUntil',
        message: `protected until 10:05 (${s.id})`,
        dedupeValues: ['pod-uid'],
        dedupeSeconds: 60,
      };
      await s.cluster.recordEvent(event);
      s.clock.advance(30_000);
      await s.cluster.recordEvent({ ...event, message: 'protected until 10:06' });
      expect(await s.podEvents('held')).toEqual([
        { reason: 'DoNotDisruptUntil', message: event.message, count: 1 },
      ]);
      // Past the event's own window (shorter than the adapter's): counted, with the latest message.
      s.clock.advance(31_000);
      await s.cluster.recordEvent({ ...event, message: 'protected until 10:06' });
      expect(await s.podEvents('held')).toEqual([
        { reason: 'DoNotDisruptUntil', message: 'protected until 10:06', count: 2 },
      ]);
      // Other dedupe values are another Event.
      await s.cluster.recordEvent({ ...event, dedupeValues: ['pod-uid', '10:07'] });
      expect((await s.podEvents('held')).map((e) => e.count).sort()).toEqual([1, 2]);
    });

    it("resolves the zone a pending pod's claimed volume is in, and names the volume of a pod being drained", async () => {
      const storageClass = n('zonal');
      const volume = n('pv');
      await s.seed({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: storageClass },
        provisioner: 'ebs.csi.aws.com',
        volumeBindingMode: 'WaitForFirstConsumer',
      });
      await s.seed({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: volume },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: storageClass,
          claimRef: { namespace: ns, name: 'data' },
          csi: { driver: 'ebs.csi.aws.com', volumeHandle: `vol-${s.id}` },
          // A zone no node of the test cluster is in: the pod that claims it stays pending.
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1z'] },
                  ],
                },
              ],
            },
          },
        },
      });
      await s.seed({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: ns },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: storageClass,
          volumeName: volume,
          resources: { requests: { storage: '1Gi' } },
        },
      });
      const claimant = {
        spec: {
          containers: [container('100m')],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      };
      await s.seedUnschedulablePod({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'claimant', namespace: ns },
        ...claimant,
      });
      const pending = (await s.cluster.provisionablePods()).items.find(
        (p) => p.namespace === ns && p.name === 'claimant',
      );
      expect(pending?.volumeTopology).toEqual([
        {
          claimName: 'data',
          terms: [[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1z'] }]],
        },
      ]);
      await s.seedRunningPod(
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'mounted', namespace: ns }, ...claimant },
        nodeName,
      );
      const mounted = (await s.cluster.podsOnNode(nodeName)).items.find((p) => p.name === 'mounted');
      expect(mounted?.volumeNames).toEqual([volume]);
      // CSI attach limits: the node's CSINode, as its kubelet registers the drivers, and the
      // driver of the claim (its PV's); a driver without a count has no limit.
      await s.seed({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name: nodeName },
        spec: {
          drivers: [
            { name: 'ebs.csi.aws.com', nodeID: `i-${s.id}`, allocatable: { count: 25 } },
            { name: 'efs.csi.aws.com', nodeID: `i-${s.id}` },
          ],
        },
      });
      const limits = await s.cluster.volumeLimits();
      expect(limits.nodes.get(nodeName)).toEqual({ 'ebs.csi.aws.com': 25 });
      expect(limits.claimDrivers.get(`${ns}/data`)).toBe('ebs.csi.aws.com');
      const bound = (await s.cluster.nodes()).items.find((node) => node.name === nodeName);
      expect(bound?.pods.find((p) => p.name === 'mounted')?.claimVolumes).toEqual([
        { kind: 'claim', name: 'data' },
      ]);
    });

    it('lists the pods on a node for a drain, and deletes one', async () => {
      const uid = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'drained', namespace: ns, labels: { app: 'drained' }, annotations: { a: 'b' } },
          spec: {
            containers: [container('100m')],
            terminationGracePeriodSeconds: 45,
            priorityClassName: 'system-node-critical',
          },
        },
        nodeName,
      );
      const onNode = (await s.cluster.podsOnNode(nodeName)).items.filter((p) => p.namespace === ns);
      const drained = onNode.find((p) => p.name === 'drained');
      expect(drained).toMatchObject({
        uid,
        labels: { app: 'drained' },
        annotations: { a: 'b' },
        phase: 'Running',
        daemonSet: false,
        mirror: false,
        terminationGracePeriodSeconds: 45,
        priorityClassName: 'system-node-critical',
        volumeNames: [],
      });
      expect(drained?.deletedAtMs).toBeUndefined();
      await s.cluster.deletePod({ namespace: ns, name: 'drained', uid: 'not-its-uid' }, 0);
      expect((await s.cluster.podsOnNode(nodeName)).items.map((p) => p.name)).toContain('drained');
      await s.cluster.deletePod({ namespace: ns, name: 'drained', uid }, 0);
      expect((await s.cluster.podsOnNode(nodeName)).items.map((p) => p.name)).not.toContain('drained');
      await s.cluster.deletePod({ namespace: ns, name: 'drained', uid }, 0);
    });

    it('evicts a pod its budget allows and refuses one its budget does not', async () => {
      const free = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'free', namespace: ns, labels: { app: 'free' } },
          spec: { containers: [container('100m')] },
        },
        nodeName,
      );
      const guarded = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'guarded', namespace: ns, labels: { app: 'guarded' } },
          spec: { containers: [container('100m')] },
        },
        nodeName,
      );
      await s.seed({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'guard', namespace: ns },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } },
      });
      await s.waitForBudget('guard', 0);
      const budget = (await s.cluster.podDisruptionBudgets()).items.find(
        (b) => b.namespace === ns && b.name === 'guard',
      );
      expect(budget).toMatchObject({
        minAvailable: 1,
        disruptionsAllowed: 0,
        currentHealthy: 1,
        desiredHealthy: 1,
        expectedPods: 1,
      });

      expect(await s.cluster.evictPod({ namespace: ns, name: 'guarded', uid: guarded })).toBe('blocked');
      expect(await s.cluster.evictPod({ namespace: ns, name: 'free', uid: 'not-its-uid' })).toBe('gone');
      expect(await s.cluster.evictPod({ namespace: ns, name: 'nobody', uid: free })).toBe('gone');
      expect(await s.cluster.evictPod({ namespace: ns, name: 'free', uid: free })).toBe('evicted');
      // Evicted with the pod's grace period: it is terminating until its kubelet confirms.
      const after = (await s.cluster.podsOnNode(nodeName)).items.filter((p) => p.namespace === ns);
      expect(after.find((p) => p.name === 'free')?.deletedAtMs).toBeTypeOf('number');
      expect(after.find((p) => p.name === 'guarded')?.deletedAtMs).toBeUndefined();
    });

    it('refuses to evict a pod that two budgets select', async () => {
      const uid = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'doubly', namespace: ns, labels: { app: 'doubly', tier: 'x' } },
          spec: { containers: [container('100m')] },
        },
        nodeName,
      );
      for (const [budget, label] of [
        ['by-app', { app: 'doubly' }],
        ['by-tier', { tier: 'x' }],
      ] as const) {
        await s.seed({
          apiVersion: 'policy/v1',
          kind: 'PodDisruptionBudget',
          metadata: { name: budget, namespace: ns },
          spec: { minAvailable: 0, selector: { matchLabels: label } },
        });
        await s.waitForBudget(budget, 1);
      }
      expect(await s.cluster.evictPod({ namespace: ns, name: 'doubly', uid })).toBe('blocked');
    });

    it('allows no eviction under a maxUnavailable budget over a pod without a controller', async () => {
      const uid = await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'orphan', namespace: ns, labels: { app: 'orphan' } },
          spec: { containers: [container('100m')] },
        },
        nodeName,
      );
      await s.seed({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'orphans', namespace: ns },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'orphan' } } },
      });
      await s.waitForBudget('orphans', 0);
      expect(await s.cluster.evictPod({ namespace: ns, name: 'orphan', uid })).toBe('blocked');
    });

    /** A ReplicaSet or Job of `replicas` pods labelled app=`name`, bound to the suite's node. */
    const workload = (kind: 'ReplicaSet' | 'Job', name: string, replicas: number): ContractManifest => {
      const template = {
        metadata: { labels: { app: name } },
        spec: {
          nodeName,
          containers: [container('100m')],
          ...(kind === 'Job' ? { restartPolicy: 'Never' } : {}),
        },
      };
      return kind === 'ReplicaSet'
        ? {
            apiVersion: 'apps/v1',
            kind,
            metadata: { name, namespace: ns },
            spec: { replicas, selector: { matchLabels: { app: name } }, template },
          }
        : {
            apiVersion: 'batch/v1',
            kind,
            metadata: { name, namespace: ns },
            spec: { parallelism: replicas, completions: replicas, template },
          };
    };
    const budgetOver = (name: string, spec: Record<string, unknown>): ContractManifest => ({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: ns },
      spec: { ...spec, selector: { matchLabels: { app: name } } },
    });
    const evict = (pod: { name: string; uid: string } | undefined) =>
      s.cluster.evictPod({ namespace: ns, name: pod?.name ?? '', uid: pod?.uid ?? '' });
    const budgetNamed = async (name: string) =>
      (await s.cluster.podDisruptionBudgets()).items.find((b) => b.namespace === ns && b.name === name);

    it("counts maxUnavailable against the ReplicaSet's replicas: one eviction, then none until the evicted pod is replaced and Ready", async () => {
      await s.seed(workload('ReplicaSet', 'rs-one', 3));
      const [a, b] = await s.runOwnedPods('ReplicaSet', 'rs-one', 3);
      await s.seed(budgetOver('rs-one', { maxUnavailable: 1 }));
      await s.waitForBudget('rs-one', 1);
      expect(await budgetNamed('rs-one')).toMatchObject({
        maxUnavailable: 1,
        expectedPods: 3,
        desiredHealthy: 2,
        currentHealthy: 3,
        disruptionsAllowed: 1,
      });
      expect(await evict(a)).toBe('evicted');
      expect(await evict(b)).toBe('blocked');
      // The ReplicaSet replaces the evicted pod; once the replacement is Ready, one more may go.
      const after = await s.runOwnedPods('ReplicaSet', 'rs-one', 3);
      expect(after.map((p) => p.name)).not.toContain(a?.name);
      expect(after.map((p) => p.name)).toContain(b?.name);
      await s.waitForBudget('rs-one', 1);
      expect(await evict(b)).toBe('evicted');
    });

    it("counts a percentage minAvailable against the ReplicaSet's replicas, not the pods left", async () => {
      await s.seed(workload('ReplicaSet', 'rs-half', 4));
      const pods = await s.runOwnedPods('ReplicaSet', 'rs-half', 4);
      await s.seed(budgetOver('rs-half', { minAvailable: '50%' }));
      await s.waitForBudget('rs-half', 2);
      expect(await budgetNamed('rs-half')).toMatchObject({ expectedPods: 4, desiredHealthy: 2 });
      expect(await evict(pods[0])).toBe('evicted');
      expect(await evict(pods[1])).toBe('evicted');
      // Two of four still run: half of the replicas, so no more.
      expect(await evict(pods[2])).toBe('blocked');
    });

    it("allows no eviction under maxUnavailable of a Job's pod: a Job has no scale", async () => {
      await s.seed(workload('Job', 'job-one', 1));
      const [pod] = await s.runOwnedPods('Job', 'job-one', 1);
      await s.seed(budgetOver('job-one', { maxUnavailable: 1 }));
      await s.waitForBudget('job-one', 0);
      expect((await budgetNamed('job-one'))?.disruptionsAllowed).toBe(0);
      expect(await evict(pod)).toBe('blocked');
    });

    it('leaves finished pods out of bound pods but lists them on their node', async () => {
      await s.seedRunningPod(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'done', namespace: ns },
          spec: { containers: [container('100m')] },
        },
        nodeName,
      );
      await s.finishPod('done');
      const bound = (await s.cluster.boundPods()).items.filter((b) => b.pod.namespace === ns);
      expect(bound.map((b) => b.pod.name)).not.toContain('done');
      const node = (await s.cluster.nodes()).items.find((x) => x.name === nodeName);
      expect(node?.pods.map((p) => p.name)).not.toContain('done');
      const onNode = (await s.cluster.podsOnNode(nodeName)).items.filter((p) => p.namespace === ns);
      expect(onNode.find((p) => p.name === 'done')?.phase).toBe('Succeeded');
    });

    it('reads DaemonSets with their pod template', async () => {
      await s.seed({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent', namespace: ns },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: {
              nodeSelector: { 'flotilla.test/none': s.id },
              tolerations: [{ operator: 'Exists' }],
              containers: [container('100m', '128Mi')],
            },
          },
        },
      });
      const ds = (await s.cluster.daemonSets()).items.find((d) => d.namespace === ns && d.name === 'agent');
      expect(ds?.template).toMatchObject({
        labels: { app: 'agent' },
        nodeSelector: { 'flotilla.test/none': s.id },
        tolerations: [{ operator: 'Exists' }],
        containers: [{ name: 'app', requests: { cpu: 100, memory: 128 * 2 ** 20 } }],
      });
    });

    it('lists the VolumeAttachments of one node', async () => {
      for (const [suffix, node] of [
        ['a', nodeName],
        ['b', n('other-node')],
      ] as const) {
        await s.seed({
          apiVersion: 'storage.k8s.io/v1',
          kind: 'VolumeAttachment',
          metadata: { name: n(`ct-va-${suffix}`) },
          spec: {
            attacher: 'ebs.csi.aws.com',
            nodeName: node,
            source: { persistentVolumeName: n(`pv-${suffix}`) },
          },
        });
      }
      const attachments = await s.cluster.volumeAttachments(nodeName);
      expect(attachments.filter((a) => a.name.endsWith(s.id))).toEqual([
        { name: n('ct-va-a'), nodeName, persistentVolumeName: n('pv-a') },
      ]);
    });

    it('keeps a deleted Node until its finalizers are removed', async () => {
      const name = n('ct-gone-node');
      await s.seedNode({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, finalizers: ['karpenter.sh/termination'] },
        spec: { taints: [{ key: 'flotilla.test/contract', value: s.id, effect: 'NoSchedule' }] },
        status: { capacity: { cpu: '2' }, allocatable: { cpu: '2' } },
      });
      await s.cluster.deleteNode(name);
      const deleting = await s.cluster.node(name);
      expect(deleting).toMatchObject({ deleting: true, unschedulable: true });
      expect(deleting?.deletedAtMs).toBeTypeOf('number');
      await s.cluster.patchNode(name, { removeFinalizers: ['karpenter.sh/termination'] });
      expect(await s.cluster.node(name)).toBeUndefined();
      await s.cluster.deleteNode(name);
    });
  });
}
