import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseEC2NodeClass } from '../../../../shared/apis/index.ts';
import { KUBELET_CONFIGURATION_FIELDS, type KubeletValueKind } from '../../../../shared/core/index.ts';
import type { AmiFamily, EC2NodeClass, NodeClassResolution } from '../../../../shared/ports/cloud.ts';
import { kubeletProblems } from '../../../../shared/usecases/nodeclass/kubelet.ts';
import { computeNodeClassStatus } from '../../../../shared/usecases/nodeclass/status.ts';
import { ec2NodeClass } from '../../../fixtures/node-classes.ts';

// The status controller's checks of the open `spec.kubelet` map, and the ValidationSucceeded reason
// each gives: InvalidKubeletConfiguration, KubeletExpressionsDisabled, UnsupportedKubeletConfiguration.

const ALIASES: Partial<Record<AmiFamily, string>> = {
  AL2023: 'al2023@latest',
  AL2: 'al2@latest',
  Bottlerocket: 'bottlerocket@latest',
  Windows2019: 'windows2019@latest',
  Windows2022: 'windows2022@latest',
  Windows2025: 'windows2025@latest',
};

/** A class of `family` with `kubelet`, parsed from its manifest as the controller reads it. */
function nodeClass(kubelet: Record<string, unknown>, family: AmiFamily = 'AL2023', extra = {}): EC2NodeClass {
  const alias = ALIASES[family];
  const ami =
    alias === undefined
      ? { amiSelectorTerms: [{ id: 'ami-1' }], amiFamily: family, userData: '#!/bin/bash' }
      : { amiSelectorTerms: [{ alias }] };
  return parseEC2NodeClass(ec2NodeClass('default', { ...ami, kubelet, ...extra }));
}

const problemsOf = (kubelet: Record<string, unknown>, family?: AmiFamily) =>
  kubeletProblems(nodeClass(kubelet, family));

const INVALID = 'InvalidKubeletConfiguration';
const DISABLED = 'KubeletExpressionsDisabled';
const UNSUPPORTED = 'UnsupportedKubeletConfiguration';

