import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { admitPriority, ValidationError } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';

// Pod priority as the Priority admission plugin resolves it: in the core, and where the in-memory
// cluster creates pods as the API server does.

const classes = [
  { name: 'important', value: 1000 },
  { name: 'background', value: -5, globalDefault: true },
];

describe('admitPriority', () => {
  it.each([
    ['a class of the cluster', { priorityClassName: 'important' }, 1000],
    ['system-node-critical', { priorityClassName: 'system-node-critical' }, 2_000_001_000],
    ['system-cluster-critical', { priorityClassName: 'system-cluster-critical' }, 2_000_000_000],
    ['no class: the global default', {}, -5],
    ['an empty class name: the global default', { priorityClassName: '' }, -5],
    ['a priority equal to its class', { priorityClassName: 'important', priority: 1000 }, 1000],
  ])('admits %s', (_, spec, priority) => {
    expect(admitPriority(spec, classes)).toEqual({ kind: 'admitted', priority });
  });

  it('gives 0 to a pod naming no class when there is no global default', () => {
    expect(admitPriority({}, [{ name: 'important', value: 1000 }])).toEqual({
      kind: 'admitted',
      priority: 0,
    });
  });

  it('refuses a pod naming a class there is not, naming those there are', () => {
    expect(admitPriority({ priorityClassName: 'hihg' }, classes)).toEqual({
      kind: 'refused',
      field: 'priorityClassName',
      message:
        'no PriorityClass with name hihg was found (the cluster has background, important, system-cluster-critical, system-node-critical)',
    });
  });

  it('refuses a priority that is not its class value', () => {
    expect(admitPriority({ priorityClassName: 'important', priority: 7 }, classes)).toMatchObject({
      kind: 'refused',
      field: 'priority',
    });
  });
});

describe('the in-memory cluster admits pods as the API server does', () => {
  const pod = (name: string, spec: Record<string, unknown>) => ({
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'app' }], ...spec },
  });
  const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-01-01T00:00:00Z')) });
  for (const c of classes) {
    cluster.create({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: c.name },
      ...c,
    });
  }
  const priorityOf = (name: string) =>
    (cluster.get('Pod', name, 'default') as { spec: { priority?: number } }).spec.priority;

  it('sets spec.priority from the class a pod names, the global default otherwise', () => {
    cluster.create(pod('web', { priorityClassName: 'important' }));
    cluster.create(pod('agent', { priorityClassName: 'system-node-critical' }));
    cluster.create(pod('batch', {}));
    expect([priorityOf('web'), priorityOf('agent'), priorityOf('batch')]).toEqual([1000, 2_000_001_000, -5]);
  });

  it('keeps the priority of a pod admitted before, which names no class', () => {
    cluster.create(pod('snapshot', { priority: 42 }));
    expect(priorityOf('snapshot')).toBe(42);
  });

  it('refuses a pod naming a class there is not, and stores nothing', () => {
    expect(() => cluster.create(pod('typo', { priorityClassName: 'hihg' }))).toThrow(ValidationError);
    expect(() => cluster.create(pod('typo', { priorityClassName: 'hihg' }))).toThrow(
      /pod "default\/typo": spec\.priorityClassName: no PriorityClass with name hihg was found/,
    );
    expect(cluster.get('Pod', 'typo', 'default')).toBeUndefined();
  });
});
