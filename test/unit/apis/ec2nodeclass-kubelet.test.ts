import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { nodeClassSettings } from '../../../shared/adapters/launch-plan.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import { kubeletConfigMap } from '../../../shared/ports/cloud.ts';
import { nodeClassHash } from '../../../shared/usecases/state/new-nodeclaim.ts';
import { ec2NodeClass } from '../../fixtures/node-classes.ts';

// `spec.kubelet` is an open map (Karpenter v1.15): the managed fields are typed, everything else is
// kept for the status controller, and the class stays readable whatever the map holds.

const root = path.resolve(import.meta.dirname, '../../..');

/** The smallest class, with `kubelet` when given. */
const manifest = (kubelet?: unknown) => ec2NodeClass('default', kubelet === undefined ? {} : { kubelet });

const kubeletOf = (kubelet: unknown) => parseEC2NodeClass(manifest(kubelet)).spec.kubelet;

/** The v1.14-typed fixture, every kubelet field set. */
const fullFixture = () =>
  parse(readFileSync(path.join(root, 'test/fixtures/karpenter/ec2nodeclass-full.yaml'), 'utf8')) as {
    spec: Record<string, unknown>;
  };

describe('parseEC2NodeClass: spec.kubelet', () => {
  it('reads the managed fields as before', () => {
    expect(kubeletOf({ maxPods: 110, kubeReserved: { cpu: '100m' }, cpuCFSQuota: false })).toEqual({
      maxPods: 110,
      kubeReserved: { cpu: '100m' },
      cpuCFSQuota: false,
    });
  });

  it('keeps every other field as it is, apart from the managed ones', () => {
    const kubelet = kubeletOf({
      maxPods: 110,
      featureGates: { InPlacePodVerticalScaling: true },
      shutdownGracePeriod: '30s',
      notAField: [1],
    });
    expect(kubelet).toEqual({
      maxPods: 110,
      unmanaged: {
        featureGates: { InPlacePodVerticalScaling: true },
        shutdownGracePeriod: '30s',
        notAField: [1],
      },
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ['a string maxPods (an expression)', { maxPods: 'vcpus * 4' }],
    ['a fractional podsPerCore', { podsPerCore: 1.5 }],
    ['a number cpuCFSQuota', { cpuCFSQuota: 1 }],
    ['a clusterDNS string', { clusterDNS: '10.0.0.10' }],
    ['a kubeReserved value that is no quantity', { kubeReserved: { cpu: 'vcpus * 10' } }],
    ['a negative systemReserved value', { systemReserved: { memory: '-1Gi' } }],
    ['an evictionHard value that is no threshold', { evictionHard: { 'memory.available': 'lots' } }],
    ['a number among the grace periods', { evictionSoftGracePeriod: { 'memory.available': 30 } }],
  ])('sets aside %s, keeping the class readable', (_name, kubelet) => {
    const parsed = kubeletOf({ ...kubelet, imageGCHighThresholdPercent: 85 });
    expect(parsed).toEqual({ imageGCHighThresholdPercent: 85, unreadable: kubelet });
  });

  it('takes a null as an unset field', () => {
    expect(kubeletOf({ maxPods: null, tracing: null })).toEqual({});
  });

  it('still refuses a kubelet that is not a map', () => {
    expect(() => parseEC2NodeClass(manifest(['maxPods']))).toThrow(/kubelet/);
  });

  it('gives the scheduler only the managed fields it can count with', () => {
    const nodeClass = parseEC2NodeClass(
      manifest({
        kubeReserved: { cpu: 'vcpus * 10' },
        systemReserved: { memory: '1Gi' },
        evictionHard: { 'memory.available': 'lots' },
        reservedMemory: [{ numaNode: 0, limits: { memory: '1Gi' } }],
      }),
    );
    const settings = nodeClassSettings(nodeClass, 'AL2023');
    expect(settings.kubelet).toEqual({ systemReserved: { memory: 2 ** 30 } });
  });

  it('reads the open map back as the manifest holds it', () => {
    const raw = { maxPods: 'vcpus * 4', podsPerCore: 2, featureGates: { A: true } };
    const kubelet = kubeletOf(raw);
    expect(kubelet === undefined ? undefined : kubeletConfigMap(kubelet)).toEqual(raw);
  });
});

describe('nodeClassHash and spec.kubelet', () => {
  // Computed by the release whose kubelet was the typed v1.14 struct: nodes launched then must not
  // drift when Flotilla reads spec.kubelet as an open map.
  it('is the hash of before for a class with only the v1.14 typed fields', () => {
    // Without connectionTracking, which the class was refused for before it was read (so no node
    // carries a hash of the class with it).
    const { connectionTracking: _tracking, ...typed } = fullFixture().spec;
    const full = { ...fullFixture(), spec: typed };
    expect(nodeClassHash(parseEC2NodeClass(full))).toBe('11240530526671215956');
    const { kubelet: _kubelet, ...spec } = full.spec;
    expect(nodeClassHash(parseEC2NodeClass({ ...full, spec }))).toBe('227696663103726698');
    expect(nodeClassHash(parseEC2NodeClass({ ...full, spec: { ...spec, kubelet: {} } }))).toBe(
      '7923961019942020606',
    );
  });

  it('changes with each field outside the typed set, since it changes the node', () => {
    const full = fullFixture();
    const kubelet = full.spec['kubelet'] as Record<string, unknown>;
    const hashWith = (extra: Record<string, unknown>) =>
      nodeClassHash(
        parseEC2NodeClass({ ...full, spec: { ...full.spec, kubelet: { ...kubelet, ...extra } } }),
      );
    const hashes = [
      hashWith({}),
      hashWith({ shutdownGracePeriod: '30s' }),
      hashWith({ shutdownGracePeriod: '45s' }),
      hashWith({ featureGates: { InPlacePodVerticalScaling: true } }),
    ];
    expect(new Set(hashes).size).toBe(4);
    // Key order in the manifest does not matter.
    expect(hashWith({ a: 1, b: 2 })).toBe(hashWith({ b: 2, a: 1 }));
  });
});