describe('kubeletProblems', () => {
  it('finds none in a valid map, managed and upstream fields alike', () => {
    expect(
      problemsOf({
        clusterDNS: ['10.100.0.10', 'fd00::a'],
        maxPods: 110,
        podsPerCore: 0,
        systemReserved: { cpu: '100m', memory: '100Mi', 'ephemeral-storage': '1Gi', pid: '1000' },
        kubeReserved: { cpu: '200m' },
        evictionHard: { 'memory.available': '7.5%', 'nodefs.available': '10%', 'pid.available': '0%' },
        evictionSoft: { 'memory.available': '500Mi', 'imagefs.inodesFree': '100%' },
        evictionSoftGracePeriod: { 'memory.available': '1m30s', 'imagefs.inodesFree': '.5h' },
        evictionMinimumReclaim: { 'nodefs.available': '500Mi' },
        evictionMaxPodGracePeriod: 60,
        imageGCHighThresholdPercent: 85,
        imageGCLowThresholdPercent: 80,
        cpuCFSQuota: true,
        featureGates: { InPlacePodVerticalScaling: true },
        shutdownGracePeriod: '30s',
        memoryThrottlingFactor: 0.9,
        allowedUnsafeSysctls: ['net.core.somaxconn'],
        staticPodURLHeader: { a: ['b'] },
        logging: { format: 'json' },
        tracing: null,
      }),
    ).toEqual([]);
  });

  it('takes an int32 field to its bounds, and an int64 one past them', () => {
    expect(
      problemsOf({ kubeAPIBurst: 2 ** 31 - 1, oomScoreAdj: -(2 ** 31), podPidsLimit: 3_000_000_000 }),
    ).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'an unknown field',
      { notAField: 1 },
      'spec.kubelet.notAField: is not a kubelet configuration field; remove it',
    ],
    [
      'a field in the wrong case',
      { MaxPods: 1 },
      'spec.kubelet.MaxPods: is not a kubelet configuration field (did you mean maxPods?); remove it',
    ],
    [
      'a managed field of the wrong type',
      { cpuCFSQuota: 'true' },
      'spec.kubelet.cpuCFSQuota: must be a boolean, not "true"',
    ],
    [
      'a fractional integer',
      { podsPerCore: 1.5 },
      'spec.kubelet.podsPerCore: must be a 32-bit integer (-2147483648 to 2147483647), not 1.5',
    ],
    [
      'an int32 field past its range',
      { maxPods: 3_000_000_000 },
      'spec.kubelet.maxPods: must be a 32-bit integer (-2147483648 to 2147483647), not 3000000000',
    ],
    [
      'an int32 field below its range',
      { oomScoreAdj: -2_147_483_649 },
      'spec.kubelet.oomScoreAdj: must be a 32-bit integer (-2147483648 to 2147483647), not -2147483649',
    ],
    [
      'a list of int32 with one past the range',
      { tlsCurvePreferences: [23, 2 ** 31] },
      'spec.kubelet.tlsCurvePreferences: must be a list of 32-bit integers, not [23,2147483648]',
    ],
    [
      'an int64 field past what JSON holds exactly',
      { podPidsLimit: 2 ** 53 },
      'spec.kubelet.podPidsLimit: must be an integer, not 9007199254740992',
    ],
    [
      'a list of the wrong items',
      { clusterDNS: [10] },
      'spec.kubelet.clusterDNS: must be a list of strings, not [10]',
    ],
    [
      'an upstream field of the wrong type',
      { featureGates: { A: 'yes' } },
      'spec.kubelet.featureGates: must be a map of booleans, not {"A":"yes"}',
    ],
    [
      'a duration that is not one',
      { shutdownGracePeriod: '30 seconds' },
      'spec.kubelet.shutdownGracePeriod: must be a duration (such as "30s"), not "30 seconds"',
    ],
    [
      'a number where a duration goes',
      { shutdownGracePeriod: 30 },
      'spec.kubelet.shutdownGracePeriod: must be a duration',
    ],
    [
      'an eviction threshold keyed by no signal',
      { evictionHard: { 'memory.free': '5%' } },
      'spec.kubelet.evictionHard["memory.free"]: is not an eviction signal; use memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available',
    ],
    [
      'a minimum reclaim keyed by no signal',
      { evictionMinimumReclaim: { 'cpu.available': '1' } },
      'spec.kubelet.evictionMinimumReclaim["cpu.available"]: is not an eviction signal',
    ],
    [
      'a percentage over 100',
      { evictionHard: { 'memory.available': '150%' } },
      'spec.kubelet.evictionHard["memory.available"]: "150%" must be a percentage from 0% to 100% or a quantity',
    ],
    [
      'a threshold that is no quantity',
      { evictionHard: { 'memory.available': 'lots' } },
      'spec.kubelet.evictionHard["memory.available"]: "lots" must be a percentage or a quantity',
    ],
    [
      'a negative minimum reclaim',
      { evictionMinimumReclaim: { 'memory.available': '-1Gi' } },
      'spec.kubelet.evictionMinimumReclaim["memory.available"]: "-1Gi" must not be negative',
    ],
    [
      'a grace period that is no duration',
      {
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1 minute' },
      },
      'spec.kubelet.evictionSoftGracePeriod["memory.available"]: "1 minute" must be a duration such as "1m30s"',
    ],
    [
      'a negative grace period',
      { evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '-1m' } },
      'spec.kubelet.evictionSoftGracePeriod["memory.available"]: "-1m" must not be negative',
    ],
    [
      'a soft threshold without a grace period',
      { evictionSoft: { 'memory.available': '1Gi' } },
      'spec.kubelet.evictionSoft["memory.available"]: has no grace period; set evictionSoftGracePeriod["memory.available"] too',
    ],
    [
      'a grace period without a soft threshold',
      { evictionSoft: {}, evictionSoftGracePeriod: { 'nodefs.available': '1m' } },
      'spec.kubelet.evictionSoftGracePeriod["nodefs.available"]: has no evictionSoft threshold for the signal',
    ],
    [
      'a reservation of a resource kubelet does not reserve',
      { kubeReserved: { gpu: '1' } },
      'spec.kubelet.kubeReserved["gpu"]: is not a resource kubelet reserves; use cpu, memory, ephemeral-storage, pid',
    ],
    [
      'a negative reservation',
      { systemReserved: { cpu: '-100m' } },
      'spec.kubelet.systemReserved["cpu"]: "-100m" must not be negative',
    ],
    [
      'an image GC percentage over 100',
      { imageGCHighThresholdPercent: 101 },
      'spec.kubelet.imageGCHighThresholdPercent: 101 must be between 0 and 100',
    ],
    [
      'a negative image GC percentage',
      { imageGCLowThresholdPercent: -1 },
      'spec.kubelet.imageGCLowThresholdPercent: -1 must be between 0 and 100',
    ],
    [
      'an image GC high threshold not above the low one',
      { imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50 },
      'spec.kubelet.imageGCHighThresholdPercent: 50 must be greater than imageGCLowThresholdPercent (50)',
    ],
    ['a negative maxPods', { maxPods: -1 }, 'spec.kubelet.maxPods: -1 must not be negative'],
    ['a negative podsPerCore', { podsPerCore: -2 }, 'spec.kubelet.podsPerCore: -2 must not be negative'],
    [
      'a negative evictionMaxPodGracePeriod',
      { evictionMaxPodGracePeriod: -5 },
      'spec.kubelet.evictionMaxPodGracePeriod: -5 must not be negative',
    ],
    [
      'registerWithTaints, which the NodeClaim sets',
      { registerWithTaints: [{ key: 'a', effect: 'NoSchedule' }] },
      "spec.kubelet.registerWithTaints: may not be set; Flotilla sets it from the NodeClaim's taints",
    ],
  ])('refuses %s as InvalidKubeletConfiguration', (_name, kubelet, message) => {
    const problems = problemsOf(kubelet);
    expect(problems.map((p) => p.reason)).toEqual([INVALID]);
    expect(problems[0]?.message).toContain(message);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a string maxPods',
      { maxPods: 'vcpus * 4' },
      'spec.kubelet.maxPods: "vcpus * 4" is an expression; Flotilla does not evaluate kubelet expressions (Karpenter does only with its NodeClassCEL feature gate, off by default); set a number',
    ],
    ['a numeric string maxPods', { maxPods: '110' }, 'spec.kubelet.maxPods: "110" is an expression'],
    [
      'a kubeReserved value that is no quantity',
      { kubeReserved: { memory: '11 * pods + 255' } },
      'spec.kubelet.kubeReserved["memory"]: "11 * pods + 255" is not a quantity, so it is an expression',
    ],
    [
      'a systemReserved value that is no quantity',
      { systemReserved: { cpu: 'vcpus' } },
      'spec.kubelet.systemReserved["cpu"]: "vcpus" is not a quantity',
    ],
  ])('refuses %s as KubeletExpressionsDisabled', (_name, kubelet, message) => {
    const problems = problemsOf(kubelet);
    expect(problems.map((p) => p.reason)).toEqual([DISABLED]);
    expect(problems[0]?.message).toContain(message);
  });

  it.each<[AmiFamily, Record<string, unknown>, string]>([
    [
      'AL2',
      { featureGates: { A: true } },
      'spec.kubelet.featureGates: the AL2 AMI family does not apply it, so nodes would run without it; remove it (AL2023 applies every kubelet field)',
    ],
    [
      'Windows2022',
      { shutdownGracePeriod: '30s' },
      'spec.kubelet.shutdownGracePeriod: the Windows2022 AMI family',
    ],
    [
      'Bottlerocket',
      { evictionMinimumReclaim: {} },
      'spec.kubelet.evictionMinimumReclaim: the Bottlerocket AMI family',
    ],
    [
      'Bottlerocket',
      { podsPerCore: 4 },
      'spec.kubelet.podsPerCore: the Bottlerocket AMI family does not apply it',
    ],
    [
      'AL2',
      { clusterDNS: ['10.0.0.10', '10.0.0.11'] },
      'spec.kubelet.clusterDNS: the AL2 AMI family gives kubelet one DNS server, but 2 are set; keep one',
    ],
    ['Windows2019', { clusterDNS: ['10.0.0.10', '10.0.0.11', '10.0.0.12'] }, 'but 3 are set'],
    [
      'Bottlerocket',
      { clusterDNS: ['10.0.0.10', 'fd00::a'] },
      'the Bottlerocket AMI family gives kubelet one DNS server',
    ],
  ])('refuses on %s a valid field it would not apply (%j)', (family, kubelet, message) => {
    const problems = problemsOf(kubelet, family);
    expect(problems.map((p) => p.reason)).toEqual([UNSUPPORTED]);
    expect(problems[0]?.message).toContain(message);
  });

  it.each<[AmiFamily, Record<string, unknown>]>([
    ['AL2023', { featureGates: { A: true }, clusterDNS: ['10.0.0.10', '10.0.0.11'], podsPerCore: 4 }],
    ['Custom', { featureGates: { A: true }, clusterDNS: ['10.0.0.10', '10.0.0.11'], podsPerCore: 4 }],
    ['AL2', { podsPerCore: 4, maxPods: 110, clusterDNS: ['10.0.0.10'] }],
    ['Windows2025', { podsPerCore: 4 }],
    ['Bottlerocket', { maxPods: 110, cpuCFSQuota: false, evictionMaxPodGracePeriod: 30 }],
  ])('accepts on %s what it applies: %j', (family, kubelet) => {
    expect(problemsOf(kubelet, family)).toEqual([]);
  });

  it.each(['ec2nodeclass-full.yaml', 'ec2nodeclass-kubelet-open.yaml'])(
    'finds none in the Karpenter fixture %s (v1.14 typed fields; v1.15 open map)',
    (file) => {
      const text = readFileSync(
        path.resolve(import.meta.dirname, '../../../fixtures/karpenter', file),
        'utf8',
      );
      const parsed = parseEC2NodeClass(parse(text));
      expect(parsed.spec.kubelet).toBeDefined();
      expect(kubeletProblems(parsed)).toEqual([]);
    },
  );

  it('says where each problem is: the field, and the key of a map', () => {
    expect(problemsOf({ systemReserved: { cpu: '-100m' }, maxPods: -1 })).toEqual([
      {
        reason: INVALID,
        path: ['systemReserved', 'cpu'],
        problem: '"-100m" must not be negative',
        message: 'spec.kubelet.systemReserved["cpu"]: "-100m" must not be negative',
      },
      {
        reason: INVALID,
        path: ['maxPods'],
        problem: '-1 must not be negative',
        message: 'spec.kubelet.maxPods: -1 must not be negative',
      },
    ]);
  });

  it('lists every problem, invalid first, then expressions, then unsupported fields', () => {
    const problems = problemsOf(
      {
        maxPods: 'pods',
        notAField: true,
        podsPerCore: -1,
        shutdownGracePeriod: '1m',
        clusterDNS: ['a', 'b'],
      },
      'Bottlerocket',
    );
    expect(problems.map((p) => `${p.reason} ${p.message.split(':')[0]}`)).toEqual([
      `${INVALID} spec.kubelet.notAField`,
      `${INVALID} spec.kubelet.podsPerCore`,
      `${DISABLED} spec.kubelet.maxPods`,
      `${UNSUPPORTED} spec.kubelet.podsPerCore`,
      `${UNSUPPORTED} spec.kubelet.shutdownGracePeriod`,
      `${UNSUPPORTED} spec.kubelet.clusterDNS`,
    ]);
  });
});

