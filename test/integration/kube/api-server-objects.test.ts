import { CoreV1Api } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpStatusOf } from '../../../shared/adapters/kube/errors.ts';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { makeRawApi, type RawApi } from '../../../shared/adapters/kube/raw.ts';
import {
  isUnschedulable,
  toClusterNode,
  toClusterNodeClaim,
  toDrainPod,
  toPod,
} from '../../../shared/apis/index.ts';
import { QUANTITY_MAX } from '../../../shared/core/index.ts';
import { type Kube, kube } from '../../harness/index.ts';
import { waitFor } from '../../harness/proc.ts';
import { silentLogger } from '../aws/fixtures.ts';

// The converters against the API server's own idea of a valid object: fast-check generates Pods,
// Nodes and NodeClaims over the fields Flotilla reads (quantities in every notation the API server
// parses, from `1n` to `8Ei` and `1e20`, pod-level resources, node affinity with matchFields as the
// DaemonSet controller writes it, pod (anti-)affinity with absent and empty selectors, topology
// spread, tolerations, ports, sidecars), asks the real kube-apiserver to create each one with
// `dryRun=All` (validated, defaulted, admitted, never stored), and converts what it returns, read as
// plain JSON as the adapter reads lists. Whatever the API server accepts must convert.
// Pods and Nodes are created as a user or a kubelet would (the administrator); NodeClaims as
// Flotilla's controller group. A NodeClaim's status is written through its status subresource, also
// with dryRun, on one NodeClaim Flotilla's own adapter creates.

const id = Math.random().toString(36).slice(2, 8);
const NAMESPACE = `objects-${id}`;

let cube: Kube;
let admin: RawApi;
let controller: RawApi;
const statusOf = { accepted: 0, refused: 0, refusals: [] as string[] };

/** POSTs with dryRun=All; undefined when the API server refuses the object (400 or 422). */
async function dryRun(api: RawApi, method: 'POST' | 'PATCH', path: string, body: unknown): Promise<unknown> {
  try {
    const created = await api.request({
      method,
      path,
      query: { dryRun: 'All' },
      body,
      ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}),
    });
    statusOf.accepted += 1;
    return created;
  } catch (error) {
    const status = httpStatusOf(error);
    if (status !== 400 && status !== 422) throw error;
    statusOf.refused += 1;
    if (statusOf.refusals.length < 5) statusOf.refusals.push(String((error as { body?: unknown }).body));
    return undefined;
  }
}

// --- arbitraries ------------------------------------------------------------------------------

const SUFFIXES = ['', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** A quantity string in any notation Kubernetes parses, tiny to far beyond any node. */
const quantity = fc.oneof(
  fc.tuple(fc.nat({ max: 5000 }), fc.constantFrom(...SUFFIXES)).map(([n, s]) => `${n}${s}`),
  fc
    .tuple(fc.nat({ max: 99 }), fc.nat({ max: 999 }), fc.constantFrom('', 'm', 'Gi', 'k'))
    .map(([a, b, s]) => `${a}.${b}${s}`),
  fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -9, max: 25 })).map(([a, e]) => `${a}e${e}`),
  fc.constantFrom(
    '8Ei',
    '1e20',
    '100E',
    '9223372036854775807',
    '1n',
    '0',
    '0.001m',
    '123456789012345678901234',
  ),
);

/** A whole number in a notation Kubernetes reads as one (pods and extended resources must be whole). */
const wholeQuantity = fc.oneof(
  fc.tuple(fc.nat({ max: 5000 }), fc.constantFrom('', 'k', 'M')).map(([n, s]) => `${n}${s}`),
  fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 15 })).map(([a, e]) => `${a}e${e}`),
  fc.constantFrom('9223372036854775807', '110'),
);

const labelKey = fc.constantFrom(
  'app',
  'team',
  'example.com/tier',
  'topology.kubernetes.io/zone',
  'k8s.io/x',
);
const labelValue = fc.constantFrom('', 'a', 'web', 'us-east-1a', 'v1.2-3_4');
const labels = fc.dictionary(labelKey, labelValue, { maxKeys: 3 });

