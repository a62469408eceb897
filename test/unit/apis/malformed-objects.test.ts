import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isUnschedulable,
  makeVolumeIndex,
  parseEC2NodeClass,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toDrainPod,
  toPod,
  toPodDisruptionBudget,
  toVolumeAttachment,
  toVolumeTopology,
  usesClaims,
} from '../../../shared/apis/index.ts';
import { ValidationError } from '../../../shared/core/index.ts';

// Every converter of a Kubernetes object, fed objects shaped like the real ones with holes and
// wrong types: each either converts or throws ValidationError naming the object and the field,
// never a TypeError (one bad object must be a reported rejection, not a crashed read).

const VALID_POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-0',
    namespace: 'default',
    uid: 'uid-web-0',
    creationTimestamp: '2026-11-21T10:00:00Z',
    labels: { app: 'web' },
    annotations: {
      'karpenter.sh/do-not-disrupt': 'true',
      'controller.kubernetes.io/pod-deletion-cost': '5',
      'kubernetes.io/config.mirror': 'x',
    },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs' }],
  },
  spec: {
    containers: [
      {
        name: 'app',
        resources: { requests: { cpu: '250m', memory: '1Gi' } },
        ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP', hostIP: '0.0.0.0' }],
      },
    ],
    initContainers: [
      { name: 'sidecar', restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
      { name: 'init', resources: { requests: { cpu: '1' } } },
    ],
    overhead: { cpu: '50m' },
    resources: { requests: { cpu: '2' } },
    priority: 100,
    priorityClassName: 'high',
    terminationGracePeriodSeconds: 30,
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
        },
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'Exists' }] } },
        ],
      },
      podAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          {
            topologyKey: 'zone',
            labelSelector: { matchLabels: { app: 'db' } },
            namespaces: ['default'],
            namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] },
          },
        ],
      },
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 10,
            podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: {} } },
          },
        ],
      },
    },
    tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }],
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: 'zone',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { app: 'web' } },
        minDomains: 2,
        nodeAffinityPolicy: 'Honor',
        nodeTaintsPolicy: 'Ignore',
        matchLabelKeys: ['pod-template-hash'],
      },
    ],
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'unbound', persistentVolumeClaim: { claimName: 'unbound' } },
      {
        name: 'scratch',
        ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'zonal', accessModes: [] } } },
      },
    ],
  },
  status: {
    phase: 'Pending',
    startTime: '2026-11-21T10:00:01Z',
    conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
  },
};

const VALID_VOLUMES = {
  claims: [
    { metadata: { name: 'data', namespace: 'default' }, spec: { volumeName: 'pv-data' } },
    { metadata: { name: 'unbound', namespace: 'default' }, spec: { storageClassName: 'zonal' } },
    { metadata: { name: 'web-0-scratch', namespace: 'default' }, spec: {} },
  ],
  volumes: [
    {
      metadata: { name: 'pv-data' },
      spec: {
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['a'] }] },
            ],
          },
        },
      },
    },
  ],
  classes: [
    {
      metadata: { name: 'zonal' },
      provisioner: 'ebs.csi.aws.com',
      allowedTopologies: [
        { matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a', 'b'] }] },
      ],
    },
  ],
};

/** The volume index of (possibly malformed) claims, volumes and classes; lists are always lists. */
function volumeIndexOf(raw: unknown) {
  const r = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const list = (value: unknown) => (Array.isArray(value) ? value : []) as never[];
  return makeVolumeIndex(list(r['claims']), list(r['volumes']), list(r['classes']));
}

const VOLUMES = volumeIndexOf(VALID_VOLUMES);

