import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FlotillaCluster } from '../../infra/flotilla-cluster.ts';
import {
  CONTROLLER_GROUP,
  CONTROLLER_RULES,
  CRDS_DIR,
  renderClusterManifests,
  SHADOW_CONTROLLER_GROUP,
  SHADOW_CONTROLLER_RULES,
} from '../../infra/manifests.ts';
import { bundleShim, CONFIGMAP_LIMIT_BYTES, renderShimObjects } from '../../infra/shim/manifests.ts';

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
      'CustomResourceDefinition/nodeoverlays.karpenter.sh',
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
    expect(crdFiles).toHaveLength(4);
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

  it('gives the controller least privilege: no wildcards, no secrets, pods only read, evicted or deleted', () => {
    const rules = find('ClusterRole', 'flotilla-controller')?.rules ?? [];
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      for (const field of [rule.apiGroups, rule.resources, rule.verbs]) expect(field).not.toContain('*');
      expect(rule.resources).not.toContain('secrets');
      // Reads, plus the force deletion at a terminationGracePeriod deadline: never create or patch.
      if (rule.resources.includes('pods'))
        expect(['get', 'list', 'watch', 'delete']).toEqual(expect.arrayContaining(rule.verbs));
    }
    const can = (resource: string, verb: string) =>
      rules.some((r) => r.resources.includes(resource) && r.verbs.includes(verb));
    expect(can('pods/eviction', 'create')).toBe(true);
    expect(can('pods', 'delete')).toBe(true);
    expect(can('pods', 'patch')).toBe(false);
    expect(can('volumeattachments', 'list')).toBe(true);
    expect(can('csinodes', 'list')).toBe(true);
    expect(can('nodeclaims', 'create')).toBe(true);
    expect(can('nodeclaims/status', 'patch')).toBe(true);
    expect(can('nodes', 'delete')).toBe(true);
    expect(can('nodepools', 'delete')).toBe(false);
    expect(can('nodepools', 'patch')).toBe(true);
    expect(can('nodepools', 'create')).toBe(false);
    expect(can('ec2nodeclasses', 'create')).toBe(false);
  });

  it('lets the shim only list and watch pods, Nodes and NodeClaims', () => {
    expect(find('ClusterRole', 'flotilla-shim')?.rules).toEqual([
      { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['list', 'watch'] },
      { apiGroups: ['karpenter.sh'], resources: ['nodeclaims'], verbs: ['list', 'watch'] },
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

describe('renderClusterManifests in shadow mode', () => {
  const rendered = objects(renderClusterManifests({ mode: 'shadow' }));

  it('renders no CRD, and names everything apart from a live stack', () => {
    expect(rendered.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Namespace/flotilla-shadow',
      'ServiceAccount/flotilla-shadow-shim',
      'ClusterRole/flotilla-shadow-shim',
      'ClusterRoleBinding/flotilla-shadow-shim',
      'ClusterRole/flotilla-shadow-controller',
      'ClusterRoleBinding/flotilla-shadow-controller',
    ]);
    expect(
      rendered.find(
        (o) => o.metadata.name === 'flotilla-shadow-controller' && o.kind === 'ClusterRoleBinding',
      )?.subjects,
    ).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: SHADOW_CONTROLLER_GROUP }]);
  });

  it("gives the controller every read of the live controller's rules and nothing else", () => {
    const reads = (verbs: readonly string[]) => verbs.filter((v) => ['get', 'list', 'watch'].includes(v));
    expect(SHADOW_CONTROLLER_RULES).toEqual(
      CONTROLLER_RULES.filter((rule) => reads(rule.verbs).length > 0).map((rule) => ({
        ...rule,
        verbs: reads(rule.verbs),
      })),
    );
    // Events keep their read only: a shadow records none.
    expect(SHADOW_CONTROLLER_RULES.find((r) => r.resources.includes('events'))?.verbs).toEqual(['get']);
    expect(SHADOW_CONTROLLER_RULES.some((r) => r.resources.includes('pods/eviction'))).toBe(false);
    expect(rendered.find((o) => o.metadata.name === 'flotilla-shadow-controller')?.rules).toEqual(
      SHADOW_CONTROLLER_RULES,
    );
  });
});

