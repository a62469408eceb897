import {
  type _InstanceType,
  CreateFleetCommand,
  type CreateFleetCommandInput,
  CreateLaunchTemplateCommand,
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  DescribeTagsCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeEc2CatalogSource } from '../../../shared/adapters/aws/catalog-source.ts';
import { toInstanceTypes } from '../../../shared/adapters/aws/instance-types.ts';
import { Tag } from '../../../shared/apis/aws-tags.ts';
import type { InstanceType } from '../../../shared/core/instance-type.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import {
  CloudApiError,
  type EC2NodeClass,
  InstanceNotOwnedError,
  InsufficientCapacityError,
  LaunchRejectedError,
  type LaunchRequest,
  NodeClassNotReadyError,
  type OfferingCatalog,
  SpotServiceLinkedRoleError,
} from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';
import { parseKubeletRegistration } from '../../harness/user-data.ts';
import { setUpAccount } from './cloud-fixture.ts';
import { CLUSTER, silentLogger } from './fixtures.ts';
import { noCapacityFor, noSpotServiceLinkedRole } from './ice.ts';

// Launches through the provisioner's Cloud adapter, with its role; launch template clean-up is the
// catalog Lambda's and termination the termination Lambda's, each with its own role. The
// account's own client (`account.ec2`) inspects what was launched and plays a user's own instances.

let server: Moto;
let catalog: OfferingCatalog;
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
let account: Awaited<ReturnType<typeof setUpAccount>>;

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  // moto's instance-type data does not change between resets: read the catalog once, as the
  // catalog Lambda reads it.
  const ec2 = new EC2Client(awsConfigAs(server, 'catalog'));
  catalog = await makeEc2CatalogSource({
    ec2,
    region: 'us-east-1',
    clock,
    logger: silentLogger,
  }).fetchCatalog();
});

beforeEach(async () => {
  await resetMoto(server);
  clock.set(new Date('2026-11-21T10:00:00Z'));
  account = await setUpAccount(server, clock);
});

/** Counts the provisioner role's CreateFleet calls until stopped. */
function countFleets(): { count(): number; stop(): void } {
  let count = 0;
  account.lambdaEc2.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'CreateFleetCommand') count += 1;
      return next(args);
    },
    { step: 'initialize', name: 'count-fleets' },
  );
  return { count: () => count, stop: () => account.lambdaEc2.middlewareStack.remove('count-fleets') };
}

/** What the scheduler would hand over: a few types, resolved for the NodeClass. */
function candidates(nodeClass: EC2NodeClass, names: readonly string[]): InstanceType[] {
  return toInstanceTypes(
    catalog.instanceTypes.filter((t) => names.includes(t.name)),
    { region: 'us-east-1', nodeClass, family: 'AL2023', unavailable: new Set() },
  );
}

function request(name: string, overrides: Partial<LaunchRequest> = {}): LaunchRequest {
  const nodeClass = account.nodeClass;
  return {
    nodeClaimName: name,
    nodePoolName: 'general',
    nodeClass,
    instanceTypes: candidates(nodeClass, ['t3.medium', 'c5.large', 'm5.large']),
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
    labels: { 'karpenter.sh/nodepool': 'general', 'karpenter.k8s.aws/ec2nodeclass': 'default' },
    taints: [],
    startupTaints: [{ key: 'example.com/not-ready', effect: 'NoSchedule' }],
    ...overrides,
  };
}

/** Records the CreateFleet requests the Lambda's EC2 client sends, until `name` is removed. */
function recordFleets(name: string): CreateFleetCommandInput[] {
  const seen: CreateFleetCommandInput[] = [];
  account.lambdaEc2.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'CreateFleetCommand') seen.push(args.input as CreateFleetCommandInput);
      return next(args);
    },
    { step: 'initialize', name },
  );
  return seen;
}

async function userDataOf(ec2: EC2Client, instanceId: string): Promise<string> {
  const result = await ec2.send(
    new DescribeInstanceAttributeCommand({ InstanceId: instanceId, Attribute: 'userData' }),
  );
  return Buffer.from(result.UserData?.Value ?? '', 'base64').toString('utf8');
}