const VALID_NODE = {
  metadata: {
    name: 'node-a',
    uid: 'uid-node-a',
    creationTimestamp: '2026-11-21T10:00:00Z',
    labels: { 'karpenter.sh/nodepool': 'default', 'karpenter.sh/initialized': 'true' },
    annotations: { a: 'b' },
    finalizers: ['karpenter.sh/termination'],
    ownerReferences: [
      { apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', name: 'c', uid: 'u', blockOwnerDeletion: true },
    ],
  },
  spec: {
    providerID: 'aws:///us-west-2a/i-0123',
    unschedulable: false,
    taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule', value: 'x' }],
  },
  status: {
    allocatable: { cpu: '1930m', memory: '7Gi', pods: '29' },
    capacity: { cpu: '2', memory: '8Gi', pods: '29' },
    conditions: [{ type: 'Ready', status: 'True' }],
  },
};

const REQUIREMENTS = [
  { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m7i'], minValues: 1 },
  { key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['1'] },
];

const VALID_NODEPOOL = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: {
    name: 'default',
    uid: 'uid-pool',
    generation: 2,
    annotations: { 'karpenter.sh/nodepool-hash': '1', 'karpenter.sh/nodepool-hash-version': 'v3' },
  },
  spec: {
    template: {
      metadata: { labels: { team: 'a' }, annotations: { b: 'c' } },
      spec: {
        requirements: REQUIREMENTS,
        taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
        startupTaints: [{ key: 'init', effect: 'NoExecute' }],
        expireAfter: '720h',
        terminationGracePeriod: '1h',
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      },
    },
    limits: { cpu: '100', memory: '400Gi' },
    weight: 10,
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '1m',
      budgets: [{ nodes: '10%', schedule: '0 9 * * *', duration: '1h', reasons: ['Empty'] }],
    },
  },
  status: {
    conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: 'x' }],
    resources: { cpu: '4', nodes: '1' },
    nodes: 1,
    nodeClassObservedGeneration: 1,
  },
};

const VALID_NODECLAIM = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodeClaim',
  metadata: {
    name: 'default-abcde',
    uid: 'uid-claim',
    creationTimestamp: '2026-11-21T10:00:00Z',
    labels: { 'karpenter.sh/nodepool': 'default' },
    annotations: { a: 'b' },
    finalizers: ['karpenter.sh/termination'],
  },
  spec: {
    requirements: REQUIREMENTS,
    resources: { requests: { cpu: '1', pods: '3' } },
    taints: [{ key: 'dedicated', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'init', effect: 'NoSchedule' }],
    expireAfter: '720h',
    terminationGracePeriod: '1h',
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
  },
  status: {
    providerID: 'aws:///us-west-2a/i-0123',
    imageID: 'ami-1',
    nodeName: 'node-a',
    capacity: { cpu: '2', memory: '8Gi' },
    allocatable: { cpu: '1930m', memory: '7Gi' },
    conditions: [{ type: 'Launched', status: 'True' }],
    lastPodEventTime: '2026-11-21T10:00:00Z',
  },
};

const VALID_NODECLASS = {
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name: 'default', uid: 'uid-class', generation: 1, finalizers: ['x'] },
  spec: {
    subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c' } }],
    securityGroupSelectorTerms: [{ id: 'sg-1' }],
    amiSelectorTerms: [{ alias: 'al2023@latest' }],
    role: 'KarpenterNodeRole',
    tags: { team: 'a' },
    kubelet: { maxPods: 110, systemReserved: { cpu: '100m' } },
    blockDeviceMappings: [
      { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '20Gi', volumeType: 'gp3' } },
    ],
    metadataOptions: { httpTokens: 'required' },
  },
  status: {
    subnets: [{ id: 'subnet-1', zone: 'us-west-2a' }],
    securityGroups: [{ id: 'sg-1' }],
    amis: [{ id: 'ami-1', requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }],
    conditions: [{ type: 'Ready', status: 'True' }],
  },
};

const VALID_PDB = {
  metadata: { name: 'web', namespace: 'default' },
  spec: {
    selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] },
    minAvailable: 1,
    unhealthyPodEvictionPolicy: 'AlwaysAllow',
  },
  status: { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 },
};

const VALID_DAEMONSET = {
  metadata: { name: 'agent', namespace: 'kube-system', uid: 'uid-ds' },
  spec: { template: { metadata: { labels: { app: 'agent' } }, spec: VALID_POD.spec } },
};

const VALID_VOLUME_ATTACHMENT = {
  metadata: { name: 'csi-1' },
  spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-a', source: { persistentVolumeName: 'pv-data' } },
};

type Json = unknown;
type Path = readonly (string | number)[];

/** Every path inside a JSON value (the root excluded). */
function pathsOf(value: Json, prefix: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, Json][] = Array.isArray(value)
    ? value.map((v, i): [number, Json] => [i, v])
    : Object.entries(value);
  return entries.flatMap(([key, child]) => {
    const path = [...prefix, key];
    return [path, ...pathsOf(child, path)];
  });
}

const DELETE = Symbol('delete');

/** A copy of `value` with the field at `path` replaced (or deleted). */
function mutate(value: Json, path: Path, replacement: unknown): Json {
  if (path.length === 0) return replacement;
  const [key, ...rest] = path as [string | number, ...Path];
  if (value === null || typeof value !== 'object') return value;
  const copy = (Array.isArray(value) ? [...value] : { ...value }) as Record<string | number, unknown>;
  if (rest.length === 0 && replacement === DELETE) {
    if (Array.isArray(copy)) copy.splice(key as number, 1);
    else delete copy[key];
    return copy;
  }
  copy[key] = mutate(copy[key], rest, replacement);
  return copy;
}

