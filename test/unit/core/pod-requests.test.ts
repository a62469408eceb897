import { describe, expect, it } from 'vitest';
import { computePodRequests, type Pod, podHostPorts } from '../../../shared/core/index.ts';

const Mi = 1024 ** 2;
const base = { uid: 'u', name: 'p', namespace: 'default' };

describe('computePodRequests', () => {
  it.each<[string, Omit<Pod, 'uid' | 'name' | 'namespace'>, Record<string, number>]>([
    [
      'sums containers',
      { containers: [{ requests: { cpu: 100, memory: 10 * Mi } }, { requests: { cpu: 200 } }] },
      { cpu: 300, memory: 10 * Mi, pods: 1 },
    ],
    ['no requests still takes a pod slot', { containers: [{}] }, { pods: 1 }],
    [
      'a big init container dominates',
      { containers: [{ requests: { cpu: 100 } }], initContainers: [{ requests: { cpu: 1000, memory: 5 } }] },
      { cpu: 1000, memory: 5, pods: 1 },
    ],
    [
      'a small init container does not add',
      { containers: [{ requests: { cpu: 500 } }], initContainers: [{ requests: { cpu: 100 } }] },
      { cpu: 500, pods: 1 },
    ],
    [
      'sidecars add to containers and to later init steps',
      {
        containers: [{ requests: { cpu: 500 } }],
        initContainers: [{ restartPolicy: 'Always', requests: { cpu: 200 } }, { requests: { cpu: 600 } }],
      },
      // max(500 + 200, 200 + 600) = 800
      { cpu: 800, pods: 1 },
    ],
    [
      'an init step before a sidecar does not hold it',
      {
        containers: [{ requests: { cpu: 100 } }],
        initContainers: [{ requests: { cpu: 650 } }, { restartPolicy: 'Always', requests: { cpu: 300 } }],
      },
      // max(100 + 300, 650) = 650
      { cpu: 650, pods: 1 },
    ],
    [
      'pod overhead is added',
      { containers: [{ requests: { cpu: 100 } }], overhead: { cpu: 250, memory: 120 * Mi } },
      { cpu: 350, memory: 120 * Mi, pods: 1 },
    ],
    [
      'extended resources',
      {
        containers: [
          { requests: { 'nvidia.com/gpu': 2, 'vpc.amazonaws.com/pod-eni': 1, 'aws.amazon.com/neuron': 1 } },
        ],
      },
      { 'nvidia.com/gpu': 2, 'vpc.amazonaws.com/pod-eni': 1, 'aws.amazon.com/neuron': 1, pods: 1 },
    ],
    [
      'pod-level requests replace the container sum',
      { containers: [{ requests: { cpu: 100, memory: 1 } }], podRequests: { cpu: 2000 } },
      { cpu: 2000, memory: 1, pods: 1 },
    ],
    [
      'pod-level requests alone, containers requesting nothing',
      { containers: [{}, {}], podRequests: { cpu: 1500, memory: 2 * Mi } },
      { cpu: 1500, memory: 2 * Mi, pods: 1 },
    ],
    [
      'pod-level requests may be below the container sum',
      { containers: [{ requests: { cpu: 800 } }, { requests: { cpu: 800 } }], podRequests: { cpu: 1000 } },
      { cpu: 1000, pods: 1 },
    ],
    [
      'pod-level cpu, memory and a GPU still from the containers',
      {
        containers: [
          { requests: { cpu: 100, memory: 3 * Mi, 'nvidia.com/gpu': 1 } },
          { requests: { memory: Mi } },
        ],
        podRequests: { cpu: 4000 },
      },
      { cpu: 4000, memory: 4 * Mi, 'nvidia.com/gpu': 1, pods: 1 },
    ],
    [
      'pod-level requests replace the init-container and sidecar aggregate too',
      {
        containers: [{ requests: { cpu: 500, memory: Mi } }],
        initContainers: [
          { restartPolicy: 'Always', requests: { cpu: 200 } },
          { requests: { cpu: 3000, memory: 8 * Mi } },
        ],
        podRequests: { memory: 16 * Mi },
      },
      // cpu: max(500 + 200, 200 + 3000) from the containers; memory from the pod level.
      { cpu: 3200, memory: 16 * Mi, pods: 1 },
    ],
    [
      'pod overhead is added on top of pod-level requests',
      {
        containers: [{ requests: { cpu: 100, memory: Mi } }],
        podRequests: { cpu: 1000, memory: 64 * Mi },
        overhead: { cpu: 250, memory: 120 * Mi },
      },
      { cpu: 1250, memory: 184 * Mi, pods: 1 },
    ],
    [
      'hugepages count at pod level; other resources there are ignored, as kube-scheduler does',
      {
        containers: [{ requests: { cpu: 100, 'hugepages-2Mi': 2 * Mi, 'ephemeral-storage': 5 } }],
        podRequests: { 'hugepages-2Mi': 8 * Mi, 'ephemeral-storage': 1000, 'nvidia.com/gpu': 4 },
      },
      { cpu: 100, 'hugepages-2Mi': 8 * Mi, 'ephemeral-storage': 5, pods: 1 },
    ],
  ])('%s', (_name, spec, expected) => {
    expect(computePodRequests({ ...base, ...spec })).toEqual(expected);
  });

  // In-place pod resize, as Karpenter counts it (component-helpers' PodRequests with the status
  // resources): a container whose status reports resources counts the largest of its spec
  // requests, what it runs with (`actual`) and what the node allocated; not the spec when the
  // resize is infeasible.
  it.each<[string, Omit<Pod, 'uid' | 'name' | 'namespace'>, Record<string, number>]>([
    [
      'a resize up the node allocated counts before the spec catches up',
      {
        containers: [
          {
            name: 'app',
            requests: { cpu: 500, memory: Mi },
            status: { allocated: { cpu: 2000, memory: Mi } },
          },
        ],
      },
      { cpu: 2000, memory: Mi, pods: 1 },
    ],
    [
      'a resize down pending keeps what the container still runs with',
      {
        containers: [
          {
            name: 'app',
            requests: { cpu: 250 },
            status: { actual: { cpu: 1000, memory: 8 * Mi }, allocated: { cpu: 250 } },
          },
        ],
      },
      { cpu: 1000, memory: 8 * Mi, pods: 1 },
    ],
    [
      'the spec wins where it is the largest',
      { containers: [{ name: 'app', requests: { cpu: 3000 }, status: { actual: { cpu: 1000 } } }] },
      { cpu: 3000, pods: 1 },
    ],
    [
      'an infeasible resize leaves the spec out where the status reports resources',
      {
        resizeInfeasible: true,
        containers: [
          {
            name: 'app',
            requests: { cpu: 8000, memory: 4 * Mi },
            status: { actual: { cpu: 1000 }, allocated: { cpu: 1000 } },
          },
          { name: 'other', requests: { cpu: 100 } },
        ],
      },
      { cpu: 1100, pods: 1 },
    ],
    [
      'a sidecar counts its status, another init container its spec',
      {
        containers: [{ name: 'app', requests: { cpu: 100 } }],
        initContainers: [
          {
            name: 'proxy',
            restartPolicy: 'Always',
            requests: { cpu: 100 },
            status: { allocated: { cpu: 900 } },
          },
          { name: 'setup', requests: { cpu: 500 }, status: { allocated: { cpu: 5000 } } },
        ],
      },
      // max(100 + 900, 900 + 500) = 1400
      { cpu: 1400, pods: 1 },
    ],
  ])('%s', (_name, spec, expected) => {
    expect(computePodRequests({ ...base, ...spec })).toEqual(expected);
  });

  it('lists host ports with protocol and address', () => {
    expect(
      podHostPorts({
        ...base,
        containers: [
          {
            ports: [
              { containerPort: 80, hostPort: 8080 },
              { containerPort: 53, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' },
              { containerPort: 9 },
            ],
          },
        ],
      }),
    ).toEqual(['TCP/0.0.0.0/8080', 'UDP/10.0.0.1/53']);
  });
});