describe('launching through CreateFleet against moto', () => {
  it('launches the cheapest allowed offering, tagged and with user data kubelet can register with', async () => {
    const instance = await account.cloud.create(request('general-abc12'));
    expect(instance).toMatchObject({
      instanceType: 't3.medium',
      zone: 'us-east-1a',
      capacityType: 'on-demand',
      state: 'running',
      nodeClaimName: 'general-abc12',
      nodePoolName: 'general',
      nodeClassName: 'default',
      imageId: account.amis.amd64,
    });
    expect(instance.providerId).toBe(`aws:///us-east-1a/${instance.instanceId}`);
    expect(instance.tags).toMatchObject({
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
      'eks:eks-cluster-name': CLUSTER,
      'karpenter.sh/nodepool': 'general',
      'karpenter.sh/nodeclaim': 'general-abc12',
      'karpenter.k8s.aws/ec2nodeclass': 'default',
      Name: 'general/general-abc12',
      team: 'platform',
    });
    const subnet = account.network.subnets.find((s) => s.zone === 'us-east-1a');
    const described = await account.ec2.send(
      new DescribeInstancesCommand({ InstanceIds: [instance.instanceId] }),
    );
    expect(described.Reservations?.[0]?.Instances?.[0]?.SubnetId).toBe(subnet?.id);

    const registration = parseKubeletRegistration(await userDataOf(account.ec2, instance.instanceId));
    expect(registration.format).toBe('nodeadm');
    expect(registration.labels).toEqual({
      'karpenter.sh/nodepool': 'general',
      'karpenter.k8s.aws/ec2nodeclass': 'default',
    });
    expect(registration.taints).toEqual([
      { key: 'example.com/not-ready', effect: 'NoSchedule' },
      { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
    ]);
    expect(registration.maxPods).toBe(17);
  });

  it('creates one tagged launch template per configuration with IMDSv2 required, reuses and cleans them up', async () => {
    const names = async () =>
      ((await account.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? [])
        .map((t) => t.LaunchTemplateName ?? '')
        .sort();
    await account.cloud.create(request('general-one'));
    // t3.medium admits 17 pods, c5.large and m5.large 29: the user data differs, so two templates.
    const general = await names();
    expect(general).toHaveLength(2);
    for (const name of general) expect(name).toMatch(new RegExp(`^flotilla/${CLUSTER}/[0-9a-f]{20}$`));
    await account.cloud.create(request('general-two'));
    expect(await names()).toEqual(general);

    const templates = await account.ec2.send(new DescribeLaunchTemplatesCommand({}));
    const template = templates.LaunchTemplates?.[0];
    expect(template?.Tags).toEqual(
      expect.arrayContaining([
        { Key: `kubernetes.io/cluster/${CLUSTER}`, Value: 'owned' },
        { Key: 'karpenter.sh/nodepool', Value: 'general' },
        { Key: 'eks:eks-cluster-name', Value: CLUSTER },
        { Key: 'karpenter.k8s.aws/ec2nodeclass', Value: 'default' },
      ]),
    );
    const versions = await account.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({
        LaunchTemplateId: template?.LaunchTemplateId,
        Versions: ['$Latest'],
      }),
    );
    const data = versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
    expect(data?.MetadataOptions).toMatchObject({ HttpTokens: 'required', HttpPutResponseHopLimit: 1 });
    expect(data?.ImageId).toBe(account.amis.amd64);
    expect(data?.IamInstanceProfile?.Name).toBe('KarpenterNodeInstanceProfile');
    expect(data?.SecurityGroupIds).toEqual([account.network.securityGroupId]);
    expect(data?.BlockDeviceMappings?.[0]).toMatchObject({
      DeviceName: '/dev/xvda',
      Ebs: { VolumeSize: 20, VolumeType: 'gp3', Encrypted: true },
    });

    // Another NodePool (other labels) is another configuration.
    const team = { nodePoolName: 'team', labels: { 'karpenter.sh/nodepool': 'team' } };
    await account.cloud.create(request('team-one', team));
    expect(await names()).toHaveLength(4);

    // A template Karpenter made before Flotilla took the cluster over (its name, its tags), and one
    // a user made and tagged for the cluster.
    const tagged = (tags: Record<string, string>) => [
      {
        ResourceType: 'launch-template' as const,
        Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
      },
    ];
    const karpenters = 'karpenter.k8s.aws/4401516455418587125';
    for (const [name, tags] of [
      [
        karpenters,
        {
          [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
          'karpenter.sh/nodepool': 'general',
          'eks:eks-cluster-name': CLUSTER,
          'karpenter.k8s.aws/ec2nodeclass': 'default',
        },
      ],
      ['team-bastion', { 'eks:eks-cluster-name': CLUSTER }],
    ] as const) {
      await account.ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: name,
          LaunchTemplateData: { ImageId: account.amis.amd64 },
          TagSpecifications: tagged(tags),
        }),
      );
    }

    // Two hours later only the team templates are used again; the general ones are deleted.
    clock.advance(2 * 3600_000);
    await account.cloud.create(request('team-two', team));
    const deleted = await account.as('catalog').cloud.launchTemplates.deleteUnused(3600);
    expect(deleted.sort()).toEqual(general);
    const remaining = (
      (await account.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? []
    ).filter((t) => t.LaunchTemplateName?.startsWith('flotilla/'));
    expect(remaining).toHaveLength(2);
    expect(await names()).toContain('team-bastion');
    const tags = await account.ec2.send(
      new DescribeTagsCommand({
        Filters: [
          { Name: 'key', Values: [Tag.lastUsed] },
          { Name: 'resource-id', Values: remaining.map((t) => t.LaunchTemplateId ?? '') },
        ],
      }),
    );
    expect(tags.Tags?.map((t) => t.Value)).toEqual([
      String(Math.floor(clock.now().getTime() / 1000)),
      String(Math.floor(clock.now().getTime() / 1000)),
    ]);

    // Karpenter's template, made now (EC2's clock), is deleted once it is an hour old: Flotilla never
    // launches from it. The user's stays, and so do the team templates used again meanwhile.
    clock.advance(Date.now() - clock.now().getTime() + 2 * 3600_000);
    await account.cloud.create(request('team-three', team));
    expect(await account.as('catalog').cloud.launchTemplates.deleteUnused(3600)).toEqual([karpenters]);
    expect(await names()).toContain('team-bastion');
    expect((await names()).filter((n) => n.startsWith('flotilla/'))).toHaveLength(2);
  });

  it('backs off an offering after insufficient capacity until 3 minutes pass on the clock', async () => {
    const restore = noCapacityFor(account.lambdaEc2, 't3.medium');
    const first = await account.cloud.create(request('ice-1'));
    restore();
    expect(first.instanceType).toBe('c5.large');
    const unavailable = await account.cloud.unavailableOfferings.list(clock.now());
    expect([...unavailable.keys()].sort()).toEqual([
      'on-demand:t3.medium:us-east-1a',
      'on-demand:t3.medium:us-east-1b',
      'on-demand:t3.medium:us-east-1c',
    ]);

    // Capacity is back in EC2, but the back-off holds: the adapter does not even ask for t3.medium.
    expect((await account.cloud.create(request('ice-2'))).instanceType).toBe('c5.large');
    clock.advance(179_000);
    expect((await account.cloud.create(request('ice-3'))).instanceType).toBe('c5.large');
    clock.advance(2_000);
    expect((await account.cloud.create(request('ice-4'))).instanceType).toBe('t3.medium');
  });

  it('backs off only the zone that had no capacity', async () => {
    const restore = noCapacityFor(account.lambdaEc2, 't3.medium', ['us-east-1a']);
    const first = await account.cloud.create(request('zonal-1'));
    restore();
    expect(first).toMatchObject({ instanceType: 't3.medium', zone: 'us-east-1b' });
    const second = await account.cloud.create(request('zonal-2'));
    expect(second).toMatchObject({ instanceType: 't3.medium', zone: 'us-east-1b' });
  });

  it('raises InsufficientCapacityError carrying the offerings when every fleet error is a capacity error', async () => {
    const restores = ['t3.medium', 'c5.large', 'm5.large'].map((type) =>
      noCapacityFor(account.lambdaEc2, type),
    );
    const error = await account.cloud.create(request('all-ice')).catch((e: unknown) => e);
    for (const restore of restores) restore();
    expect(error).toBeInstanceOf(InsufficientCapacityError);
    const ice = error as InsufficientCapacityError;
    expect(ice.offerings).toHaveLength(9);
    expect(ice.offerings).toContainEqual({
      instanceType: 'm5.large',
      zone: 'us-east-1c',
      capacityType: 'on-demand',
    });
    expect(ice.message).toContain('InsufficientInstanceCapacity');
    // Everything is backed off now, so the next attempt fails fast without calling EC2.
    const next = await account.cloud.create(request('all-ice-2')).catch((e: unknown) => e);
    expect(next).toBeInstanceOf(InsufficientCapacityError);
    expect((next as Error).message).toContain('none of the 3 instance types has an available offering');
  });

  it('raises a CloudApiError with the AWS code when a fleet error is not about capacity', async () => {
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) =>
        context.commandName === 'CreateFleetCommand'
          ? {
              response: {},
              output: {
                $metadata: {},
                Instances: [],
                Errors: [
                  { ErrorCode: 'InsufficientInstanceCapacity', ErrorMessage: 'no t3.medium' },
                  { ErrorCode: 'InvalidParameterValue', ErrorMessage: 'Invalid IAM Instance Profile name' },
                ],
              },
            }
          : next(args),
      { step: 'initialize', name: 'bad-profile' },
    );
    const error = await account.cloud.create(request('bad')).catch((e: unknown) => e);
    account.lambdaEc2.middlewareStack.remove('bad-profile');
    // EC2 answered and launched nothing: final for that request, so the claim may go.
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error).toMatchObject({ awsCode: 'InvalidParameterValue' });
    expect((error as Error).message).toContain('Invalid IAM Instance Profile name');
  });

  it('a recorded launch sent again launches nothing new, even while DescribeInstances does not list the instance yet', async () => {
    const claim = request('replayed');
    const record = await account.cloud.planLaunch(claim);
    const first = await account.cloud.launch(claim, record);
    // EC2's eventual consistency right after a launch: DescribeInstances lists nothing yet.
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) =>
        context.commandName === 'DescribeInstancesCommand'
          ? { response: {}, output: { $metadata: {}, Reservations: [] } }
          : next(args),
      { step: 'initialize', name: 'lagging' },
    );
    const fleets = countFleets();
    // A resumed launch: a new invocation sends the record again, and again.
    const again = await account.cloud.launch(claim, record);
    const third = await account.cloud.launch(claim, record);
    account.lambdaEc2.middlewareStack.remove('lagging');
    fleets.stop();
    expect(fleets.count()).toBe(2);
    expect(again.instanceId).toBe(first.instanceId);
    expect(third.instanceId).toBe(first.instanceId);
    const tagged = await account.ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:karpenter.sh/nodeclaim', Values: ['replayed'] },
          { Name: 'instance-state-name', Values: ['pending', 'running'] },
        ],
      }),
    );
    expect(tagged.Reservations?.flatMap((r) => r.Instances ?? []).map((i) => i.InstanceId)).toEqual([
      first.instanceId,
    ]);
  });

  it('a first send asks EC2 for no tagged instance before CreateFleet; a replay looks first and launches nothing new', async () => {
    const claim = request('first-send');
    const record = await account.cloud.planLaunch(claim);
    const sent: string[] = [];
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'record-calls' },
    );
    try {
      const first = await account.cloud.launch(claim, record, { firstSend: true });
      expect(sent.slice(0, sent.indexOf('CreateFleetCommand'))).not.toContain('DescribeInstancesCommand');
      sent.length = 0;
      const replay = await account.cloud.launch(claim, record);
      expect(sent[0]).toBe('DescribeInstancesCommand');
      expect(sent).not.toContain('CreateFleetCommand');
      expect(replay.instanceId).toBe(first.instanceId);
    } finally {
      account.lambdaEc2.middlewareStack.remove('record-calls');
    }
  });

  it('a changed request under the same token is refused as EC2 refuses it, and nothing is launched', async () => {
    const claim = request('mismatch');
    const record = await account.cloud.planLaunch(claim);
    const first = await account.cloud.launch(claim, record);
    // Another request with the first one's token (what hashing a changed request must never do).
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CreateFleetCommand') {
          const input = args.input as CreateFleetCommandInput;
          const spec = input.TargetCapacitySpecification;
          if (spec !== undefined)
            input.TargetCapacitySpecification = { ...spec, DefaultTargetCapacityType: 'spot' };
        }
        return next(args);
      },
      { step: 'initialize', name: 'changed' },
    );
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) =>
        context.commandName === 'DescribeInstancesCommand'
          ? { response: {}, output: { $metadata: {}, Reservations: [] } }
          : next(args),
      { step: 'initialize', name: 'lagging' },
    );
    const error = await account.cloud.launch(claim, record).catch((e: unknown) => e);
    account.lambdaEc2.middlewareStack.remove('changed');
    account.lambdaEc2.middlewareStack.remove('lagging');
    // Not an answer about this record: the caller keeps the claim and its record.
    expect(error).toBeInstanceOf(CloudApiError);
    expect(error).toMatchObject({ awsCode: 'IdempotentParameterMismatch' });
    const live = await account.ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:karpenter.sh/nodeclaim', Values: ['mismatch'] },
          { Name: 'instance-state-name', Values: ['pending', 'running'] },
        ],
      }),
    );
    expect(live.Reservations?.flatMap((r) => r.Instances ?? []).map((i) => i.InstanceId)).toEqual([
      first.instanceId,
    ]);
  });

  it('a CreateFleet that EC2 refuses outright (its launch template gone) is final: LaunchRejectedError, nothing launched', async () => {
    const claim = request('refused');
    const record = await account.cloud.planLaunch(claim);
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'CreateFleetCommand') return next(args);
        throw Object.assign(
          new Error('The specified launch template, with template ID lt-0abc, does not exist.'),
          {
            name: 'InvalidLaunchTemplateId.NotFound',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
          },
        );
      },
      { step: 'finalizeRequest', priority: 'low', name: 'template-gone' },
    );
    const error = await account.cloud.launch(claim, record).catch((e: unknown) => e);
    account.lambdaEc2.middlewareStack.remove('template-gone');
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error).toMatchObject({ awsCode: 'InvalidLaunchTemplateId.NotFound' });
    expect(await account.cloud.findByNodeClaim('refused')).toBeUndefined();
  });

  it('prefers spot when the NodeClaim allows it, with price-capacity-optimized', async () => {
    const seen: CreateFleetCommandInput[] = [];
    account.lambdaEc2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CreateFleetCommand') seen.push(args.input as CreateFleetCommandInput);
        return next(args);
      },
      { step: 'initialize', name: 'record' },
    );
    const instance = await account.cloud.create(
      request('spotty', {
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] }],
      }),
    );
    account.lambdaEc2.middlewareStack.remove('record');
    expect(instance.capacityType).toBe('spot');
    expect(seen[0]?.SpotOptions?.AllocationStrategy).toBe('price-capacity-optimized');
    expect(seen[0]?.TargetCapacitySpecification).toEqual({
      TotalTargetCapacity: 1,
      DefaultTargetCapacityType: 'spot',
    });
    expect(seen[0]?.ClientToken).toMatch(/^spotty-[0-9a-f]{12}$/);
  });

  it('a spot launch refused for want of the spot service-linked role backs spot off; the next goes on-demand', async () => {
    const restore = noSpotServiceLinkedRole(account.lambdaEc2);
    const flexible = (name: string) =>
      request(name, {
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] }],
      });
    const error = await account.cloud.create(flexible('no-role')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpotServiceLinkedRoleError);
    // Handled as insufficient capacity: every spot offering of the request is backed off.
    expect(error).toBeInstanceOf(InsufficientCapacityError);
    const refused = error as SpotServiceLinkedRoleError;
    expect(refused.code).toBe('SpotServiceLinkedRoleCreationNotPermitted');
    expect(refused.message).toContain('AuthFailure.ServiceLinkedRoleCreationNotPermitted');
    expect(refused.offerings.length).toBeGreaterThanOrEqual(9);
    expect(refused.offerings.every((o) => o.capacityType === 'spot')).toBe(true);
    const backedOff = await account.cloud.unavailableOfferings.list(clock.now());
    expect([...backedOff.values()].filter((o) => o.capacityType === 'spot')).toHaveLength(
      new Set(refused.offerings.map((o) => `${o.instanceType}/${o.zone}`)).size,
    );
    const next = await account.cloud.create(flexible('no-role-2'));
    restore();
    expect(next.capacityType).toBe('on-demand');
  });

  it('limits offerings to the zones the NodeClaim allows', async () => {
    const instance = await account.cloud.create(
      request('zoned', {
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1c'] },
        ],
      }),
    );
    expect(instance.zone).toBe('us-east-1c');
  });

  it('launches with the EFA interfaces, IP prefixes, CPU options, placement group, RAID0 and fleet Context of its class', async () => {
    // moto has no placement-group API: the group is the one the class's status names, as the
    // EC2NodeClass controller resolves it on EC2 (its request is tested in nodeclass.test.ts).
    const efaType = catalog.instanceTypes.find((t) => t.efaCount > 0 && t.localNvmeGiB > 0);
    expect(efaType).toBeDefined();
    const spec = {
      ...account.nodeClass.spec,
      instanceStorePolicy: 'RAID0' as const,
      networkInterfaces: [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' as const },
        { networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' as const },
      ],
      ipPrefixCount: 1,
      cpuOptions: { nestedVirtualization: 'disabled' as const },
      context: 'c-0123456789abcdef0',
      placementGroupSelector: { name: 'training' },
    };
    const nodeClass: EC2NodeClass = {
      ...account.nodeClass,
      spec,
      status: {
        ...(account.nodeClass.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] }),
        placementGroups: [
          { id: 'pg-0123456789abcdef0', name: 'training', state: 'available', strategy: 'cluster' },
        ],
      },
    };
    const types = toInstanceTypes(catalog.instanceTypes, {
      region: 'us-east-1',
      nodeClass,
      family: 'AL2023',
      unavailable: new Set(),
    });
    // Only EFA types are offered; the store is the ephemeral storage; the efa-only device is advertised.
    expect(types.length).toBeGreaterThan(0);
    expect(
      types.every((t) => (catalog.instanceTypes.find((c) => c.name === t.name)?.efaCount ?? 0) > 0),
    ).toBe(true);
    const chosen = types.find((t) => t.name === efaType?.name);
    expect(chosen?.capacity['ephemeral-storage']).toBe((efaType?.localNvmeGiB ?? 0) * 1e9);
    expect(chosen?.capacity['vpc.amazonaws.com/efa']).toBe(1);

    const seen = recordFleets('record-efa');
    const instance = await account.cloud
      .create(request('efa', { nodeClass, instanceTypes: chosen === undefined ? [] : [chosen] }))
      .finally(() => account.lambdaEc2.middlewareStack.remove('record-efa'));
    expect(instance.instanceType).toBe(efaType?.name);
    expect(seen[0]?.Context).toBe('c-0123456789abcdef0');

    const templateId = seen[0]?.LaunchTemplateConfigs?.[0]?.LaunchTemplateSpecification?.LaunchTemplateId;
    const versions = await account.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: templateId, Versions: ['$Latest'] }),
    );
    const data = versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
    expect(data?.SecurityGroupIds ?? []).toEqual([]);
    expect(data?.NetworkInterfaces).toEqual([
      expect.objectContaining({
        NetworkCardIndex: 0,
        DeviceIndex: 0,
        InterfaceType: 'interface',
        Ipv4PrefixCount: 1,
        Groups: [account.network.securityGroupId],
      }),
      expect.objectContaining({ NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: 'efa-only' }),
    ]);
    expect(data?.Placement).toMatchObject({ GroupId: 'pg-0123456789abcdef0' });
    expect(data?.CpuOptions).toMatchObject({ NestedVirtualization: 'disabled' });
    expect(await userDataOf(account.ec2, instance.instanceId)).toContain('strategy: RAID0');
  });

  it('targets the partition a NodeClaim pins in a partition placement group, once per type and zone', async () => {
    // As above, the group is the one the class's status names (moto has no placement-group API).
    const nodeClass: EC2NodeClass = {
      ...account.nodeClass,
      spec: { ...account.nodeClass.spec, placementGroupSelector: { name: 'cassandra' } },
      status: {
        ...(account.nodeClass.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] }),
        placementGroups: [
          {
            id: 'pg-0aaaaaaaaaaaaaaa1',
            name: 'cassandra',
            state: 'available',
            strategy: 'partition',
            partitionCount: 3,
          },
        ],
      },
    };
    const types = toInstanceTypes(catalog.instanceTypes, {
      region: 'us-east-1',
      nodeClass,
      family: 'AL2023',
      unavailable: new Set(),
    }).filter((t) => t.name === 'c5.large');
    // Every offering three times, once per partition, and the type labelled with the group.
    const zones = new Set(types[0]?.offerings.map((o) => o.zone));
    expect(types[0]?.offerings.length).toBe(zones.size * 2 * 3);
    expect(types[0]?.labels['karpenter.k8s.aws/placement-group-id']).toBe('pg-0aaaaaaaaaaaaaaa1');
    const seen = recordFleets('record-partition');
    const pinned = await account.cloud
      .create(
        request('partition-2', {
          nodeClass,
          instanceTypes: types,
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'karpenter.k8s.aws/placement-group-partition', operator: 'In', values: ['2'] },
          ],
        }),
      )
      .finally(() => account.lambdaEc2.middlewareStack.remove('record-partition'));
    expect(pinned.instanceType).toBe('c5.large');
    const overrides = seen[0]?.LaunchTemplateConfigs?.flatMap((c) => c.Overrides ?? []) ?? [];
    expect(overrides.map((o) => o.AvailabilityZone).sort()).toEqual([...zones].sort());
    const templateId = seen[0]?.LaunchTemplateConfigs?.[0]?.LaunchTemplateSpecification?.LaunchTemplateId;
    const versions = await account.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: templateId, Versions: ['$Latest'] }),
    );
    expect(versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData?.Placement).toEqual({
      GroupId: 'pg-0aaaaaaaaaaaaaaa1',
      PartitionNumber: 2,
    });

    // No capacity for partition 3: the back-off names the group and the partition, and leaves
    // the type's other partitions available.
    const restore = noCapacityFor(account.lambdaEc2, 'c5.large');
    const refused = await account.cloud
      .create(
        request('partition-3', {
          nodeClass,
          instanceTypes: types,
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'karpenter.k8s.aws/placement-group-partition', operator: 'In', values: ['3'] },
          ],
        }),
      )
      .catch((e: unknown) => e)
      .finally(restore);
    expect(refused).toBeInstanceOf(InsufficientCapacityError);
    const backedOff = await account.cloud.unavailableOfferings.list(clock.now());
    expect([...backedOff.keys()].sort()).toEqual(
      [...zones].sort().map((z) => `on-demand:c5.large:${z}:pg-0aaaaaaaaaaaaaaa1:3`),
    );
    const after = toInstanceTypes(catalog.instanceTypes, {
      region: 'us-east-1',
      nodeClass,
      family: 'AL2023',
      unavailable: new Set(backedOff.keys()),
    }).find((t) => t.name === 'c5.large');
    const onDemand = after?.offerings.filter((o) => o.capacityType === 'on-demand') ?? [];
    expect(onDemand.filter((o) => !o.available).every((o) => o.partition === '3')).toBe(true);
    expect(onDemand.filter((o) => o.available).map((o) => o.partition)).not.toContain('3');
  });

  it('launches nothing for a NodeClass that is not ready', async () => {
    const broken = await resolveNodeClassStatus(
      account.resolver,
      {
        ...account.nodeClass,
        spec: { ...account.nodeClass.spec, subnetSelectorTerms: [{ tags: { nope: 'nope' } }] },
      },
      clock.now(),
    );
    const error = await account.cloud
      .create(request('not-ready', { nodeClass: { ...account.nodeClass, status: broken } }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeClassNotReadyError);
    expect((error as Error).message).toContain('SubnetsReady=False');
    expect(await account.cloud.list()).toEqual([]);
  });
});

