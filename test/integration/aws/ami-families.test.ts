import { DescribeInstanceTypesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { toCachedInstanceType, toInstanceTypes } from '../../../shared/adapters/aws/instance-types.ts';
import { fallbackOnDemandPrices } from '../../../shared/adapters/aws/pricing.ts';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { nodeClassFamily } from '../../../shared/ports/ami-family.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { CachedInstanceType, CloudInstance, EC2NodeClass } from '../../../shared/ports/cloud.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import { reconcileNodeClasses } from '../../../shared/usecases/nodeclass/nodeclass.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { awsClientConfig, kube, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { NodeSimulator } from '../../harness/node-sim.ts';
import { setUpAccount, TABLE } from './cloud-fixture.ts';
import {
  CLUSTER,
  K8S_VERSION,
  nodeClassObject,
  publishBottlerocket,
  put,
  registerImage,
  SSM_PREFIX,
  silentLogger,
} from './fixtures.ts';

// One EC2NodeClass per AMI family, applied as a user applies it and resolved by the EC2NodeClass
// controller (as the flotilla:controller group, the provisioner's role on moto); one instance
// launched for each through the provisioner's Cloud adapter; and the node simulator, playing each
// instance's kubelet, registers the Node its user data asks for. No schedule is waited for: the
// controller pass and the simulator's reconcile are run once each, by hand.

const classes = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' };
const run = Math.random().toString(36).slice(2, 7);
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));

let server: Moto;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let cluster: Cluster;
let cachedTypes: readonly CachedInstanceType[];
let account: Awaited<ReturnType<typeof setUpAccount>>;
let simulator: NodeSimulator | undefined;
const applied: string[] = [];

/** A user's own bootstrap for a Custom AMI: a nodeadm NodeConfig with its labels and taints. */
const CUSTOM_NODE_CONFIG = [
  'apiVersion: node.eks.aws/v1alpha1',
  'kind: NodeConfig',
  'spec:',
  `  cluster: { name: ${CLUSTER}, apiServerEndpoint: https://test-cluster.example.com }`,
  '  kubelet:',
  '    config:',
  '      registerWithTaints: [{ key: karpenter.sh/unregistered, effect: NoExecute }]',
  '    flags: [--node-labels=family=custom]',
  '',
].join('\n');

interface Case {
  readonly name: string;
  readonly spec: (images: Record<string, string>) => Record<string, unknown>;
  readonly format: string;
  readonly os: 'linux' | 'windows';
}

/** Ready classes, each launched once: the alias form and the explicit-AMI form across the families. */
const READY: readonly Case[] = [
  { name: 'al2023', spec: () => ({}), format: 'nodeadm', os: 'linux' },
  {
    name: 'al2',
    spec: (i) => ({ amiSelectorTerms: [{ id: i['al2'] }], amiFamily: 'AL2' }),
    format: 'bootstrap.sh',
    os: 'linux',
  },
  {
    name: 'bottlerocket',
    spec: () => ({
      amiSelectorTerms: [{ alias: 'bottlerocket@latest' }],
      userData: '[settings.host-containers.admin]\nenabled = true\n',
    }),
    format: 'bottlerocket',
    os: 'linux',
  },
  {
    name: 'windows2019',
    spec: (i) => ({ amiSelectorTerms: [{ id: i['windows2019'] }], amiFamily: 'Windows2019' }),
    format: 'windows',
    os: 'windows',
  },
  {
    name: 'windows2022',
    spec: () => ({ amiSelectorTerms: [{ alias: 'windows2022@latest' }] }),
    format: 'windows',
    os: 'windows',
  },
  {
    name: 'windows2025',
    spec: (i) => ({
      amiSelectorTerms: [{ id: i['windows2025'] }],
      amiFamily: 'Windows2025',
      userData: 'Write-Host "before bootstrap"',
    }),
    format: 'windows',
    os: 'windows',
  },
  {
    name: 'custom',
    spec: (i) => ({
      amiSelectorTerms: [{ id: i['custom'] }],
      amiFamily: 'Custom',
      userData: CUSTOM_NODE_CONFIG,
    }),
    format: 'nodeadm',
    os: 'linux',
  },
];