describe('the shim in the cluster manifests', () => {
  type Deployment = {
    kind: 'Deployment';
    metadata: { name: string; namespace: string };
    spec: {
      template: {
        metadata: { annotations: Record<string, string> };
        spec: {
          serviceAccountName: string;
          containers: {
            image: string;
            command: string[];
            env: { name: string; value: string }[];
            securityContext: Record<string, unknown>;
            volumeMounts: { name: string; mountPath: string }[];
          }[];
          volumes: { name: string; configMap?: { name: string } }[];
        };
      };
    };
  };
  type ConfigMap = { kind: 'ConfigMap'; data: Record<string, string>; binaryData: Record<string, string> };
  const shim = {
    clusterName: 'demo',
    region: 'eu-west-1',
    queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/flotilla-demo-pod-events',
    program: Buffer.from('export {};\n'),
  };
  const all = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string } | null);

  it('adds the ConfigMap with the boot script and the gzipped program, and the Deployment that runs it', () => {
    const docs = all(renderClusterManifests({ shim }));
    const configMap = docs.find((d) => d?.kind === 'ConfigMap') as ConfigMap | undefined;
    const deployment = docs.find((d) => d?.kind === 'Deployment') as Deployment | undefined;
    expect(configMap?.data['boot.mjs']).toContain(
      "gunzipSync(readFileSync(join(import.meta.dirname, 'shim.mjs.gz')))",
    );
    expect(gunzipSync(Buffer.from(configMap?.binaryData['shim.mjs.gz'] ?? '', 'base64')).toString()).toBe(
      'export {};\n',
    );
    const pod = deployment?.spec.template.spec;
    expect(deployment?.metadata).toEqual(
      expect.objectContaining({ name: 'flotilla-shim', namespace: 'flotilla' }),
    );
    expect(pod?.serviceAccountName).toBe('flotilla-shim');
    const container = pod?.containers[0];
    expect(container?.image).toMatch(/^public\.ecr\.aws\/docker\/library\/node:22/);
    expect(container?.command).toEqual(['node', '/opt/flotilla/boot.mjs']);
    expect(Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]))).toMatchObject({
      FLOTILLA_CLUSTER_NAME: 'demo',
      FLOTILLA_POD_EVENT_QUEUE_URL: shim.queueUrl,
      AWS_REGION: 'eu-west-1',
    });
    expect(container?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod?.volumes.find((v) => v.name === 'program')?.configMap?.name).toBe('flotilla-shim-program');
    expect(deployment?.spec.template.metadata.annotations['flotilla/program-sha256']).toMatch(
      /^[0-9a-f]{16}$/,
    );
  });

  it('names the summary bucket in the Deployment only when given one', () => {
    const envOf = (options: typeof shim & { summaryBucket?: string }) =>
      Object.fromEntries(
        (
          all(renderClusterManifests({ shim: options })).find((d) => d?.kind === 'Deployment') as Deployment
        ).spec.template.spec.containers[0]?.env.map((e) => [e.name, e.value]) ?? [],
      );
    expect(envOf({ ...shim, summaryBucket: 'flotilla-bucket' })['FLOTILLA_SUMMARY_BUCKET']).toBe(
      'flotilla-bucket',
    );
    expect(envOf(shim)).not.toHaveProperty('FLOTILLA_SUMMARY_BUCKET');
  });

  it('rolls the Deployment when the program changes', () => {
    const hash = (program: Buffer) =>
      (
        all(renderClusterManifests({ shim: { ...shim, program } })).find(
          (d) => d?.kind === 'Deployment',
        ) as Deployment
      ).spec.template.metadata.annotations['flotilla/program-sha256'];
    expect(hash(Buffer.from('a'))).not.toBe(hash(Buffer.from('b')));
  });

  it('says why the shim is left out when the queue URL is unknown', () => {
    const yaml = renderClusterManifests();
    expect(yaml).toContain("# The shim's ConfigMap and Deployment are left out");
    expect(all(yaml).some((d) => d?.kind === 'Deployment')).toBe(false);
  });

  it('bundles the real shim small enough for a ConfigMap', () => {
    const program = bundleShim();
    expect(program.length).toBeGreaterThan(100_000);
    const configMap = renderShimObjects({
      ...shim,
      program,
      namespace: 'flotilla',
      serviceAccount: 'flotilla-shim',
    })[0] as ConfigMap;
    expect(JSON.stringify(configMap).length).toBeLessThan(CONFIGMAP_LIMIT_BYTES);
  });
});

describe('FlotillaCluster.renderManifests', () => {
  const context = { 'aws:cdk:bundling-stacks': [] };
  const deploymentEnv = (stack: Stack) => {
    const cluster = new FlotillaCluster(stack, 'Flotilla', { clusterName: 'demo' });
    const docs = parseAllDocuments(cluster.renderManifests()).map(
      (d) => d.toJS() as Record<string, unknown> | null,
    );
    const deployment = docs.find((d) => d?.['kind'] === 'Deployment') as
      | { spec: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } }
      | undefined;
    return deployment?.spec.template.spec.containers[0]?.env;
  };

  it("names the pod-event queue's URL in the shim's Deployment when the stack has an account and region", () => {
    const stack = new Stack(new App({ context }), 'Concrete', {
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    const env = Object.fromEntries((deploymentEnv(stack) ?? []).map((e) => [e.name, e.value]));
    expect(env['FLOTILLA_POD_EVENT_QUEUE_URL']).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/flotilla-demo-pod-events',
    );
    expect(env['AWS_REGION']).toBe('eu-west-1');
    // The bucket the stack creates, by the name it gives it.
    const hash = createHash('sha256').update('demo').digest('hex').slice(0, 12);
    expect(env['FLOTILLA_SUMMARY_BUCKET']).toBe(`flotilla-123456789012-eu-west-1-${hash}`);
    Template.fromStack(stack).hasResourceProperties('AWS::S3::Bucket', {
      BucketName: env['FLOTILLA_SUMMARY_BUCKET'],
    });
  });

  it('leaves the shim out of an environment-agnostic stack', () => {
    expect(deploymentEnv(new Stack(new App({ context }), 'Agnostic'))).toBeUndefined();
  });
});
