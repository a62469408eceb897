import { describe, expect, it } from 'vitest';
import {
  encodeSummaryDocument,
  readSummaryDocument,
  SummaryBuilder,
  toDaemonSet,
  toPod,
} from '../../../shared/apis/index.ts';
import { makePodReader } from '../../../shared/apis/pod-reader.ts';
import { splitPod } from '../../../shared/apis/pod-templates.ts';
import { computePodRequests, ValidationError } from '../../../shared/core/index.ts';

// What a pod's status and spec say beyond its spec requests, read the same by every path that
// reads pods (toPod, the pod reader, the cluster summary): in-place resize, counted as Karpenter
// counts it (the larger of the spec requests, the requests a container runs with and those the node
// allocated to it), and Dynamic Resource Allocation requirements.

const AT = '2026-11-26T12:00:00Z';
const Mi = 1024 ** 2;

interface PodShape {
  readonly name?: string;
  readonly requests?: Record<string, string>;
  readonly statuses?: readonly Record<string, unknown>[];
  readonly initContainers?: readonly Record<string, unknown>[];
  readonly initStatuses?: readonly Record<string, unknown>[];
  readonly conditions?: readonly Record<string, unknown>[];
  readonly spec?: Record<string, unknown>;
  readonly nodeName?: string;
}

/** A pod as the API server serves it, one container `app`, bound to `node-a` unless told. */
function rawPod(o: PodShape = {}) {
  const name = o.name ?? 'web-1';
  return {
    metadata: {
      name,
      namespace: 'apps',
      uid: `uid-${name}`,
      creationTimestamp: AT,
      labels: { app: 'web' },
    },
    spec: {
      nodeName: o.nodeName ?? 'node-a',
      containers: [{ name: 'app', image: 'app', resources: { requests: o.requests ?? { cpu: '500m' } } }],
      ...(o.initContainers === undefined ? {} : { initContainers: o.initContainers }),
      ...o.spec,
    },
    status: {
      phase: 'Running',
      startTime: AT,
      ...(o.statuses === undefined ? {} : { containerStatuses: o.statuses }),
      ...(o.initStatuses === undefined ? {} : { initContainerStatuses: o.initStatuses }),
      ...(o.conditions === undefined ? {} : { conditions: o.conditions }),
    },
  };
}

/** What the kubelet reports of container `name`. */
const reported = (name: string, requests?: Record<string, string>, allocated?: Record<string, string>) => ({
  name,
  ready: true,
  restartCount: 0,
  image: 'app',
  resources: requests === undefined ? {} : { requests },
  ...(allocated === undefined ? {} : { allocatedResources: allocated }),
});

const INFEASIBLE = { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: 'too big' };
const DEFERRED = { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'later' };

/** The pod through the cluster summary: built by the shim, published, read by a Lambda. */
function throughSummary(...pods: readonly unknown[]) {
  const builder = new SummaryBuilder('prod');
  for (const p of pods) builder.apply('pods', 'ADDED', p);
  const summary = readSummaryDocument(
    encodeSummaryDocument(builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT })),
  );
  return { pods: summary.boundPods().items.map((b) => b.pod), builder };
}

/** The pod read every way: whole, by the pod reader, and through the summary; all must agree. */
function everyWay(raw: ReturnType<typeof rawPod>) {
  const whole = toPod(raw as never);
  expect(makePodReader().read(splitPod(raw))).toEqual(whole);
  expect(throughSummary(raw).pods).toEqual([whole]);
  return whole;
}