const classNameOf = (c: { name: string }) => `${c.name}-${run}`;

beforeAll(async () => {
  const cube = await kube();
  server = await moto();
  await resetMoto(server);
  custom = cube.userKubeConfig.makeApiClient(CustomObjectsApi);
  core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  cluster = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
  account = await setUpAccount(server, clock);
  // The two instance types the launches choose from, read as the catalog Lambda reads them (the
  // whole region's catalog is the catalog tests' subject, and slow to read).
  const catalogEc2 = new EC2Client(awsConfigAs(server, 'catalog'));
  const described = await catalogEc2.send(
    new DescribeInstanceTypesCommand({ InstanceTypes: ['m5.large', 'm6g.large'] }),
  );
  const onDemand = await fallbackOnDemandPrices.onDemandPrices('us-east-1');
  cachedTypes = (described.InstanceTypes ?? []).flatMap((info) => {
    const cached = toCachedInstanceType(
      info,
      new Set(['us-east-1a', 'us-east-1b', 'us-east-1c']),
      new Map(),
      { onDemand, spot: new Map() },
      0,
    );
    return cached === undefined ? [] : [cached];
  });
  simulator = NodeSimulator.start({
    ec2: new EC2Client(awsClientConfig(server)),
    kubeConfig: cube.userKubeConfig,
    clusterName: CLUSTER,
    // Reconciled by hand below.
    pollMs: 3_600_000,
  });
});

afterAll(async () => {
  await simulator?.stop();
  // Uninstalled as a user would: deleted, then finalized by the controller.
  for (const name of applied)
    await custom.deleteClusterCustomObject({ ...classes, name }).catch(() => undefined);
  if (applied.length > 0) await pass();
});

/** One pass of the EC2NodeClass controller over this file's classes, as the provisioner runs it. */
async function pass() {
  const read = (await cluster.nodeClasses()).items.filter((c) => applied.includes(c.name));
  return reconcileNodeClasses(
    {
      cluster,
      resolver: account.resolver,
      leases: new DynamoLeaseStore(account.as('provisioner').dynamodb, TABLE),
      clock,
      logger: silentLogger,
      metrics: quietMetrics,
    },
    { holder: `ami-families-${run}`, scope: 'all' },
    { nodeClasses: read, nodeClaims: [] },
  );
}

async function publishImages(): Promise<Record<string, string>> {
  const { ec2, ssm } = account;
  await publishBottlerocket(ec2, ssm);
  const windows2022 = await registerImage(
    ec2,
    `Windows_Server-2022-English-Core-EKS_Optimized-${K8S_VERSION}-2026.11.12`,
  );
  await put(
    ssm,
    `${SSM_PREFIX}/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-${K8S_VERSION}/image_id`,
    windows2022,
  );
  return {
    al2: await registerImage(ec2, `amazon-eks-node-${K8S_VERSION}-v20261101`),
    windows2019: await registerImage(
      ec2,
      `Windows_Server-2019-English-Core-EKS_Optimized-${K8S_VERSION}-2026.11.12`,
    ),
    windows2025: await registerImage(
      ec2,
      `Windows_Server-2025-English-Core-EKS_Optimized-${K8S_VERSION}-2026.11.12`,
    ),
    custom: await registerImage(ec2, 'team-golden-node-2026.11'),
  };
}

const condition = (c: EC2NodeClass | undefined, type: string) =>
  c?.status?.conditions.find((x) => x.type === type);