/** A value of `kind`, and one of another kind. */
function sample(kind: KubeletValueKind): unknown {
  if (typeof kind === 'object') return 'array' in kind ? [sample(kind.array)] : { key: sample(kind.map) };
  return { string: 'x', boolean: true, int32: 1, int64: 1, number: 0.5, duration: '30s', object: {} }[kind];
}

describe('kubeletProblems and the upstream kubelet configuration (k8s.io/kubelet v0.37.0)', () => {
  const fields = [...KUBELET_CONFIGURATION_FIELDS].filter(([field]) => field !== 'registerWithTaints');

  it('knows the fields of the version Karpenter v1.15.2 builds against', () => {
    expect(KUBELET_CONFIGURATION_FIELDS.size).toBe(128);
    expect(KUBELET_CONFIGURATION_FIELDS.get('shutdownGracePeriod')).toBe('duration');
    expect(KUBELET_CONFIGURATION_FIELDS.get('featureGates')).toEqual({ map: 'boolean' });
    expect(KUBELET_CONFIGURATION_FIELDS.get('failCgroupV1')).toBe('boolean');
    // Integers have their Go widths: int32 but for the two int64 fields.
    expect(KUBELET_CONFIGURATION_FIELDS.get('maxPods')).toBe('int32');
    expect(KUBELET_CONFIGURATION_FIELDS.get('tlsCurvePreferences')).toEqual({ array: 'int32' });
    expect([...KUBELET_CONFIGURATION_FIELDS].filter(([, kind]) => kind === 'int64').map(([f]) => f)).toEqual([
      'podPidsLimit',
      'maxOpenFiles',
    ]);
    expect(KUBELET_CONFIGURATION_FIELDS.has('toString')).toBe(false);
  });

  it.each(fields)('accepts %s set to a value of its kind on AL2023', (field, kind) => {
    const value =
      field === 'evictionSoft' || field === 'evictionSoftGracePeriod' || field === 'evictionMinimumReclaim'
        ? {}
        : field === 'kubeReserved' || field === 'systemReserved'
          ? { cpu: '1' }
          : field === 'evictionHard'
            ? { 'memory.available': '1%' }
            : sample(kind);
    expect(problemsOf({ [field]: value })).toEqual([]);
  });

  it.each(fields)('refuses %s set to a value of another kind', (field, kind) => {
    const wrong = kind === 'string' || kind === 'duration' ? 7 : field === 'maxPods' ? true : 'x';
    const problems = problemsOf({ [field]: wrong });
    expect(problems[0]).toMatchObject({
      reason: INVALID,
      message: expect.stringContaining(`spec.kubelet.${field}: must be`),
    });
  });
});

