import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toPod } from '../../../shared/apis/index.ts';
import { makePodReader } from '../../../shared/apis/pod-reader.ts';
import { joinPod, splitPod } from '../../../shared/apis/pod-templates.ts';
import { ValidationError } from '../../../shared/core/index.ts';
import { kubeArbitraries } from '../../fixtures/kube-arbitraries.ts';

// Pods read template by template must be exactly the pods toPod reads one by one, malformed ones
// included (the same error, naming the same pod and field).

const arbitraries = kubeArbitraries({ namespace: 'apps', prefix: 'templates' });

/** A generated pod as the API server would return it: with a uid, times, a phase and readiness. */
const served = fc
  .tuple(
    arbitraries.pod,
    fc.uuid(),
    fc.constantFrom(undefined, '2026-11-26T12:00:00Z'),
    fc.constantFrom(undefined, 'Running', 'Pending', 'Succeeded', 'Failed'),
    fc.constantFrom(undefined, 'True', 'False'),
    fc.constantFrom(undefined, '2026-11-26T12:05:00Z'),
    fc.constantFrom(undefined, 'ReplicaSet', 'StatefulSet'),
  )
  .map(([pod, uid, startTime, phase, ready, deletionTimestamp, owner]) => ({
    ...pod,
    metadata: {
      ...pod.metadata,
      uid,
      creationTimestamp: '2026-11-26T11:59:00Z',
      ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }),
      ...(owner === undefined
        ? {}
        : { ownerReferences: [{ kind: owner, name: 'web', uid: 'u', controller: true }] }),
    },
    status: {
      ...(phase === undefined ? {} : { phase }),
      ...(startTime === undefined ? {} : { startTime }),
      ...(ready === undefined ? {} : { conditions: [{ type: 'Ready', status: ready }] }),
    },
  }));

/** Breaks one field of a pod the way a bad object could (wrong types, bad quantities, bad times). */
const broken = fc.tuple(served, fc.nat({ max: 6 })).map(([pod, how]) => {
  const copy = structuredClone(pod);
  const meta: Record<string, unknown> = copy.metadata;
  const spec: Record<string, unknown> = copy.spec;
  const status: Record<string, unknown> = copy.status;
  switch (how) {
    case 0:
      spec['containers'] = [{ name: 'app', resources: { requests: { cpu: 'lots' } } }];
      break;
    case 1:
      meta['name'] = 42;
      break;
    case 2:
      meta['creationTimestamp'] = 'yesterday';
      break;
    case 3:
      status['startTime'] = 'soon';
      break;
    case 4:
      spec['tolerations'] = 'all';
      break;
    case 5:
      meta['deletionTimestamp'] = 'later';
      break;
    default:
      meta['labels'] = { app: 7 };
  }
  return copy;
});

function outcome(read: () => unknown): unknown {
  try {
    return { pod: read() };
  } catch (error) {
    if (error instanceof ValidationError) return { error: error.message };
    throw error;
  }
}