const labelSelector = fc.oneof(
  fc.constant(undefined),
  fc.constant({}),
  fc.record({ matchLabels: fc.dictionary(labelKey, labelValue, { minKeys: 1, maxKeys: 2 }) }),
  fc.record({
    matchExpressions: fc.array(
      fc.oneof(
        fc.record({
          key: labelKey,
          operator: fc.constantFrom('In', 'NotIn'),
          values: fc.array(labelValue, { minLength: 1, maxLength: 2 }),
        }),
        fc.record({ key: labelKey, operator: fc.constantFrom('Exists', 'DoesNotExist') }),
      ),
      { minLength: 1, maxLength: 2 },
    ),
  }),
);

const nodeRequirement = fc.oneof(
  fc.record({
    key: labelKey,
    operator: fc.constantFrom('In', 'NotIn'),
    values: fc.array(labelValue, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ key: labelKey, operator: fc.constantFrom('Exists', 'DoesNotExist') }),
  fc.record({
    key: fc.constant('example.com/size'),
    operator: fc.constantFrom('Gt', 'Lt'),
    values: fc.nat({ max: 64 }).map((n) => [String(n)]),
  }),
);

const nodeSelectorTerm = fc
  .record(
    {
      matchExpressions: fc.array(nodeRequirement, { maxLength: 2 }),
      matchFields: fc.array(
        fc.record({
          key: fc.constant('metadata.name'),
          operator: fc.constantFrom('In', 'NotIn'),
          values: fc.constantFrom(['ip-10-0-0-1.ec2.internal'], ['node-a']),
        }),
        { maxLength: 1 },
      ),
    },
    { requiredKeys: [] },
  )
  .filter((t) => (t.matchExpressions?.length ?? 0) + (t.matchFields?.length ?? 0) > 0);

const podAffinityTerm = fc.record(
  {
    labelSelector,
    topologyKey: fc.constantFrom('kubernetes.io/hostname', 'topology.kubernetes.io/zone'),
    namespaces: fc.array(fc.constantFrom('default', NAMESPACE), { maxLength: 2 }),
    namespaceSelector: labelSelector,
  },
  { requiredKeys: ['topologyKey'] },
);

const podTerms = fc.record(
  {
    requiredDuringSchedulingIgnoredDuringExecution: fc.array(podAffinityTerm, { maxLength: 2 }),
    preferredDuringSchedulingIgnoredDuringExecution: fc.array(
      fc.record({ weight: fc.integer({ min: 1, max: 100 }), podAffinityTerm }),
      { maxLength: 2 },
    ),
  },
  { requiredKeys: [] },
);

const affinity = fc.record(
  {
    nodeAffinity: fc.record(
      {
        requiredDuringSchedulingIgnoredDuringExecution: fc.record({
          nodeSelectorTerms: fc.array(nodeSelectorTerm, { minLength: 1, maxLength: 2 }),
        }),
        preferredDuringSchedulingIgnoredDuringExecution: fc.array(
          fc.record({ weight: fc.integer({ min: 1, max: 100 }), preference: nodeSelectorTerm }),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: [] },
    ),
    podAffinity: podTerms,
    podAntiAffinity: podTerms,
  },
  { requiredKeys: [] },
);

const toleration = fc.oneof(
  fc.record(
    {
      key: labelKey,
      operator: fc.constant('Equal'),
      value: labelValue,
      effect: fc.constantFrom('NoSchedule', 'PreferNoSchedule'),
    },
    { requiredKeys: ['key'] },
  ),
  fc.record(
    {
      key: labelKey,
      operator: fc.constant('Exists'),
      effect: fc.constant('NoExecute'),
      tolerationSeconds: fc.integer({ min: -5, max: 3600 }),
    },
    { requiredKeys: ['operator', 'effect'] },
  ),
);

const spread = fc
  .record(
    {
      maxSkew: fc.integer({ min: 1, max: 5 }),
      topologyKey: fc.constantFrom('kubernetes.io/hostname', 'topology.kubernetes.io/zone'),
      whenUnsatisfiable: fc.constantFrom('DoNotSchedule', 'ScheduleAnyway'),
      labelSelector,
      minDomains: fc.integer({ min: 1, max: 5 }),
      nodeAffinityPolicy: fc.constantFrom('Honor', 'Ignore'),
      nodeTaintsPolicy: fc.constantFrom('Honor', 'Ignore'),
      matchLabelKeys: fc.constantFrom(['pod-template-hash'], []),
    },
    { requiredKeys: ['maxSkew', 'topologyKey', 'whenUnsatisfiable'] },
  )
  .map((c) => {
    // The API server admits minDomains only with DoNotSchedule, and matchLabelKeys with a selector.
    const { minDomains, matchLabelKeys, ...rest } = c;
    return {
      ...rest,
      ...(minDomains !== undefined && c.whenUnsatisfiable === 'DoNotSchedule' ? { minDomains } : {}),
      ...(matchLabelKeys !== undefined && c.labelSelector !== undefined ? { matchLabelKeys } : {}),
    };
  });

const requests = fc.dictionary(fc.constantFrom('cpu', 'memory', 'ephemeral-storage'), quantity, {
  maxKeys: 3,
});

const container = (name: string) =>
  fc
    .record(
      {
        requests,
        gpus: fc.nat({ max: 4 }),
        ports: fc.array(
          fc.record(
            {
              containerPort: fc.integer({ min: 1, max: 65535 }),
              hostPort: fc.integer({ min: 1, max: 65535 }),
              protocol: fc.constantFrom('TCP', 'UDP', 'SCTP'),
            },
            { requiredKeys: ['containerPort'] },
          ),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: [] },
    )
    .map((c) => ({
      name,
      image: 'public.ecr.aws/docker/library/busybox:stable',
      resources: {
        ...(c.requests === undefined ? {} : { requests: c.requests }),
        // Extended resources are whole and never overcommitted: requests equal limits.
        ...(c.gpus === undefined || c.gpus === 0 ? {} : { limits: { 'nvidia.com/gpu': String(c.gpus) } }),
      },
      ...(c.ports === undefined
        ? {}
        : {
            ports: c.ports.map((p, i) => ({
              ...p,
              containerPort: p.containerPort - (p.containerPort > 1 ? i : 0),
            })),
          }),
    }));

const podSpec = fc.record(
  {
    containers: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
    initContainers: fc.array(fc.boolean(), { maxLength: 2 }),
    podRequests: fc.dictionary(fc.constantFrom('cpu', 'memory'), quantity, { maxKeys: 2 }),
    nodeSelector: fc.dictionary(labelKey, labelValue, { maxKeys: 2 }),
    affinity,
    tolerations: fc.array(toleration, { maxLength: 3 }),
    topologySpreadConstraints: fc.array(spread, { maxLength: 2 }),
    // Bound (as a user may create a pod) or gated: the API server refuses both at once.
    placement: fc.oneof(
      fc.constant({}),
      fc.constantFrom('ip-10-0-0-1.ec2.internal', 'node-a').map((nodeName) => ({ nodeName })),
      fc.constant({ schedulingGates: [{ name: 'example.com/gate' }] }),
    ),
  },
  { requiredKeys: ['containers', 'placement'] },
);

let podCount = 0;

const pod = fc
  .tuple(
    podSpec,
    labels,
    fc.record(
      {
        'karpenter.sh/do-not-disrupt': fc.constantFrom('true', 'false', '10m', 'soon', ''),
        // The API server admits only a 32-bit integer here.
        'controller.kubernetes.io/pod-deletion-cost': fc.constantFrom('-5', '0', '2147483647'),
        note: fc.constantFrom('x', ''),
      },
      { requiredKeys: [] },
    ),
  )
  .chain(([spec, podLabels, annotations]) =>
    fc
      .tuple(
        fc.tuple(...spec.containers.map((_, i) => container(`c${i}`))),
        fc.tuple(...(spec.initContainers ?? []).map((_, i) => container(`init${i}`))),
      )
      .map(([containers, inits]) => {
        podCount += 1;
        const { podRequests, initContainers, containers: _, placement, ...rest } = spec;
        // Pod-level requests must cover the containers' own: those resources are set at pod level only.
        const podLevel = Object.keys(podRequests ?? {});
        const withoutPodLevel = <C extends { resources: { requests?: Record<string, string> } }>(
          c: C,
        ): C => ({
          ...c,
          resources: {
            ...c.resources,
            ...(c.resources.requests === undefined
              ? {}
              : {
                  requests: Object.fromEntries(
                    Object.entries(c.resources.requests).filter(([k]) => !podLevel.includes(k)),
                  ),
                }),
          },
        });
        return {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p-${podCount}`, namespace: NAMESPACE, labels: podLabels, annotations },
          spec: {
            ...rest,
            ...placement,
            containers: containers.map(withoutPodLevel),
            ...(inits.length > 0
              ? {
                  initContainers: inits
                    .map(withoutPodLevel)
                    .map((c, i) =>
                      (initContainers ?? [])[i] === true ? { ...c, restartPolicy: 'Always' } : c,
                    ),
                }
              : {}),
            ...(podRequests === undefined || Object.keys(podRequests).length === 0
              ? {}
              : { resources: { requests: podRequests } }),
          },
        };
      }),
  );

const taint = fc.record(
  {
    key: labelKey,
    value: labelValue,
    effect: fc.constantFrom('NoSchedule', 'PreferNoSchedule', 'NoExecute'),
  },
  { requiredKeys: ['key', 'effect'] },
);

const claimTaint = taint.map((t) => (t.value === '' ? { key: t.key, effect: t.effect } : t));

let nodeCount = 0;
const node = fc
  .record(
    {
      labels,
      taints: fc.uniqueArray(taint, { selector: (t) => `${t.key}:${t.effect}`, maxLength: 3 }),
      unschedulable: fc.boolean(),
      providerID: fc.constantFrom('aws:///us-east-1a/i-0123456789abcdef0', 'kind://docker/x', ''),
      capacity: fc.record(
        {
          cpu: quantity,
          memory: quantity,
          'ephemeral-storage': quantity,
          pods: wholeQuantity,
          'nvidia.com/gpu': wholeQuantity,
        },
        { requiredKeys: [] },
      ),
      allocatable: fc.record(
        { cpu: quantity, memory: quantity, pods: wholeQuantity, 'hugepages-2Mi': wholeQuantity },
        { requiredKeys: [] },
      ),
      ready: fc.constantFrom('True', 'False', 'Unknown'),
    },
    { requiredKeys: [] },
  )
  .map((n) => {
    nodeCount += 1;
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `objects-${id}-n${nodeCount}`,
        ...(n.labels === undefined ? {} : { labels: n.labels }),
      },
      spec: {
        ...(n.taints === undefined ? {} : { taints: n.taints }),
        ...(n.unschedulable === undefined ? {} : { unschedulable: n.unschedulable }),
        ...(n.providerID === undefined || n.providerID === '' ? {} : { providerID: n.providerID }),
      },
      status: {
        ...(n.capacity === undefined ? {} : { capacity: n.capacity }),
        ...(n.allocatable === undefined ? {} : { allocatable: n.allocatable }),
        ...(n.ready === undefined
          ? {}
          : { conditions: [{ type: 'Ready', status: n.ready, reason: 'KubeletReady', message: '' }] }),
      },
    };
  });

/** NodeClaim quantities: the CRD's pattern admits a sign. */
const signedQuantity = fc.oneof(
  quantity,
  quantity.map((q) => `-${q}`),
);

let claimCount = 0;
const nodeClaim = fc
  .record(
    {
      requirements: fc.array(
        fc.oneof(
          nodeRequirement,
          fc.record({
            key: fc.constant('node.kubernetes.io/instance-type'),
            operator: fc.constant('In'),
            values: fc.constant(['m5.large', 'c6a.large']),
            minValues: fc.integer({ min: 1, max: 2 }),
          }),
        ),
        { maxLength: 3 },
      ),
      requests: fc.dictionary(fc.constantFrom('cpu', 'memory', 'pods', 'nvidia.com/gpu'), signedQuantity, {
        maxKeys: 3,
      }),
      // Karpenter's CRD wants a taint value to be a label value that is not empty.
      taints: fc.array(claimTaint, { maxLength: 2 }),
      startupTaints: fc.array(claimTaint, { maxLength: 2 }),
      expireAfter: fc.constantFrom('720h', 'Never', '5m30s'),
      terminationGracePeriod: fc.constantFrom('1h', '0s', '48h30m'),
    },
    { requiredKeys: ['requirements'] },
  )
  .map((c) => {
    claimCount += 1;
    return {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: `objects-${id}-c${claimCount}`, labels: { 'karpenter.sh/nodepool': 'default' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: c.requirements,
        ...(c.requests === undefined ? {} : { resources: { requests: c.requests } }),
        ...(c.taints === undefined ? {} : { taints: c.taints }),
        ...(c.startupTaints === undefined ? {} : { startupTaints: c.startupTaints }),
        ...(c.expireAfter === undefined ? {} : { expireAfter: c.expireAfter }),
        ...(c.terminationGracePeriod === undefined
          ? {}
          : { terminationGracePeriod: c.terminationGracePeriod }),
      },
    };
  });

const condition = fc.record({
  type: fc.constantFrom('Launched', 'Registered', 'Initialized', 'Ready', 'Drifted', 'Example'),
  status: fc.constantFrom('True', 'False', 'Unknown'),
  reason: fc.constantFrom('Ready', 'NotReady', 'Drifted'),
  message: fc.constantFrom('', 'something happened'),
  lastTransitionTime: fc.constantFrom('2026-01-01T00:00:00Z', '2026-11-26T12:34:56Z'),
});

const nodeClaimStatus = fc.record(
  {
    providerID: fc.constantFrom(
      'aws:///us-east-1a/i-0123456789abcdef0',
      'aws:///us-east-1b/i-0fedcba987654321f',
    ),
    imageID: fc.constantFrom('ami-0123456789abcdef0'),
    nodeName: fc.constantFrom('ip-10-0-0-1.ec2.internal'),
    capacity: fc.dictionary(fc.constantFrom('cpu', 'memory', 'pods', 'ephemeral-storage'), signedQuantity, {
      maxKeys: 4,
    }),
    allocatable: fc.dictionary(fc.constantFrom('cpu', 'memory', 'pods'), signedQuantity, { maxKeys: 3 }),
    conditions: fc.uniqueArray(condition, { selector: (c) => c.type, maxLength: 4 }),
    lastPodEventTime: fc.constantFrom('2026-11-26T12:34:56Z'),
  },
  { requiredKeys: [] },
);

// --- the test ------------------------------------------------------------------------------------

beforeAll(async () => {
  cube = await kube();
  admin = makeRawApi(cube.userKubeConfig);
  controller = makeRawApi(cube.controllerKubeConfig);
  const core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await waitFor(
    'the namespace default ServiceAccount',
    async () => (await core.readNamespacedServiceAccount({ namespace: NAMESPACE, name: 'default' })) && true,
    { timeoutMs: 30_000 },
  );
});

afterAll(async () => {
  await cube?.userKubeConfig
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: NAMESPACE })
    .catch(() => undefined);
  await makeKubeCluster({ kubeConfig: cube.controllerKubeConfig, logger: silentLogger })
    .deleteNodeClaim(`objects-${id}-status`)
    .catch(() => undefined);
});

/** Runs `property` on `runs` generated objects; most must be ones the API server accepts. */
async function acceptedMostly(run: () => Promise<void>): Promise<void> {
  statusOf.accepted = 0;
  statusOf.refused = 0;
  statusOf.refusals.length = 0;
  await run();
  // A generator the API server mostly refuses would test little: say so.
  expect(statusOf.accepted, `refusals: ${statusOf.refusals.join('\n')}`).toBeGreaterThan(
    3 * statusOf.refused,
  );
}

describe('converters accept what the API server accepts', () => {
  it('Pods: every one the API server admits converts, for scheduling and for a drain', async () => {
    await acceptedMostly(() =>
      fc.assert(
        fc.asyncProperty(pod, async (manifest) => {
          const created = await dryRun(admin, 'POST', `/api/v1/namespaces/${NAMESPACE}/pods`, manifest);
          if (created === undefined) return;
          const converted = toPod(created as never);
          toDrainPod(created as never, new Map());
          isUnschedulable(created as never);
          const terms =
            (
              created as {
                spec: {
                  affinity?: {
                    nodeAffinity?: {
                      requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: unknown[] };
                    };
                  };
                };
              }
            ).spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
              ?.nodeSelectorTerms ?? [];
          expect(
            converted.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
              ?.nodeSelectorTerms ?? [],
          ).toHaveLength(terms.length);
          for (const c of converted.containers) {
            for (const amount of Object.values(c.requests ?? {})) {
              expect(Number.isInteger(amount) && amount >= 0 && amount <= QUANTITY_MAX).toBe(true);
            }
          }
        }),
        { numRuns: 150 },
      ),
    );
  });

  it('Pod status: every status the API server admits reads', async () => {
    await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NAMESPACE}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'status-base', namespace: NAMESPACE },
        spec: { containers: [{ name: 'c', image: 'public.ecr.aws/docker/library/busybox:stable' }] },
      },
    });
    const status = fc.record(
      {
        phase: fc.constantFrom('Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'),
        startTime: fc.constantFrom('2026-11-26T12:34:56Z'),
        nominatedNodeName: fc.constantFrom('node-a'),
        conditions: fc.uniqueArray(
          fc.record({
            type: fc.constantFrom(
              'PodScheduled',
              'Ready',
              'Initialized',
              'ContainersReady',
              'DisruptionTarget',
            ),
            status: fc.constantFrom('True', 'False', 'Unknown'),
            reason: fc.constantFrom('Unschedulable', 'SchedulerError', 'PodCompleted'),
          }),
          { selector: (c) => c.type, maxLength: 3 },
        ),
      },
      { requiredKeys: [] },
    );
    await acceptedMostly(() =>
      fc.assert(
        fc.asyncProperty(status, async (s) => {
          const updated = await dryRun(
            admin,
            'PATCH',
            `/api/v1/namespaces/${NAMESPACE}/pods/status-base/status`,
            { status: s },
          );
          if (updated === undefined) return;
          toPod(updated as never);
          const drain = toDrainPod(updated as never, new Map());
          isUnschedulable(updated as never);
          expect(drain.phase).toBe((updated as { status: { phase?: string } }).status.phase ?? 'Pending');
        }),
        { numRuns: 40 },
      ),
    );
  });

  it('Nodes: every one the API server admits converts', async () => {
    await acceptedMostly(() =>
      fc.assert(
        fc.asyncProperty(node, async (manifest) => {
          const created = await dryRun(admin, 'POST', '/api/v1/nodes', manifest);
          if (created === undefined) return;
          const converted = toClusterNode(created as never, []);
          for (const amount of [
            ...Object.values(converted.allocatable),
            ...Object.values(converted.capacity ?? {}),
          ]) {
            expect(Number.isInteger(amount) && amount >= 0 && amount <= QUANTITY_MAX).toBe(true);
          }
        }),
        { numRuns: 100 },
      ),
    );
  });

  it('NodeClaims of a NodePool: every one the API server admits converts', async () => {
    await acceptedMostly(() =>
      fc.assert(
        fc.asyncProperty(nodeClaim, async (manifest) => {
          const created = await dryRun(controller, 'POST', '/apis/karpenter.sh/v1/nodeclaims', manifest);
          if (created === undefined) return;
          const converted = toClusterNodeClaim(created);
          for (const amount of Object.values(converted.requests)) expect(amount).toBeGreaterThanOrEqual(0);
        }),
        { numRuns: 100 },
      ),
    );
  });

  it('NodeClaim status: every status the API server admits converts', async () => {
    const name = `objects-${id}-status`;
    const cluster = makeKubeCluster({ kubeConfig: cube.controllerKubeConfig, logger: silentLogger });
    await cluster.createNodeClaim({
      name,
      nodePool: { name: 'default', uid: '00000000-0000-0000-0000-000000000000' },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      labels: {},
      annotations: {},
      requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      requests: {},
      taints: [],
      startupTaints: [],
    });
    await acceptedMostly(() =>
      fc.assert(
        fc.asyncProperty(nodeClaimStatus, async (status) => {
          const updated = await dryRun(
            controller,
            'PATCH',
            `/apis/karpenter.sh/v1/nodeclaims/${name}/status`,
            { status },
          );
          if (updated === undefined) return;
          const converted = toClusterNodeClaim(updated);
          const written = (updated as { status?: { conditions?: unknown[] } }).status?.conditions ?? [];
          expect(converted.status.conditions).toHaveLength(written.length);
        }),
        { numRuns: 60 },
      ),
    );
  });
});