describe('ValidationSucceeded with spec.kubelet problems', () => {
  const resolved: NodeClassResolution = {
    subnets: { kind: 'resolved', value: [{ id: 'subnet-a', zone: 'us-east-1a' }] },
    securityGroups: { kind: 'resolved', value: [{ id: 'sg-1' }] },
    amis: { kind: 'resolved', value: [{ id: 'ami-1', requirements: [] }] },
    instanceProfile: { kind: 'resolved', value: 'profile' },
  };
  const validation = (nodeClass: EC2NodeClass, resolution: NodeClassResolution = resolved) =>
    computeNodeClassStatus(nodeClass, resolution, new Date('2026-11-21T10:00:00Z')).status.conditions.find(
      (c) => c.type === 'ValidationSucceeded',
    );

  it.each<[string, Record<string, unknown>, AmiFamily, string]>([
    [
      'an invalid map',
      { imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60 },
      'AL2023',
      INVALID,
    ],
    ['an expression', { maxPods: 'vcpus * 4' }, 'AL2023', DISABLED],
    ['a field the family drops', { podsPerCore: 2 }, 'Bottlerocket', UNSUPPORTED],
    [
      'an invalid map with a field the family drops',
      { podsPerCore: 2, maxPods: -1 },
      'Bottlerocket',
      INVALID,
    ],
    [
      'an expression and a field the family drops',
      { podsPerCore: 2, maxPods: 'x' },
      'Bottlerocket',
      DISABLED,
    ],
  ])('is False with %s, with Karpenter’s reason and every problem', (_name, kubelet, family, reason) => {
    const subject = nodeClass(kubelet, family);
    const condition = validation(subject);
    expect(condition).toMatchObject({ status: 'False', reason });
    expect(condition?.message).toBe(
      kubeletProblems(subject)
        .map((p) => p.message)
        .join('; '),
    );
  });

  it('keeps ValidationFailed when the spec has problems of its own, listing them first', () => {
    const condition = validation(nodeClass({ maxPods: -1 }, 'AL2023', { instanceProfile: 'profile' }));
    expect(condition).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(condition?.message).toBe(
      'set exactly one of spec.role and spec.instanceProfile; spec.kubelet.maxPods: -1 must not be negative',
    );
  });

  it('gives the kubelet reason before a reason of the cloud side', () => {
    const condition = validation(nodeClass({ maxPods: 'x' }), {
      ...resolved,
      validation: [{ reason: 'UserDataInvalid', message: 'spec.userData: does not merge' }],
    });
    expect(condition).toMatchObject({ status: 'False', reason: DISABLED });
    expect(condition?.message).toContain('spec.userData: does not merge');
  });

  it('is True for a valid map with upstream fields on AL2023', () => {
    expect(validation(nodeClass({ maxPods: 110, shutdownGracePeriod: '30s' }))).toMatchObject({
      status: 'True',
    });
  });
});