describe('idempotent launch', () => {
  it('the harness EC2 honours the CreateFleet ClientToken as EC2 does: same token and request, same answer', async () => {
    const template = { LaunchTemplateName: 'probe', LaunchTemplateData: { ImageId: account.amis.amd64 } };
    const { CreateLaunchTemplateCommand } = await import('@aws-sdk/client-ec2');
    await account.ec2.send(new CreateLaunchTemplateCommand(template));
    const fleet = (instanceType: _InstanceType = 't3.micro') =>
      account.ec2.send(
        new CreateFleetCommand({
          Type: 'instant',
          ClientToken: 'same-token',
          TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
          LaunchTemplateConfigs: [
            {
              LaunchTemplateSpecification: { LaunchTemplateName: 'probe', Version: '$Latest' },
              Overrides: [
                {
                  InstanceType: instanceType,
                  SubnetId: account.network.subnets[0]?.id,
                },
              ],
            },
          ],
        }),
      );
    const a = await fleet();
    const b = await fleet();
    expect(b.Instances?.[0]?.InstanceIds?.[0]).toBe(a.Instances?.[0]?.InstanceIds?.[0]);
    const mismatch = await fleet('t3.small').catch((e: unknown) => e);
    expect(mismatch).toMatchObject({ name: 'IdempotentParameterMismatch' });
  });

  it('two launches for the same NodeClaim give one instance', async () => {
    const first = await account.cloud.create(request('same-claim'));
    const second = await account.cloud.create(request('same-claim'));
    expect(second.instanceId).toBe(first.instanceId);
    expect(await account.cloud.list()).toHaveLength(1);
  });
});

