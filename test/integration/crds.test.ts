import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ec2NodeClass } from '../fixtures/node-classes.ts';
import { kube } from '../harness/index.ts';

// Acceptance test for infra/crds: the real kube-apiserver must accept every manifest Karpenter v1.15 or
// v1.14 accepts (test/fixtures/karpenter), apply the CRD defaults, and reject invalid ones with a 422 whose
// message names the offending field and the rule that failed.

const here = path.dirname(fileURLToPath(import.meta.url));
const fixturesDir = path.resolve(here, '../fixtures/karpenter');
const crdDir = path.resolve(here, '../../infra/crds');

type Kind = 'NodePool' | 'NodeClaim' | 'EC2NodeClass' | 'NodeOverlay';

interface Manifest {
  readonly apiVersion: string;
  readonly kind: Kind;
  readonly metadata: { readonly name: string; readonly [key: string]: unknown };
  readonly spec: Readonly<Record<string, unknown>>;
}

const resources: Record<Kind, { readonly group: string; readonly version: string; readonly plural: string }> =
  {
    NodePool: { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' },
    NodeClaim: { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' },
    EC2NodeClass: { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' },
    NodeOverlay: { group: 'karpenter.sh', version: 'v1alpha1', plural: 'nodeoverlays' },
  };

/** Every fixture file, parsed; names are prefixed so they cannot clash with objects other tests create. */
const fixtures: readonly { readonly file: string; readonly manifest: Manifest }[] = fs
  .readdirSync(fixturesDir)
  .filter((file) => file.endsWith('.yaml'))
  .sort()
  .flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(fixturesDir, file), 'utf8')).map((document) => {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]?.message}`);
      return {
        file,
        manifest: renamed(toManifest(file, document.toJS()), `crds-test-${path.parse(file).name}`),
      };
    }),
  );

interface CrdManifest {
  readonly metadata: { readonly name: string };
  readonly spec: Readonly<Record<string, unknown>>;
}

/** The CustomResourceDefinitions under infra/crds, as written. */
const crds: readonly CrdManifest[] = fs
  .readdirSync(crdDir)
  .filter((file) => /\.ya?ml$/.test(file))
  .sort()
  .flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(crdDir, file), 'utf8'))
      .map((document) => document.toJS() as (CrdManifest & { readonly kind?: unknown }) | null)
      .filter((document) => document?.kind === 'CustomResourceDefinition')
      .map((document) => document as CrdManifest),
  );

function toManifest(file: string, value: unknown): Manifest {
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (typeof kind !== 'string' || !(kind in resources)) {
    throw new Error(
      `${file}: expected one of ${Object.keys(resources).join(', ')}, got kind ${String(kind)}`,
    );
  }
  return value as Manifest;
}

function fixture(file: string): Manifest {
  const found = fixtures.find((entry) => entry.file === file);
  if (!found) throw new Error(`no fixture ${file} in ${fixturesDir}`);
  return structuredClone(found.manifest);
}

function renamed(manifest: Manifest, name: string): Manifest {
  return { ...manifest, metadata: { ...manifest.metadata, name } };
}

function withSpec(manifest: Manifest, spec: Readonly<Record<string, unknown>>): Manifest {
  return { ...manifest, spec };
}

const nodeClassRef = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };
const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] };

/** A NodePool named `name` built from the minimal fixture with the given template and pool settings. */
function nodePool(
  name: string,
  options: {
    readonly requirements?: readonly unknown[];
    readonly labels?: Readonly<Record<string, string>>;
    readonly pool?: Readonly<Record<string, unknown>>;
  },
): Manifest {
  return withSpec(renamed(fixture('nodepool-minimal.yaml'), name), {
    template: {
      ...(options.labels ? { metadata: { labels: options.labels } } : {}),
      spec: { nodeClassRef, requirements: options.requirements ?? [onDemand] },
    },
    ...options.pool,
  });
}

function nodeClaim(name: string, requirements: readonly unknown[]): Manifest {
  const base = renamed(fixture('nodeclaim-minimal.yaml'), name);
  return withSpec(base, { ...base.spec, requirements });
}

/** A NodeOverlay named `name` with `spec`. */
function nodeOverlay(name: string, spec: Readonly<Record<string, unknown>>): Manifest {
  return withSpec(renamed(fixture('nodeoverlay-minimal.yaml'), name), spec);
}

interface Rejection {
  readonly name: string;
  readonly manifest: Manifest;
  /** The field path the API server must name. */
  readonly field: string;
  /** The validation message (the CEL rule's message, or the OpenAPI check's wording). */
  readonly message: string;
}

const capacityTypeMessage =
  "requirements on 'karpenter.sh/capacity-type' with operator 'In' must include a known capacity type: " +
  "'on-demand', 'spot' or 'reserved'";

const rejections: readonly Rejection[] = [
  {
    name: 'NodeOverlay: both price and priceAdjustment',
    manifest: nodeOverlay('crds-test-overlay-both-prices', {
      requirements: [],
      price: '1',
      priceAdjustment: '+1',
    }),
    field: 'spec',
    message: "cannot set both 'price' and 'priceAdjustment'",
  },
  {
    name: 'NodeOverlay: a priceAdjustment without a sign',
    manifest: nodeOverlay('crds-test-overlay-unsigned', { requirements: [], priceAdjustment: '10%' }),
    field: 'spec.priceAdjustment',
    message: 'should match',
  },
  {
    name: 'NodeOverlay: a discount over 100%',
    manifest: nodeOverlay('crds-test-overlay-discount', { requirements: [], priceAdjustment: '-150%' }),
    field: 'spec.priceAdjustment',
    message: 'should match',
  },
  {
    name: 'NodeOverlay: capacity of cpu',
    manifest: nodeOverlay('crds-test-overlay-cpu', { requirements: [], capacity: { cpu: '2' } }),
    field: 'spec.capacity',
    message: 'invalid resource restricted',
  },
  {
    name: 'NodeOverlay: a karpenter.sh label other than capacity type and NodePool',
    manifest: nodeOverlay('crds-test-overlay-restricted', {
      requirements: [{ key: 'karpenter.sh/registered', operator: 'Exists' }],
    }),
    field: 'spec.requirements[0].key',
    message: 'label domain "karpenter.sh" is restricted',
  },
  {
    name: 'NodeOverlay: NotIn without values',
    manifest: nodeOverlay('crds-test-overlay-notin', { requirements: [{ key: 'team', operator: 'NotIn' }] }),
    field: 'spec.requirements[0]',
    message: "requirements with operator 'NotIn' must have a value defined",
  },
  {
    name: 'NodeOverlay: weight 0',
    manifest: nodeOverlay('crds-test-overlay-weight', { requirements: [], weight: 0 }),
    field: 'spec.weight',
    message: 'should be greater than or equal to 1',
  },
  {
    name: 'NodePool: an unknown requirement operator',
    manifest: nodePool('crds-test-bad-operator', {
      requirements: [{ key: 'kubernetes.io/arch', operator: 'Matches', values: ['amd64'] }],
    }),
    field: 'spec.template.spec.requirements[0].operator',
    message: 'Unsupported value: "Matches"',
  },
  {
    name: 'NodePool: Gt with two values',
    manifest: nodePool('crds-test-gt-two-values', {
      requirements: [onDemand, { key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['4', '8'] }],
    }),
    field: 'spec.template.spec.requirements[1]',
    message: "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
  },
  {
    name: 'NodePool: Lte with a value that is not an integer',
    manifest: nodePool('crds-test-lte-not-integer', {
      requirements: [{ key: 'karpenter.k8s.aws/instance-cpu', operator: 'Lte', values: ['four'] }],
    }),
    field: 'spec.template.spec.requirements[0]',
    message: "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
  },
  {
    name: 'NodePool: In without values',
    manifest: nodePool('crds-test-in-without-values', {
      requirements: [{ key: 'kubernetes.io/arch', operator: 'In' }],
    }),
    field: 'spec.template.spec.requirements[0]',
    message: "requirements with operator 'In' must have a value defined",
  },
  {
    name: 'NodePool: minValues larger than the number of values',
    manifest: nodePool('crds-test-min-values', {
      requirements: [
        { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m7i', 'c7i'], minValues: 3 },
      ],
    }),
    field: 'spec.template.spec.requirements[0]',
    message:
      "requirements with 'minValues' must have at least that many values specified in the 'values' field",
  },
  {
    name: 'NodePool: a budget schedule without a duration',
    manifest: nodePool('crds-test-schedule-without-duration', {
      pool: { disruption: { consolidateAfter: '0s', budgets: [{ nodes: '10%', schedule: '@daily' }] } },
    }),
    field: 'spec.disruption.budgets[0]',
    message: "'schedule' must be set with 'duration'",
  },
  {
    name: 'NodePool: an unknown capacity type',
    manifest: nodePool('crds-test-unknown-capacity-type', {
      requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['cheap'] }],
    }),
    field: 'spec.template.spec.requirements[0].values',
    message: capacityTypeMessage,
  },
  {
    name: 'NodePool: template label karpenter.sh/nodepool',
    manifest: nodePool('crds-test-label-nodepool', { labels: { 'karpenter.sh/nodepool': 'other' } }),
    field: 'spec.template.metadata.labels',
    message: 'label "karpenter.sh/nodepool" is restricted',
  },
  {
    name: 'NodePool: template label kubernetes.io/hostname',
    manifest: nodePool('crds-test-label-hostname', { labels: { 'kubernetes.io/hostname': 'node-1' } }),
    field: 'spec.template.metadata.labels',
    message: 'label "kubernetes.io/hostname" is restricted',
  },
  {
    name: 'NodePool: template label in a karpenter.sh subdomain',
    manifest: nodePool('crds-test-label-subdomain', { labels: { 'foo.karpenter.sh/x': 'y' } }),
    field: 'spec.template.metadata.labels',
    message: 'label domain "karpenter.sh" is restricted',
  },
  {
    name: 'NodePool: requirement on karpenter.sh/nodepool',
    manifest: nodePool('crds-test-requirement-nodepool', {
      requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['other'] }],
    }),
    field: 'spec.template.spec.requirements[0].key',
    message: 'label "karpenter.sh/nodepool" is restricted',
  },
  {
    name: 'NodePool: static pool with a weight',
    manifest: nodePool('crds-test-static-weight', { pool: { replicas: 2, weight: 10 } }),
    field: 'spec.weight',
    message: "'weight' is not supported on static NodePools",
  },
  {
    name: 'NodePool: static pool with a cpu limit',
    manifest: nodePool('crds-test-static-cpu-limit', { pool: { replicas: 2, limits: { cpu: '10' } } }),
    field: 'spec.limits',
    message: "only 'limits.nodes' is supported on static NodePools",
  },
  {
    name: 'NodeClaim: an unknown capacity type',
    manifest: nodeClaim('crds-test-nodeclaim-capacity-type', [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['cheap'] },
    ]),
    field: 'spec.requirements[0].values',
    message: capacityTypeMessage,
  },
  {
    name: 'EC2NodeClass: both role and instanceProfile',
    manifest: ec2NodeClass('crds-test-role-and-profile', { instanceProfile: 'KarpenterNodeInstanceProfile' }),
    field: 'spec',
    message: "must specify exactly one of ['role', 'instanceProfile']",
  },
  {
    name: 'EC2NodeClass: enclaveOptions without enabled',
    manifest: ec2NodeClass('crds-test-enclaves-unsaid', { enclaveOptions: {} }),
    field: 'spec.enclaveOptions.enabled',
    message: 'Required value',
  },
  {
    name: 'EC2NodeClass: neither role nor instanceProfile',
    manifest: ec2NodeClass('crds-test-no-identity', {}, { omit: ['role'] }),
    field: 'spec',
    message: "must specify exactly one of ['role', 'instanceProfile']",
  },
  {
    name: 'EC2NodeClass: an alias next to other AMI selector terms',
    manifest: ec2NodeClass('crds-test-alias-and-terms', {
      amiSelectorTerms: [{ alias: 'al2023@latest' }, { tags: { 'karpenter.sh/discovery': 'flotilla' } }],
    }),
    field: 'spec.amiSelectorTerms',
    message: "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
  },
  {
    name: 'EC2NodeClass: an alias and tags in one AMI selector term',
    manifest: ec2NodeClass('crds-test-alias-with-tags', {
      amiSelectorTerms: [{ alias: 'al2023@latest', tags: { 'karpenter.sh/discovery': 'flotilla' } }],
    }),
    field: 'spec.amiSelectorTerms[0]',
    message:
      "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
  },
  {
    name: 'EC2NodeClass: amiFamily contradicting the alias',
    manifest: ec2NodeClass('crds-test-alias-family', { amiFamily: 'Bottlerocket' }),
    field: 'spec.amiFamily',
    message: "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
  },
  {
    name: 'EC2NodeClass: no amiFamily without an alias',
    manifest: ec2NodeClass('crds-test-no-family', { amiSelectorTerms: [{ id: 'ami-0123456789abcdef0' }] }),
    field: 'spec.amiFamily',
    message: 'must specify amiFamily if amiSelectorTerms does not contain an alias',
  },
  {
    name: 'EC2NodeClass: empty subnetSelectorTerms',
    manifest: ec2NodeClass('crds-test-no-subnets', { subnetSelectorTerms: [] }),
    field: 'spec.subnetSelectorTerms',
    message: 'subnetSelectorTerms cannot be empty',
  },
  {
    name: 'EC2NodeClass: a kubernetes.io/cluster tag',
    manifest: ec2NodeClass('crds-test-cluster-tag', { tags: { 'kubernetes.io/cluster/flotilla': 'owned' } }),
    field: 'spec.tags',
    message: 'tag contains a restricted tag matching kubernetes.io/cluster/',
  },
  {
    name: 'EC2NodeClass: a karpenter.sh/nodepool tag',
    manifest: ec2NodeClass('crds-test-nodepool-tag', { tags: { 'karpenter.sh/nodepool': 'default' } }),
    field: 'spec.tags',
    message: 'tag contains a restricted tag matching karpenter.sh/nodepool',
  },
  {
    name: 'EC2NodeClass: two root volumes',
    manifest: ec2NodeClass('crds-test-two-root-volumes', {
      blockDeviceMappings: [
        { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '20Gi' } },
        { deviceName: '/dev/xvdb', rootVolume: true, ebs: { volumeSize: '20Gi' } },
      ],
    }),
    field: 'spec.blockDeviceMappings',
    message: 'must have only one blockDeviceMappings with rootVolume',
  },
  {
    name: 'EC2NodeClass: an EBS volume without snapshotID or volumeSize',
    manifest: ec2NodeClass('crds-test-ebs-no-size', {
      blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeType: 'gp3' } }],
    }),
    field: 'spec.blockDeviceMappings[0].ebs',
    message: 'snapshotID or volumeSize must be defined',
  },
  {
    name: 'EC2NodeClass: network interfaces without a primary interface',
    manifest: ec2NodeClass('crds-test-no-primary-interface', {
      networkInterfaces: [{ networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' }],
    }),
    field: 'spec.networkInterfaces',
    message: "networkInterfaces must include a primary interface with interfaceType='interface'",
  },
];

interface UpdateRejection {
  readonly name: string;
  /** The object to create first. */
  readonly manifest: Manifest;
  /** The spec of the update that must be refused. */
  readonly update: (spec: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
  readonly field: string;
  readonly message: string;
}

function templateSpecOf(spec: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return (spec['template'] as { spec: Readonly<Record<string, unknown>> }).spec;
}

function withNodeClassRef(
  spec: Readonly<Record<string, unknown>>,
  ref: Readonly<Record<string, string>>,
): Readonly<Record<string, unknown>> {
  const template = spec['template'] as Readonly<Record<string, unknown>>;
  const templateSpec = templateSpecOf(spec);
  return {
    ...spec,
    template: {
      ...template,
      spec: { ...templateSpec, nodeClassRef: { ...(templateSpec['nodeClassRef'] as object), ...ref } },
    },
  };
}

const updateRejections: readonly UpdateRejection[] = [
  {
    name: 'NodeClaim: any change to the spec',
    manifest: renamed(fixture('nodeclaim-minimal.yaml'), 'crds-test-immutable-nodeclaim'),
    update: (spec) => ({ ...spec, expireAfter: '24h' }),
    field: 'spec',
    message: 'spec is immutable',
  },
  {
    name: 'NodePool: a new nodeClassRef.group',
    manifest: renamed(fixture('nodepool-minimal.yaml'), 'crds-test-immutable-group'),
    update: (spec) => withNodeClassRef(spec, { group: 'karpenter.azure.com' }),
    field: 'spec.template.spec.nodeClassRef.group',
    message: 'nodeClassRef.group is immutable',
  },
  {
    name: 'NodePool: a new nodeClassRef.kind',
    manifest: renamed(fixture('nodepool-minimal.yaml'), 'crds-test-immutable-kind'),
    update: (spec) => withNodeClassRef(spec, { kind: 'AKSNodeClass' }),
    field: 'spec.template.spec.nodeClassRef.kind',
    message: 'nodeClassRef.kind is immutable',
  },
  {
    name: 'NodePool: turning a dynamic pool static',
    manifest: renamed(fixture('nodepool-minimal.yaml'), 'crds-test-dynamic-to-static'),
    update: (spec) => ({ ...spec, replicas: 3 }),
    field: 'spec.replicas',
    message:
      'Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes',
  },
];

/** The HTTP status and Status message of a request the API server refused. */
async function refusal(
  request: Promise<unknown>,
): Promise<{ readonly code: number; readonly message: string }> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body: unknown = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    const message = (body as { message?: unknown } | undefined)?.message;
    return { code: error.code, message: typeof message === 'string' ? message : String(error.body) };
  }
  throw new Error('the API server accepted a request it should have refused');
}

describe('Karpenter CRDs on a real kube-apiserver', () => {
  let user: CustomObjectsApi;
  let controller: CustomObjectsApi;

  beforeAll(async () => {
    const cube = await kube();
    user = cube.userKubeConfig.makeApiClient(CustomObjectsApi);
    controller = cube.controllerKubeConfig.makeApiClient(CustomObjectsApi);
  });

  /**
   * Who writes `kind` in a cluster: a user applies NodePools and EC2NodeClasses; NodeClaims only
   * Flotilla creates and changes, as the flotilla:controller group.
   */
  function writerOf(kind: Kind): CustomObjectsApi {
    return kind === 'NodeClaim' ? controller : user;
  }

  function create(manifest: Manifest, dryRun: boolean): Promise<unknown> {
    const { group, version, plural } = resources[manifest.kind];
    return writerOf(manifest.kind).createClusterCustomObject({
      group,
      version,
      plural,
      body: manifest,
      fieldValidation: 'Strict',
      ...(dryRun ? { dryRun: 'All' } : {}),
    });
  }

  async function read(manifest: Manifest): Promise<{ readonly spec: Readonly<Record<string, unknown>> }> {
    const { group, version, plural } = resources[manifest.kind];
    const found: unknown = await user.getClusterCustomObject({
      group,
      version,
      plural,
      name: manifest.metadata.name,
    });
    return found as { spec: Readonly<Record<string, unknown>> };
  }

  /** Creates `manifest` for real, runs `body` and deletes the object again whatever happened. */
  async function withObject(manifest: Manifest, body: () => Promise<void>): Promise<void> {
    const { group, version, plural } = resources[manifest.kind];
    await create(manifest, false);
    try {
      await body();
    } finally {
      await writerOf(manifest.kind).deleteClusterCustomObject({
        group,
        version,
        plural,
        name: manifest.metadata.name,
      });
    }
  }

  // Everything else relies on this: the API server must hold every field of the CRDs (defaults and
  // x-kubernetes-validations included), not a copy a client's typed serializer has filtered.
  it.each(crds)('serves $metadata.name exactly as infra/crds declares it', async (crd) => {
    const stored = (await user.getClusterCustomObject({
      group: 'apiextensions.k8s.io',
      version: 'v1',
      plural: 'customresourcedefinitions',
      name: crd.metadata.name,
    })) as CrdManifest;
    expect(stored.spec).toMatchObject(crd.spec);
  });

  it('has the four CRDs and a minimal and a full fixture of each kind', () => {
    expect(crds.map((crd) => crd.metadata.name).sort()).toEqual([
      'ec2nodeclasses.karpenter.k8s.aws',
      'nodeclaims.karpenter.sh',
      'nodeoverlays.karpenter.sh',
      'nodepools.karpenter.sh',
    ]);
    const files = fixtures.map((entry) => entry.file);
    for (const kind of ['nodepool', 'nodeclaim', 'ec2nodeclass', 'nodeoverlay']) {
      expect(files).toContain(`${kind}-minimal.yaml`);
      expect(files).toContain(`${kind}-full.yaml`);
    }
  });

  it.each(fixtures)('accepts $file', async ({ manifest }) => {
    const created = (await create(manifest, true)) as { kind?: unknown; metadata?: { name?: unknown } };
    expect(created.kind).toBe(manifest.kind);
    expect(created.metadata?.name).toBe(manifest.metadata.name);
  });

  it('defaults a minimal NodePool', async () => {
    const manifest = fixture('nodepool-minimal.yaml');
    await withObject(manifest, async () => {
      const { spec } = await read(manifest);
      expect(spec['disruption']).toEqual({
        consolidateAfter: '0s',
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        budgets: [{ nodes: '10%' }],
      });
      expect(templateSpecOf(spec)['expireAfter']).toBe('720h');
    });
  });

  it('defaults consolidateAfter to 0s where a disruption block leaves it out (Karpenter v1.15)', async () => {
    const manifest = nodePool('crds-test-no-consolidate-after', {
      pool: { disruption: { consolidationPolicy: 'WhenEmpty', budgets: [{ nodes: '1' }] } },
    });
    await withObject(manifest, async () => {
      const { spec } = await read(manifest);
      expect(spec['disruption']).toEqual({
        consolidateAfter: '0s',
        consolidationPolicy: 'WhenEmpty',
        budgets: [{ nodes: '1' }],
      });
    });
  });

  it('defaults a minimal EC2NodeClass', async () => {
    const manifest = fixture('ec2nodeclass-minimal.yaml');
    await withObject(manifest, async () => {
      const { spec } = await read(manifest);
      expect(spec['metadataOptions']).toEqual({
        httpEndpoint: 'enabled',
        httpProtocolIPv6: 'disabled',
        httpPutResponseHopLimit: 1,
        httpTokens: 'required',
      });
    });
  });

  // spec.kubelet is v1.15's open map: the API server keeps whatever it holds, and the controller
  // judges it (ValidationSucceeded), so even a map the controller refuses is stored as it is.
  it('stores spec.kubelet as the manifest sets it, unknown fields and wrong values included', async () => {
    const kubelet = {
      maxPods: 'vcpus * 4',
      imageGCHighThresholdPercent: 50,
      imageGCLowThresholdPercent: 60,
      evictionSoft: { 'memory.available': '500Mi' },
      kubeReserved: { gpu: '-1' },
      featureGates: { InPlacePodVerticalScaling: true },
      shutdownGracePeriod: '30s',
      notAKubeletField: [{ nested: { deeper: 1 } }],
    };
    const manifest = ec2NodeClass('crds-test-kubelet-open', { kubelet });
    await withObject(manifest, async () => {
      const { spec } = await read(manifest);
      expect(spec['kubelet']).toEqual(kubelet);
    });
  });

  it('defaults a minimal NodeClaim', async () => {
    const manifest = fixture('nodeclaim-minimal.yaml');
    await withObject(manifest, async () => {
      const { spec } = await read(manifest);
      expect(spec['expireAfter']).toBe('720h');
    });
  });

  it.each(rejections)('rejects $name', async ({ manifest, field, message }) => {
    const { code, message: reply } = await refusal(create(manifest, true));
    expect(code).toBe(422);
    expect(reply).toContain(`${field}: `);
    expect(reply).toContain(message);
  });

  it.each(updateRejections)('rejects an update: $name', async ({ manifest, update, field, message }) => {
    await withObject(manifest, async () => {
      const current = (await read(manifest)) as Readonly<Record<string, unknown>> & {
        readonly spec: Readonly<Record<string, unknown>>;
      };
      const { group, version, plural } = resources[manifest.kind];
      // A merge patch of the whole spec, as its writer sends it: the controller identity may patch
      // NodeClaims but never replaces them (its role has no update verb).
      const { code, message: reply } = await refusal(
        writerOf(manifest.kind).patchClusterCustomObject(
          {
            group,
            version,
            plural,
            name: manifest.metadata.name,
            body: { spec: update(current.spec) },
            dryRun: 'All',
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
      expect(code).toBe(422);
      expect(reply).toContain(`${field}: `);
      expect(reply).toContain(message);
    });
  });
});