const replacement = fc.oneof(
  fc.constant(DELETE),
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string(),
  fc.constantFrom('', 'NaN', '-1', '1e400', 'Always', 'In', '__proto__', 'toString'),
  fc.array(fc.jsonValue(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
  fc.jsonValue(),
  fc.anything(),
);

/** Objects shaped like `valid` with one to four fields deleted or replaced by a wrong type. */
function malformed(valid: Json): fc.Arbitrary<unknown> {
  const paths = pathsOf(valid);
  const mutation = fc.tuple(fc.constantFrom(...paths), replacement);
  return fc
    .array(mutation, { minLength: 1, maxLength: 4 })
    .map((mutations) => mutations.reduce((value, [path, r]) => mutate(value, path, r), valid));
}

/** Anything at all, plus objects with the top-level keys of a Kubernetes object holding anything. */
const shapeless = fc.oneof(
  fc.anything(),
  fc.jsonValue(),
  fc.record(
    { apiVersion: fc.anything(), kind: fc.anything(), metadata: fc.anything(), spec: fc.anything() },
    { requiredKeys: [] },
  ),
  fc.record({
    metadata: fc.record({ name: fc.anything(), namespace: fc.anything(), uid: fc.anything() }),
    spec: fc.anything(),
    status: fc.anything(),
  }),
);

const RUNS = 1500;

/**
 * Runs `convert` on `RUNS` generated inputs; returns the inputs on which it threw anything but a
 * ValidationError, and how many it rejected with one.
 */
function fuzz(valid: Json, convert: (raw: never) => unknown) {
  expect(() => convert(valid as never), 'the unmutated object converts').not.toThrow();
  const untyped: { input: unknown; error: unknown }[] = [];
  let rejected = 0;
  fc.assert(
    fc.property(fc.oneof({ weight: 4, arbitrary: malformed(valid) }, shapeless), (input) => {
      try {
        convert(input as never);
      } catch (error) {
        if (error instanceof ValidationError) rejected++;
        else untyped.push({ input, error });
      }
    }),
    { numRuns: RUNS, seed: 20261121 },
  );
  return { untyped, rejected };
}

const describeUntyped = (untyped: readonly { input: unknown; error: unknown }[]) =>
  untyped.slice(0, 3).map(({ input, error }) => `${String(error)} for ${JSON.stringify(input)}`);

describe('converters reject malformed objects with ValidationError only', () => {
  it.each<[string, Json, (raw: never) => unknown]>([
    ['toPod', VALID_POD, (raw) => toPod(raw)],
    ['toPod with volumes', VALID_POD, (raw) => toPod(raw, VOLUMES)],
    [
      'toVolumeTopology of malformed claims, volumes and classes',
      VALID_VOLUMES,
      (raw) => toVolumeTopology(VALID_POD as never, volumeIndexOf(raw)),
    ],
    ['toDrainPod', VALID_POD, (raw) => toDrainPod(raw, new Map([['default/data', 'pv-data']]))],
    ['toDaemonSet', VALID_DAEMONSET, (raw) => toDaemonSet(raw)],
    ['toClusterNode', VALID_NODE, (raw) => toClusterNode(raw, [])],
    ['toClusterNodePool', VALID_NODEPOOL, (raw) => toClusterNodePool(raw)],
    ['toClusterNodeClaim', VALID_NODECLAIM, (raw) => toClusterNodeClaim(raw)],
    ['parseEC2NodeClass', VALID_NODECLASS, (raw) => parseEC2NodeClass(raw)],
    ['toPodDisruptionBudget', VALID_PDB, (raw) => toPodDisruptionBudget(raw)],
    ['toVolumeAttachment', VALID_VOLUME_ATTACHMENT, (raw) => toVolumeAttachment(raw)],
  ])('%s', (_name, valid, convert) => {
    const { untyped, rejected } = fuzz(valid, convert);
    expect(describeUntyped(untyped)).toEqual([]);
    expect(untyped).toHaveLength(0);
    // The inputs are malformed enough to be rejected often, so the property is not vacuous.
    expect(rejected).toBeGreaterThan(RUNS / 4);
  });

  it('isUnschedulable and usesClaims never throw, whatever the pod', () => {
    const { untyped, rejected } = fuzz(VALID_POD, (raw) => [isUnschedulable(raw), usesClaims(raw)]);
    expect(describeUntyped(untyped)).toEqual([]);
    expect(rejected).toBe(0);
  });
});