describe('in-place pod resize', () => {
  it.each<[string, PodShape, Record<string, number>]>([
    [
      'a resize up the node allocated counts before the spec follows',
      { statuses: [reported('app', { cpu: '500m' }, { cpu: '2' })] },
      { cpu: 2000, pods: 1 },
    ],
    [
      'a resize down keeps what the container still runs with',
      {
        requests: { cpu: '250m' },
        statuses: [reported('app', { cpu: '1', memory: '64Mi' }, { cpu: '250m' })],
      },
      { cpu: 1000, memory: 64 * Mi, pods: 1 },
    ],
    [
      'a deferred resize counts the largest, as any resize under way',
      {
        requests: { cpu: '4' },
        statuses: [reported('app', { cpu: '1' }, { cpu: '1' })],
        conditions: [DEFERRED],
      },
      { cpu: 4000, pods: 1 },
    ],
    [
      'an infeasible resize leaves the spec out',
      {
        requests: { cpu: '64', memory: '1Gi' },
        statuses: [reported('app', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })],
        conditions: [{ type: 'Ready', status: 'True' }, INFEASIBLE],
      },
      { cpu: 1000, memory: 1024 * Mi, pods: 1 },
    ],
    [
      'a sidecar counts its status; another init container and a status of no container do not',
      {
        initContainers: [
          { name: 'proxy', restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
          { name: 'setup', resources: { requests: { cpu: '200m' } } },
        ],
        statuses: [reported('app', { cpu: '500m' }, { cpu: '500m' }), reported('gone', { cpu: '9' })],
        initStatuses: [reported('proxy', { cpu: '100m' }, { cpu: '1' }), reported('setup', { cpu: '7' })],
      },
      // app 500m + proxy max(100m, 1) = 1.5; setup's step 1 + 200m is less.
      { cpu: 1500, pods: 1 },
    ],
  ])('%s, read the same by every path', (_name, shape, expected) => {
    expect(computePodRequests(everyWay(rawPod(shape)))).toEqual(expected);
  });

  it('a status that reports the spec changes nothing, and travels in neither the pod reader nor the summary', () => {
    const raw = rawPod({
      requests: { cpu: '500m', memory: '128Mi' },
      statuses: [reported('app', { cpu: '500m', memory: '128Mi' }, { cpu: '500m', memory: '128Mi' })],
    });
    const pod = everyWay(raw);
    expect(pod.containers).toEqual([{ name: 'app', requests: { cpu: 500, memory: 128 * Mi } }]);
    expect(pod.resizeInfeasible).toBeUndefined();
    expect(splitPod(raw).instance.resize).toBeUndefined();
    // Its row is as long as a pod's without any status.
    const { builder } = throughSummary(raw);
    expect(builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT }).pods.pods[0]).toHaveLength(8);
  });

  it('a resized pod keeps the statuses that count as its own fields, not in its workload template', () => {
    const one = rawPod({ name: 'web-1', statuses: [reported('app', { cpu: '500m' }, { cpu: '3' })] });
    const two = rawPod({ name: 'web-2' });
    expect(splitPod(one).key).toBe(splitPod(two).key);
    expect(splitPod(one).instance.resize).toEqual({
      containerStatuses: [
        { name: 'app', resources: { requests: { cpu: '500m' } }, allocatedResources: { cpu: '3' } },
      ],
    });
    const { pods } = throughSummary(one, two);
    expect(pods.map((p) => computePodRequests(p)['cpu']).sort()).toEqual([3000, 500]);
  });

  it('a status quantity that does not parse makes the pod unreadable the same way on every path', () => {
    const raw = rawPod({ statuses: [reported('app', { cpu: 'lots' })] });
    const error = (read: () => unknown) => {
      try {
        read();
      } catch (e) {
        if (e instanceof ValidationError) return e.message;
        throw e;
      }
      return undefined;
    };
    const expected = error(() => toPod(raw as never));
    expect(expected).toContain('status.containerStatuses[app].resources.requests');
    expect(error(() => makePodReader().read(splitPod(raw)))).toBe(expected);
    expect(throughSummary(raw).pods).toEqual([]);
  });

  it('a document whose rows carry no resize (an older shim) reads as before', () => {
    const resized = rawPod({ statuses: [reported('app', { cpu: '500m' }, { cpu: '3' })] });
    const builder = new SummaryBuilder('prod');
    builder.apply('pods', 'ADDED', resized);
    const document = builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT });
    const older = {
      ...document,
      pods: { ...document.pods, pods: document.pods.pods.map((row) => row.slice(0, 8) as never) },
    };
    const [pod] = readSummaryDocument(encodeSummaryDocument(older))
      .boundPods()
      .items.map((b) => b.pod);
    expect(pod?.name).toBe('web-1');
    expect(computePodRequests(pod ?? never())).toEqual({ cpu: 500, pods: 1 });
  });
});

describe('Dynamic Resource Allocation requirements', () => {
  it.each<[string, Record<string, unknown>]>([
    ['spec.resourceClaims', { resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }] }],
    [
      "a container's resources.claims",
      {
        containers: [{ name: 'app', resources: { requests: { cpu: '1' }, claims: [{ name: 'gpu' }] } }],
      },
    ],
    [
      "an init container's resources.claims",
      { initContainers: [{ name: 'setup', resources: { claims: [{ name: 'gpu', request: 'a' }] } }] },
    ],
  ])('are read from %s, the same by every path', (_name, spec) => {
    const pod = everyWay(rawPod({ spec }));
    expect(pod.dynamicResources).toBe(true);
  });

  it('are not there when the lists are empty', () => {
    const pod = everyWay(
      rawPod({ spec: { resourceClaims: [], containers: [{ name: 'app', resources: { claims: [] } }] } }),
    );
    expect(pod.dynamicResources).toBeUndefined();
  });

  it("are read from a DaemonSet's template", () => {
    const ds = toDaemonSet({
      metadata: { name: 'device-plugin', namespace: 'kube-system', uid: 'ds' },
      spec: {
        template: {
          metadata: { labels: { app: 'dp' } },
          spec: {
            containers: [{ name: 'dp', resources: { requests: { cpu: '100m' } } }],
            resourceClaims: [{ name: 'dev', resourceClaimName: 'shared' }],
          },
        },
      },
    } as never);
    expect(ds.template.dynamicResources).toBe(true);
  });

  it('a malformed list makes the pod unreadable, naming the field', () => {
    expect(() => toPod(rawPod({ spec: { resourceClaims: 'gpu' } }) as never)).toThrow(/spec\.resourceClaims/);
  });
});

function never(): never {
  throw new Error('no pod');
}