describe('EC2NodeClasses of every AMI family', () => {
  it('resolve Ready (or say exactly why not), and launch nodes whose user data registers them', async () => {
    const images = await publishImages();
    const empty = {
      name: 'custom-empty',
      spec: { amiSelectorTerms: [{ id: images['custom'] }], amiFamily: 'Custom' },
    };
    for (const c of [...READY.map((r) => ({ name: r.name, spec: r.spec(images) })), empty]) {
      const body = nodeClassObject(c.spec, classNameOf(c)) as { metadata: Record<string, unknown> };
      delete body.metadata['generation'];
      await custom.createClusterCustomObject({ ...classes, body });
      applied.push(classNameOf(c));
    }
    const result = await pass();
    expect(result.failed).toEqual([]);
    const stored = new Map((await cluster.nodeClasses()).items.map((c) => [c.name, c]));

    // A Custom AMI without user data (one that bootstraps itself) resolves, as in Karpenter.
    const selfBootstrapping = stored.get(classNameOf(empty));
    expect(condition(selfBootstrapping, 'ValidationSucceeded')?.status).toBe('True');
    expect(condition(selfBootstrapping, 'Ready')?.status).toBe('True');

    const launched = new Map<string, CloudInstance>();
    for (const c of READY) {
      const nodeClass = stored.get(classNameOf(c));
      expect(condition(nodeClass, 'Ready'), c.name).toMatchObject({ status: 'True' });
      if (nodeClass === undefined) continue;
      // Windows classes launch, and say that they are priced as Linux.
      expect(condition(nodeClass, 'PricingExact')?.reason).toBe(
        c.os === 'windows' ? 'WindowsLicenseNotPriced' : undefined,
      );
      const family = nodeClassFamily(nodeClass.spec);
      const instanceTypes = toInstanceTypes(cachedTypes, {
        region: 'us-east-1',
        nodeClass,
        family,
        unavailable: new Set(),
      });
      // Windows runs on amd64 only; AL2023's alias has an arm64 image too.
      const names = instanceTypes.map((t) => t.name);
      if (c.os === 'windows') expect(names).toEqual(['m5.large']);
      if (c.name === 'al2023') expect(names).toEqual(['m5.large', 'm6g.large']);
      launched.set(
        c.name,
        await account.cloud.create({
          nodeClaimName: `${c.name}-${run}-a1b2c`,
          nodePoolName: c.name,
          nodeClass,
          instanceTypes,
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
          labels: {
            'karpenter.sh/nodepool': c.name,
            'karpenter.k8s.aws/ec2nodeclass': nodeClass.name,
            'kubernetes.io/os': c.os,
          },
          taints: [{ key: 'dedicated', value: c.name, effect: 'NoSchedule' }],
          startupTaints: [],
        }),
      );
    }

    await simulator?.tick();
    expect(simulator?.problems()).toEqual([]);
    const nodeNames = simulator?.nodes() ?? new Map<string, string>();
    for (const c of READY) {
      const instance = launched.get(c.name);
      const nodeName = nodeNames.get(instance?.instanceId ?? '');
      expect(nodeName, `${c.name} registered`).toBeDefined();
      const node: V1Node = await core.readNode({ name: nodeName ?? '' });
      const labels = node.metadata?.labels ?? {};
      const taints = (node.spec?.taints ?? []).map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`);
      expect(labels['kubernetes.io/os'], c.name).toBe(c.os);
      expect(taints, c.name).toContain('karpenter.sh/unregistered=:NoExecute');
      if (c.name === 'custom') {
        // Flotilla adds nothing to a Custom AMI's user data: the node registers as the user wrote.
        expect(labels['family']).toBe('custom');
        expect(labels['karpenter.sh/nodepool']).toBeUndefined();
        continue;
      }
      expect(labels, c.name).toMatchObject({
        'karpenter.sh/nodepool': c.name,
        'karpenter.k8s.aws/ec2nodeclass': classNameOf(c),
      });
      expect(taints, c.name).toContain(`dedicated=${c.name}:NoSchedule`);
      if (c.os === 'windows') {
        expect(labels['node.kubernetes.io/windows-build']).toBe(
          { windows2019: '10.0.17763', windows2022: '10.0.20348', windows2025: '10.0.26100' }[c.name],
        );
        expect(instance?.instanceType).toBe('m5.large');
      }
    }
  });
});
