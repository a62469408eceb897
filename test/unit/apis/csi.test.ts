import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { makeVolumeIndex, toClaimDrivers, toCsiNodeLimits, toPod } from '../../../shared/apis/index.ts';
import { podClaimIds } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';

// CSI attach limits as read from the cluster: CSINode allocatable counts, the driver of each claim,
// and the claims each pod mounts.

const claim = (name: string, spec: object) => ({ metadata: { namespace: 'apps', name }, spec });
const storageClass = (
  name: string,
  provisioner: string,
  isDefault = false,
  created = '2026-01-01T00:00:00Z',
) => ({
  metadata: {
    name,
    creationTimestamp: created,
    ...(isDefault ? { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } : {}),
  },
  provisioner,
});

describe('toCsiNodeLimits', () => {
  it('keeps the drivers that report an allocatable count', () => {
    expect(
      toCsiNodeLimits({
        metadata: { name: 'n1' },
        spec: {
          drivers: [
            { name: 'ebs.csi.aws.com', nodeID: 'i-1', allocatable: { count: 25 } },
            { name: 'efs.csi.aws.com', nodeID: 'i-1' },
          ],
        },
      }),
    ).toEqual({ nodeName: 'n1', limits: { 'ebs.csi.aws.com': 25 } });
  });

  it('rejects a count that is not an integer, naming the field', () => {
    expect(() =>
      toCsiNodeLimits({
        metadata: { name: 'n1' },
        spec: { drivers: [{ name: 'x', allocatable: { count: 'many' } }] },
      }),
    ).toThrow('spec.drivers[0].allocatable.count');
  });
});

describe('toClaimDrivers', () => {
  it('takes the PV driver, else the StorageClass provisioner (default class, in-tree names translated)', () => {
    const index = makeVolumeIndex(
      [
        claim('bound', { volumeName: 'pv-csi', storageClassName: 'gp3' }),
        claim('in-tree-pv', { volumeName: 'pv-ebs' }),
        claim('unbound', { storageClassName: 'gp3' }),
        claim('old-class', { storageClassName: 'gp2' }),
        claim('no-class', {}),
        claim('explicitly-none', { storageClassName: '' }),
        claim('nfs', { storageClassName: 'nfs' }),
      ],
      [
        { metadata: { name: 'pv-csi' }, spec: { csi: { driver: 'fsx.csi.aws.com', volumeHandle: 'x' } } },
        { metadata: { name: 'pv-ebs' }, spec: { awsElasticBlockStore: { volumeID: 'vol-1' } } },
      ] as never,
      [
        storageClass('gp3', 'ebs.csi.aws.com', true, '2026-02-01T00:00:00Z'),
        storageClass('gp2', 'kubernetes.io/aws-ebs', true, '2025-01-01T00:00:00Z'),
        storageClass('nfs', 'example.com/nfs'),
      ] as never,
    );
    const { drivers, problems } = toClaimDrivers(index);
    expect(Object.fromEntries(drivers)).toEqual({
      'apps/bound': 'fsx.csi.aws.com',
      'apps/in-tree-pv': 'ebs.csi.aws.com',
      'apps/unbound': 'ebs.csi.aws.com',
      'apps/old-class': 'ebs.csi.aws.com',
      'apps/no-class': 'ebs.csi.aws.com',
      'apps/nfs': 'example.com/nfs',
    });
    expect(problems).toEqual([]);
  });

  it('lists a malformed claim as a problem and reads the others', () => {
    const index = makeVolumeIndex(
      [claim('bad', { volumeName: 7 }), claim('ok', { storageClassName: 'gp3' })] as never,
      [],
      [storageClass('gp3', 'ebs.csi.aws.com')] as never,
    );
    const { drivers, problems } = toClaimDrivers(index);
    expect([...drivers.keys()]).toEqual(['apps/ok']);
    expect(problems.map((p) => p.field)).toEqual(['spec.volumeName']);
  });
});

describe('the claims of a pod', () => {
  it('names persistentVolumeClaims and the claims of generic ephemeral volumes', () => {
    const pod = toPod({
      metadata: { namespace: 'apps', name: 'db-0', uid: 'u1' },
      spec: {
        containers: [{ name: 'db' }],
        volumes: [
          { name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } },
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'gp3' } } } },
          { name: 'tmp', emptyDir: {} },
        ],
      },
    } as never);
    expect(podClaimIds(pod)).toEqual(['apps/data-db-0', 'apps/db-0-scratch']);
  });
});

describe('memory cluster volumeLimits', () => {
  it('reads CSINodes, and claims only once a node has a limit', async () => {
    const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-11-27T10:00:00Z')) });
    cluster.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      ...storageClass('gp3', 'ebs.csi.aws.com'),
    });
    cluster.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      ...claim('data', { storageClassName: 'gp3' }),
    });
    cluster.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: 'n0' },
      spec: { drivers: [{ name: 'efs.csi.aws.com', nodeID: 'i-0' }] },
    });
    const unlimited = await cluster.volumeLimits();
    expect(unlimited.nodes.size).toBe(0);
    expect(unlimited.claimDrivers.size).toBe(0);
    cluster.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: 'n1' },
      spec: { drivers: [{ name: 'ebs.csi.aws.com', nodeID: 'i-1', allocatable: { count: 2 } }] },
    });
    const read = await cluster.volumeLimits();
    expect(Object.fromEntries(read.nodes)).toEqual({ n1: { 'ebs.csi.aws.com': 2 } });
    expect(Object.fromEntries(read.claimDrivers)).toEqual({ 'apps/data': 'ebs.csi.aws.com' });
  });
});
