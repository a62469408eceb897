import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONTROLLER_GROUP, CRDS_DIR, renderClusterManifests } from '../../infra/manifests.ts';

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  subjects?: { kind: string; name: string; namespace?: string }[];
  roleRef?: { kind: string; name: string };
};

const objects = (yaml: string): K8sObject[] =>
  parseAllDocuments(yaml)
    .map((doc) => {
      expect(doc.errors).toEqual([]);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);

describe('renderClusterManifests', () => {
  const rendered = objects(renderClusterManifests());
  const find = (kind: string, name: string) =>
    rendered.find((o) => o.kind === kind && o.metadata.name === name);

  it('renders the namespace first, then the CRDs, the shim ServiceAccount and the RBAC', () => {
    expect(rendered.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Namespace/flotilla',
      'CustomResourceDefinition/ec2nodeclasses.karpenter.k8s.aws',
      'CustomResourceDefinition/nodeclaims.karpenter.sh',
      'CustomResourceDefinition/nodepools.karpenter.sh',
      'ServiceAccount/flotilla-shim',
      'ClusterRole/flotilla-shim',
      'ClusterRoleBinding/flotilla-shim',
      'ClusterRole/flotilla-controller',
      'ClusterRoleBinding/flotilla-controller',
    ]);
  });

  it('includes every CRD file from infra/crds unchanged', () => {
    const crdFiles = fs.readdirSync(CRDS_DIR).filter((f) => f.endsWith('.yaml'));
    expect(crdFiles).toHaveLength(3);
    const text = renderClusterManifests();
    for (const file of crdFiles)
      expect(text).toContain(fs.readFileSync(path.join(CRDS_DIR, file), 'utf8').trimEnd());
  });

  it('binds the controller group to the controller ClusterRole', () => {
    const binding = find('ClusterRoleBinding', 'flotilla-controller');
    expect(binding?.roleRef).toMatchObject({ kind: 'ClusterRole', name: 'flotilla-controller' });
    expect(binding?.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: CONTROLLER_GROUP },
    ]);
  });

  it('gives the controller least privilege: no wildcards, no secrets, evictions instead of pod deletes', () => {
    const rules = find('ClusterRole', 'flotilla-controller')?.rules ?? [];
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      for (const field of [rule.apiGroups, rule.resources, rule.verbs]) expect(field).not.toContain('*');
      expect(rule.resources).not.toContain('secrets');
      if (rule.resources.includes('pods')) expect(rule.verbs).toEqual(['get', 'list', 'watch']);
    }
    const can = (resource: string, verb: string) =>
      rules.some((r) => r.resources.includes(resource) && r.verbs.includes(verb));
    expect(can('pods/eviction', 'create')).toBe(true);
    expect(can('nodeclaims', 'create')).toBe(true);
    expect(can('nodeclaims/status', 'patch')).toBe(true);
    expect(can('nodes', 'delete')).toBe(true);
    expect(can('nodepools', 'delete')).toBe(false);
    expect(can('ec2nodeclasses', 'create')).toBe(false);
  });

  it('lets the shim only list and watch pods', () => {
    expect(find('ClusterRole', 'flotilla-shim')?.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    ]);
    expect(find('ClusterRoleBinding', 'flotilla-shim')?.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'flotilla-shim', namespace: 'flotilla' },
    ]);
  });

  it('follows the namespace, ServiceAccount and group it is given', () => {
    const custom = objects(
      renderClusterManifests({
        namespace: 'autoscaling',
        shimServiceAccount: 'pods',
        controllerGroup: 'x:controller',
      }),
    );
    expect(custom.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('autoscaling');
    expect(custom.find((o) => o.kind === 'ServiceAccount')?.metadata).toMatchObject({
      name: 'pods',
      namespace: 'autoscaling',
    });
    expect(
      custom.find((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'flotilla-controller')
        ?.subjects?.[0]?.name,
    ).toBe('x:controller');
  });

  it('refuses a folder without CRDs', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-crds-'));
    try {
      expect(() => renderClusterManifests({ crdsDir: empty })).toThrow(/no CRD files/);
    } finally {
      fs.rmSync(empty, { recursive: true });
    }
  });
});