describe('terminate, describe and list', () => {
  it('terminates idempotently, lists only owned live instances, and refuses foreign ones', async () => {
    const a = await account.cloud.create(request('gc-a'));
    const b = await account.cloud.create(request('gc-b'));
    const foreign = await account.ec2.send(
      new RunInstancesCommand({
        ImageId: account.amis.amd64,
        MinCount: 1,
        MaxCount: 1,
        InstanceType: 't3.micro',
      }),
    );
    const foreignId = foreign.Instances?.[0]?.InstanceId ?? '';

    expect((await account.cloud.list()).map((i) => i.instanceId).sort()).toEqual(
      [a.instanceId, b.instanceId].sort(),
    );
    expect(await account.cloud.get(a.instanceId)).toMatchObject({ nodeClaimName: 'gc-a', state: 'running' });

    const termination = account.as('termination').cloud;
    await termination.delete(a.instanceId);
    await termination.delete(a.instanceId);
    await termination.delete('i-0123456789abcdef0');
    expect(await termination.get(a.instanceId)).toBeUndefined();
    expect((await account.cloud.list()).map((i) => i.instanceId)).toEqual([b.instanceId]);

    await expect(termination.delete(foreignId)).rejects.toBeInstanceOf(InstanceNotOwnedError);
    const still = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [foreignId] }));
    expect(still.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('running');
  });
});
