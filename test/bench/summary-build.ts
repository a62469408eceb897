import { SummaryBuilder, toNodeClaimManifest, toQuantityMap } from '../../shared/apis/index.ts';
import { computeAllocatable, type InstanceType, Label } from '../../shared/core/index.ts';
import type { EC2NodeClass } from '../../shared/ports/cloud.ts';
import { LAUNCH_ANNOTATION, launchAnnotation } from '../../shared/usecases/state/launch-record.ts';
import { launchCandidates, launchRecordOf, launchRequestOf } from './scale/aws-setup.ts';
import {
  daemonPod,
  nodeObject,
  nodeStatus,
  runningPodStatus,
  workloadPod,
  workloadTemplate,
} from './scale/objects.ts';
import type { ClusterPlan } from './scale/plan.ts';
import { Random } from './scale/random.ts';

// The scale bench's cluster (its plan and its objects) as the shim's watches would see it, put in
// the shim's own SummaryBuilder without a control plane: pods as the ReplicaSet and DaemonSet
// controllers create them with the status kubelet reports, Nodes as an EKS kubelet registers them
// (then registered by Flotilla), NodeClaims as Flotilla writes them (with their launch record).

const AT = '2026-11-26T12:00:00Z';

/** A uid as the API server makes them. */
function uid(random: Random): string {
  const h = random.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** An object as the API server serves it (uid, resourceVersion, creation time, managed fields). */
function served(
  raw: Record<string, unknown>,
  random: Random,
  resourceVersion: number,
): Record<string, unknown> {
  const metadata = raw['metadata'] as Record<string, unknown>;
  return {
    ...raw,
    metadata: {
      ...metadata,
      uid: uid(random),
      resourceVersion: String(resourceVersion),
      creationTimestamp: AT,
      managedFields: [{ manager: 'kube-controller-manager', operation: 'Update', time: AT }],
    },
  };
}

/** The planned cluster's pods, Nodes and NodeClaims in a SummaryBuilder. */
export function buildSummary(
  plan: ClusterPlan,
  types: ReadonlyMap<string, InstanceType>,
  seed: number,
): SummaryBuilder {
  const random = new Random(seed ^ 0x5eed);
  const builder = new SummaryBuilder('bench');
  const catalog = [...types.values()];
  const candidatesOf = new Map<string, InstanceType[]>();
  let version = 1000;
  const nodeClass = {
    name: 'default',
    spec: { tags: { team: 'platform', environment: 'production' } },
    status: {
      subnets: ['a', 'b', 'c'].map((z) => ({ id: `subnet-${random.hex(17)}`, zone: `us-east-1${z}` })),
    },
  } as unknown as EC2NodeClass;
  const nodeNames = plan.nodes.map((n) => `ip-10-0-${n.index >> 8}-${n.index & 255}.ec2.internal`);
  for (const node of plan.nodes) {
    const type = types.get(node.shape.instanceType) as InstanceType;
    const instanceId = `i-${random.hex(17)}`;
    const providerID = `aws:///${node.zone}/${instanceId}`;
    const name = nodeNames[node.index] ?? '';
    const capacity = toQuantityMap(type.capacity);
    const allocatable = toQuantityMap(computeAllocatable(type));
    const labels = {
      ...type.labels,
      [Label.nodePool]: 'default',
      [Label.zone]: node.zone,
      [Label.capacityType]: node.capacityType,
      'karpenter.k8s.aws/ec2nodeclass': 'default',
    };
    const candidates = candidatesOf.get(type.name) ?? launchCandidates(type, catalog);
    candidatesOf.set(type.name, candidates);
    const requirements = [
      { key: Label.nodePool, operator: 'In' as const, values: ['default'] },
      { key: Label.instanceCategory, operator: 'In' as const, values: ['c', 'm', 'r'] },
      { key: Label.instanceGeneration, operator: 'Gt' as const, values: ['2'] },
      { key: Label.arch, operator: 'In' as const, values: ['amd64'] },
      { key: Label.os, operator: 'In' as const, values: ['linux'] },
      { key: Label.capacityType, operator: 'In' as const, values: ['spot', 'on-demand'] },
      { key: Label.instanceType, operator: 'In' as const, values: candidates.map((c) => c.name) },
    ];
    const record = launchRecordOf(
      launchRequestOf(node, nodeClass, candidates, requirements, labels),
      random,
      Date.parse(AT) - 1_000,
    );
    const manifest = toNodeClaimManifest({
      name: node.nodeClaimName,
      nodePool: { name: 'default', uid: 'pool-uid' },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      labels,
      annotations: { [LAUNCH_ANNOTATION]: launchAnnotation(record, Date.parse(AT) - 500) },
      nodePoolHash: { hash: '6821555240594823858', version: 'v3' },
      requirements,
      requests: { cpu: node.usedCpuMillis, memory: node.usedMemoryBytes, pods: node.pods },
      taints: [],
      startupTaints: [],
      expireAfter: '720h',
    });
    const condition = (type: string) => ({
      type,
      status: 'True',
      reason: type,
      message: '',
      lastTransitionTime: AT,
    });
    version += 1;
    builder.apply('nodeClaims', 'ADDED', {
      ...served(manifest, random, version),
      status: {
        providerID,
        nodeName: name,
        imageID: 'ami-0123456789abcdef0',
        capacity,
        allocatable,
        conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map(condition),
        lastPodEventTime: AT,
      },
    });
    const body = nodeObject({
      name,
      instanceId,
      zone: node.zone,
      ip: '10.0.0.1',
      instanceType: type.name,
      arch: 'amd64',
      labels,
    });
    const status = nodeStatus({
      name,
      instanceId,
      ip: '10.0.0.1',
      arch: 'amd64',
      capacity,
      allocatable,
      now: AT,
      random,
      workloadImages: [],
    });
    version += 1;
    const registered = served({ ...body, ...status }, random, version) as {
      metadata: Record<string, unknown>;
    };
    builder.apply('nodes', 'ADDED', {
      ...registered,
      metadata: {
        ...registered.metadata,
        labels: {
          ...(registered.metadata['labels'] as Record<string, string>),
          'karpenter.sh/registered': 'true',
          'karpenter.sh/initialized': 'true',
        },
        finalizers: ['karpenter.sh/termination'],
      },
      spec: { providerID },
    });
  }
  const templates = plan.workloads.map(workloadTemplate);
  const replicaSets = plan.workloads.map(() => uid(random));
  const addPod = (body: Record<string, unknown>) => {
    version += 1;
    const pod = served(body, random, version);
    builder.apply('pods', 'ADDED', {
      ...pod,
      ...runningPodStatus(pod, random, '10.0.0.1', '10.0.1.1', AT),
    });
  };
  for (const pod of plan.pods) {
    const w = plan.workloads[pod.workload];
    const template = templates[pod.workload];
    if (w === undefined || template === undefined) continue;
    addPod(workloadPod(template, w, pod.name, replicaSets[pod.workload] ?? '', nodeNames[pod.node] ?? ''));
  }
  for (const ds of plan.daemonSets) {
    const owner = uid(random);
    for (const node of plan.nodes) {
      addPod(
        daemonPod(ds, owner, '7d9f8c6b5d', `${ds.name}-${random.suffix(5)}`, nodeNames[node.index] ?? ''),
      );
    }
  }
  return builder;
}
