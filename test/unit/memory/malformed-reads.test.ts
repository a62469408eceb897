import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { convertEach } from '../../../shared/apis/index.ts';
import { ValidationError } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { Cluster, ReadResult } from '../../../shared/ports/cluster.ts';
import { ec2NodeClass } from '../../fixtures/node-classes.ts';

// One malformed object in a list read is left out and reported in `problems`; the others are read.

const pod = (name: string, spec: Record<string, unknown>) => ({
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', resources: { requests: { cpu: '100m' } } }], ...spec },
});

const node = (name: string, status: Record<string, unknown>) => ({
  kind: 'Node',
  metadata: { name },
  spec: {},
  status: { allocatable: { cpu: '2' }, capacity: { cpu: '2' }, ...status },
});

const nodeClassRef = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };

const nodePool = (name: string, requirements: unknown) => ({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name },
  spec: { template: { spec: { requirements, nodeClassRef } } },
});

const nodeClaim = (name: string, taints: unknown) => ({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodeClaim',
  metadata: { name, labels: { 'karpenter.sh/nodepool': 'default' } },
  spec: { requirements: [], taints, nodeClassRef },
});

const budget = (name: string, selector: unknown) => ({
  kind: 'PodDisruptionBudget',
  metadata: { name, namespace: 'default' },
  spec: { minAvailable: 1, selector },
});

const daemonSet = (name: string, containers: unknown) => ({
  kind: 'DaemonSet',
  metadata: { name, namespace: 'default' },
  spec: { template: { spec: { containers } } },
});

type Read = (cluster: Cluster) => Promise<ReadResult<unknown>>;
const names = (items: readonly unknown[]) =>
  items.map((item) => {
    const it = item as { name?: string; pod?: { name: string }; pool?: { name: string } };
    return it.pod?.name ?? it.pool?.name ?? it.name;
  });

describe('a list read with one malformed object', () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>, Read, string, string]>([
    [
      'provisionablePods',
      pod('good', {}),
      pod('bad', { tolerations: 'everything' }),
      (c) => c.provisionablePods(),
      'pod "default/bad"',
      'spec.tolerations',
    ],
    [
      'boundPods',
      pod('good', { nodeName: 'n1' }),
      pod('bad', { nodeName: 'n1', containers: [{ name: 'app', resources: { requests: { cpu: ['1'] } } }] }),
      (c) => c.boundPods(),
      'pod "default/bad"',
      'spec.containers[0].resources.requests.cpu',
    ],
    [
      'nodes',
      node('good', {}),
      node('bad', { conditions: { type: 'Ready' } }),
      (c) => c.nodes(),
      'node "bad"',
      'status.conditions',
    ],
    [
      'nodePools',
      nodePool('good', []),
      nodePool('bad', [null]),
      (c) => c.nodePools(),
      'nodePool "bad"',
      'spec.template.spec.requirements.0',
    ],
    [
      'nodeClaims',
      nodeClaim('good', []),
      nodeClaim('bad', [{ key: 'k', effect: 7 }]),
      (c) => c.nodeClaims(),
      'nodeClaim "bad"',
      'spec.taints.0.effect',
    ],
    [
      'nodeClasses',
      ec2NodeClass('good'),
      // amiSelectorTerms a string, not a list of terms.
      ec2NodeClass('bad', { amiSelectorTerms: 'al2023' }),
      (c) => c.nodeClasses(),
      'ec2NodeClass "bad"',
      'spec',
    ],
    [
      'podDisruptionBudgets',
      budget('good', { matchLabels: { app: 'web' } }),
      budget('bad', { matchExpressions: [{ key: 'app', operator: 'Near' }] }),
      (c) => c.podDisruptionBudgets(),
      'podDisruptionBudget "default/bad"',
      'spec.selector.matchExpressions[0].operator',
    ],
    [
      'daemonSets',
      daemonSet('good', [{ name: 'agent' }]),
      daemonSet('bad', [{ name: 'agent', ports: [{ containerPort: '80' }] }]),
      (c) => c.daemonSets(),
      'daemonSet "default/bad"',
      'spec.template.spec.containers[0].ports[0].containerPort',
    ],
    [
      'podsOnNode',
      pod('good', { nodeName: 'n1' }),
      pod('bad', { nodeName: 'n1', terminationGracePeriodSeconds: 'soon' }),
      (c) => c.podsOnNode('n1'),
      'pod "default/bad"',
      'spec.terminationGracePeriodSeconds',
    ],
  ])('%s returns the others and reports the one', async (_read, good, bad, read, object, field) => {
    const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-11-21T10:00:00Z')) });
    for (const manifest of [good, bad]) {
      cluster.create(manifest as Parameters<typeof cluster.create>[0]);
      const meta = manifest['metadata'] as { name: string; namespace?: string };
      if (manifest['kind'] === 'Pod' && !(manifest['spec'] as { nodeName?: string }).nodeName) {
        cluster.markPodUnschedulable(meta.namespace ?? 'default', meta.name, '0/1 nodes are available');
      }
    }
    const result = await read(cluster);
    expect(names(result.items)).toEqual(['good']);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toBeInstanceOf(ValidationError);
    expect(result.problems[0]?.object).toBe(object);
    expect(result.problems[0]?.field).toBe(field);
  });

  it('leaves a malformed VolumeAttachment out of the drain', async () => {
    const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-11-21T10:00:00Z')) });
    cluster.create({
      kind: 'VolumeAttachment',
      metadata: { name: 'good' },
      spec: { nodeName: 'n1', source: { persistentVolumeName: 'pv-1' } },
    });
    cluster.create({
      kind: 'VolumeAttachment',
      metadata: { name: 'bad' },
      spec: { nodeName: 'n1', source: 7 },
    });
    cluster.create({ kind: 'VolumeAttachment', metadata: { name: 'no-spec' } });
    expect(await cluster.volumeAttachments('n1')).toEqual([
      { name: 'good', nodeName: 'n1', persistentVolumeName: 'pv-1' },
    ]);
  });
});

describe('convertEach', () => {
  it('reports what a converter throws other than ValidationError as that object’s problem, with the cause', () => {
    const bug = new TypeError('boom');
    const seen: ValidationError[] = [];
    const result = convertEach(
      [
        { kind: 'Pod', metadata: { name: 'a', namespace: 'ns' } },
        { kind: 'Pod', metadata: { name: 'b', namespace: 'ns' } },
      ],
      (raw) => {
        if (raw.metadata.name === 'b') throw bug;
        return raw.metadata.name;
      },
      (problem) => seen.push(problem),
    );
    expect(result.items).toEqual(['a']);
    expect(result.problems).toEqual(seen);
    expect(seen[0]).toBeInstanceOf(ValidationError);
    expect(seen[0]?.object).toBe('pod "ns/b"');
    expect(seen[0]?.message).toContain('boom');
    expect(seen[0]?.cause).toBe(bug);
  });
});