describe('pods read template by template', () => {
  it('carry when a pod began terminating and whether a StatefulSet owns it, read either way', () => {
    const raw = {
      metadata: {
        name: 'db-0',
        namespace: 'apps',
        uid: 'uid-db-0',
        deletionTimestamp: '2026-11-26T12:01:00Z',
        ownerReferences: [{ kind: 'StatefulSet', name: 'db', uid: 'ss', controller: true }],
      },
      spec: { nodeName: 'node-a', containers: [{ name: 'db', resources: { requests: { cpu: '1' } } }] },
      status: { phase: 'Running' },
    };
    const expected = {
      deletedAtMs: Date.parse('2026-11-26T12:01:00Z'),
      statefulSet: true,
    };
    expect(toPod(raw as never).disruption).toEqual(expected);
    expect(makePodReader().read(splitPod(raw)).disruption).toEqual(expected);
  });

  it('equal toPod of the whole pod, well-formed or not, however many share a template', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(served, broken), { minLength: 1, maxLength: 20 }), (pods) => {
        const reader = makePodReader();
        // Each pod twice, the second time as another pod of its workload.
        const all = pods.flatMap((p) => [
          p,
          { ...p, metadata: { ...p.metadata, name: `${String(p.metadata.name)}-b`, uid: 'second-uid' } },
        ]);
        for (const raw of all) {
          expect(outcome(() => reader.read(splitPod(raw)))).toEqual(outcome(() => toPod(raw as never)));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('shares one template between the pods of a workload, whatever their own fields', () => {
    const pod = (name: string, node: string) => ({
      metadata: {
        name,
        namespace: 'apps',
        uid: `uid-${name}`,
        creationTimestamp: '2026-11-26T11:59:00Z',
        labels: { app: 'web', 'pod-template-hash': 'abc' },
        annotations: { 'kubectl.kubernetes.io/restartedAt': name, 'karpenter.sh/do-not-disrupt': 'true' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'rs', controller: true },
        ],
        managedFields: [{ manager: name }],
      },
      spec: {
        nodeName: node,
        containers: [
          {
            name: 'app',
            image: `img:${name}`,
            env: [{ name: 'X', value: name }],
            resources: { requests: { cpu: '1' } },
          },
        ],
      },
      status: { phase: 'Running', startTime: '2026-11-26T12:00:00Z', podIP: '10.0.0.1' },
    });
    const a = splitPod(pod('web-1', 'node-a'));
    const b = splitPod(pod('web-2', 'node-b'));
    // Only what Flotilla reads is kept: the image, env, managedFields and other annotations go.
    expect(a.key).toBe(b.key);
    expect(a.instance).toEqual({
      name: 'web-1',
      uid: 'uid-web-1',
      creationTimestamp: '2026-11-26T11:59:00Z',
      nodeName: 'node-a',
      phase: 'Running',
      startTime: '2026-11-26T12:00:00Z',
    });
    expect(joinPod(a.template, a.instance)).toEqual({
      metadata: {
        namespace: 'apps',
        labels: { app: 'web', 'pod-template-hash': 'abc' },
        annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
        ownerReferences: [{ kind: 'ReplicaSet', name: 'web-abc', uid: 'rs', controller: true }],
        name: 'web-1',
        uid: 'uid-web-1',
        creationTimestamp: '2026-11-26T11:59:00Z',
      },
      spec: { containers: [{ name: 'app', resources: { requests: { cpu: '1' } } }], nodeName: 'node-a' },
      status: { phase: 'Running', startTime: '2026-11-26T12:00:00Z' },
    });
    const reader = makePodReader();
    reader.read(a);
    reader.read(b);
    expect(reader.templates()).toBe(1);
  });
});

describe('where a pod is in its life, as disruption reads it', () => {
  const pod = (status: Record<string, unknown>, deletionTimestamp?: string) => ({
    metadata: {
      name: 'web-1',
      namespace: 'apps',
      uid: 'uid-1',
      ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }),
    },
    spec: { nodeName: 'node-a', containers: [{ name: 'app' }] },
    status,
  });
  it.each([
    [
      'running and Ready',
      pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }),
      undefined,
    ],
    [
      'running, not Ready',
      pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] }),
      { notReady: true },
    ],
    ['running, readiness not reported', pod({ phase: 'Running' }), undefined],
    ['succeeded', pod({ phase: 'Succeeded' }), { finished: true }],
    ['failed', pod({ phase: 'Failed' }), { finished: true }],
    [
      'terminating',
      pod({ phase: 'Running' }, '2026-11-26T12:05:00Z'),
      { deletedAtMs: Date.parse('2026-11-26T12:05:00Z') },
    ],
  ])('%s', (_, raw, disruption) => {
    expect(toPod(raw as never).disruption).toEqual(disruption);
    expect(makePodReader().read(splitPod(raw)).disruption).toEqual(disruption);
  });
});
