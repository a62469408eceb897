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
import { kubeArbitraries } from '../../fixtures/kube-arbitraries.ts';
import { type Kube, kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';
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

const { pod, node, nodeClaim, nodeClaimStatus } = kubeArbitraries({
  namespace: NAMESPACE,
  prefix: `objects-${id}`,
});

// --- the test ------------------------------------------------------------------------------------

beforeAll(async () => {
  cube = await kube();
  admin = makeRawApi(cube.userKubeConfig);
  controller = makeRawApi(cube.controllerKubeConfig);
  const core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  await createNamespace(core, NAMESPACE);
});

afterAll(async () => {
  await cube?.userKubeConfig
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: NAMESPACE })
    .catch(() => undefined);
  await makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger })
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
    const cluster = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
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
