import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import {
  checkManifest,
  checkPodSpec,
  crdSchemas,
  withStoredDefaults,
} from '../../../shared/validation/manifests.ts';

const root = path.resolve(import.meta.dirname, '../../..');

/** Every document of the YAML files in `dir` (relative to the repository), with where it is from. */
function documentsIn(dir: string): { where: string; value: unknown }[] {
  return readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(path.join(root, dir, f), 'utf8')).map((d, i) => ({
        where: `${dir}/${f}#${i}`,
        value: d.toJS() as unknown,
      })),
    );
}

const exampleFiles = readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.yaml'));

describe('manifests Karpenter v1 accepts are accepted', () => {
  const manifests = [
    ...documentsIn('test/fixtures/karpenter-v1'),
    ...documentsIn('test/fixtures/karpenter'),
    ...documentsIn('infra').filter((d) => (d.value as { kind?: string } | null)?.kind !== undefined),
  ];

  it('covers NodePools and EC2NodeClasses', () => {
    const kinds = manifests.map((m) => (m.value as { kind: string }).kind);
    expect(kinds.filter((k) => k === 'NodePool').length).toBeGreaterThanOrEqual(8);
    expect(kinds.filter((k) => k === 'EC2NodeClass').length).toBeGreaterThanOrEqual(8);
  });

  it.each(manifests.map((m) => [m.where, m.value] as const))('%s', (_where, value) => {
    expect(checkManifest(value)).toEqual([]);
  });

  it.each(exampleFiles)(
    'examples/%s: its NodePools, EC2NodeClasses and pod specs, and the scenario',
    (file) => {
      const text = readFileSync(path.join(root, 'examples', file), 'utf8');
      const raw = parse(text) as {
        nodePools: unknown[];
        ec2NodeClasses: unknown[];
        workloads?: { template: { spec: unknown } }[];
      };
      for (const manifest of [...raw.nodePools, ...raw.ec2NodeClasses])
        expect(checkManifest(manifest)).toEqual([]);
      for (const w of raw.workloads ?? []) expect(checkPodSpec(w.template.spec)).toEqual([]);
      expect(parseScenario(text, file).name).toBe(file.replace(/\.yaml$/, ''));
    },
  );

  it('the plan fixtures: pods, nodes, DaemonSets and NodeClaims of a cluster snapshot', () => {
    const items = documentsIn('test/fixtures/plan').flatMap(
      (d) => (d.value as { items?: unknown[] } | null)?.items ?? [d.value],
    );
    expect(items.length).toBeGreaterThan(10);
    for (const item of items) expect(checkManifest(item)).toEqual([]);
  });
});

describe('what the CRDs refuse', () => {
  const pool = (spec: Record<string, unknown>, name = 'default') => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [],
        },
      },
      ...spec,
    },
  });

  it('reads the four shipped CRDs', () => {
    expect([...crdSchemas().keys()].sort()).toEqual([
      'karpenter.k8s.aws/v1/EC2NodeClass',
      'karpenter.sh/v1/NodeClaim',
      'karpenter.sh/v1/NodePool',
      'karpenter.sh/v1alpha1/NodeOverlay',
    ]);
  });

  it('fills defaults before it checks required fields: a budget without nodes is 10%', () => {
    expect(
      checkManifest(pool({ disruption: { consolidateAfter: '1m', budgets: [{ reasons: ['Empty'] }] } })),
    ).toEqual([]);
  });

  it('takes a disruption block without consolidateAfter (Karpenter v1.15) and stores it as 0s', () => {
    const manifest = pool({ disruption: { consolidationPolicy: 'WhenEmpty' } });
    expect(checkManifest(manifest)).toEqual([]);
    expect(withStoredDefaults(manifest).spec).toMatchObject({
      disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: '0s', budgets: [{ nodes: '10%' }] },
    });
  });

  it('requires enabled in an EC2NodeClass enclaveOptions (Karpenter v1.15)', () => {
    const nodeClass = (enclaveOptions: unknown) => ({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'default' },
      spec: {
        role: 'nodes',
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        subnetSelectorTerms: [{ tags: { discovery: 'c' } }],
        securityGroupSelectorTerms: [{ tags: { discovery: 'c' } }],
        enclaveOptions,
      },
    });
    expect(checkManifest(nodeClass({ enabled: true }))).toEqual([]);
    expect(checkManifest(nodeClass({}))).toEqual([
      { path: ['spec', 'enclaveOptions'], message: 'missing required field "enabled"' },
    ]);
  });

  it('drops nulls as the API server does, and refuses a string where a number belongs', () => {
    expect(checkManifest(pool({ weight: null }))).toEqual([]);
    expect(checkManifest(pool({ weight: '10' }))).toEqual([
      { path: ['spec', 'weight'], message: 'must be an integer, got the string "10"' },
    ]);
  });

  it('runs transition rules only against an object before a change', () => {
    const before = pool({});
    const after = pool({ replicas: 2 });
    expect(checkManifest(after)).toEqual([]);
    expect(checkManifest(after, { old: before })).toEqual([
      {
        path: ['spec', 'replicas'],
        message:
          'Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes',
      },
    ]);
  });

  it('checks the name and the fields of metadata', () => {
    expect(checkManifest({ ...pool({}), metadata: { name: 'a_b', labelz: {} } })).toEqual([
      { path: ['metadata', 'labelz'], message: 'unknown field "labelz"; did you mean "labels"?' },
      {
        path: ['metadata', 'name'],
        message: '"a_b" must be a lowercase RFC 1123 subdomain (letters, digits, - and .)',
      },
    ]);
    expect(checkManifest({ ...pool({}), metadata: {} })).toEqual([
      { path: ['metadata'], message: 'missing required field "name"' },
    ]);
  });

  it('leaves kinds without a schema to the caller', () => {
    expect(checkManifest({ apiVersion: 'v1', kind: 'ConfigMap', data: { anything: 'goes' } })).toEqual([]);
  });
});
