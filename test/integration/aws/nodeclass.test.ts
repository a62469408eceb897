import { EC2Client } from '@aws-sdk/client-ec2';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  CreateRoleCommand,
  DeleteRoleCommand,
  GetInstanceProfileCommand,
  IAMClient,
  NoSuchEntityException,
  RemoveRoleFromInstanceProfileCommand,
} from '@aws-sdk/client-iam';
import { SSMClient } from '@aws-sdk/client-ssm';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { managedInstanceProfileName } from '../../../shared/adapters/aws/instance-profile.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClassStatus } from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_NAMES } from '../../harness/aws/stack.ts';
import { takeDenials } from '../../harness/iam-check.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import {
  CLUSTER,
  DISCOVERY,
  LAUNCH_SHAPING_SPEC,
  makeNetwork,
  type Network,
  nodeClassObject,
  publishAl2023,
  publishBottlerocket,
  put,
  registerImage,
  SSM_PREFIX,
  testNodeClassResolver,
} from './fixtures.ts';

// EC2NodeClass resolution as the provisioner's controllers pass runs it, with the provisioner's
// role, into the status the EC2NodeClass controller writes. `ec2`, `ssm` and `iam` are the
// account's own clients: they play AWS publishing its AMIs and the user making the network and roles.

let server: Moto;
let ec2: EC2Client;
let ssm: SSMClient;
let iam: IAMClient;
let provisioner: { readonly ec2: EC2Client; readonly ssm: SSMClient; readonly iam: IAMClient };
let network: Network;
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));

beforeAll(async () => {
  server = await moto();
  ec2 = new EC2Client(awsClientConfig(server));
  ssm = new SSMClient(awsClientConfig(server));
  iam = new IAMClient(awsClientConfig(server));
  const own = awsConfigAs(server, 'provisioner');
  provisioner = { ec2: new EC2Client(own), ssm: new SSMClient(own), iam: new IAMClient(own) };
});

beforeEach(async () => {
  await resetMoto(server);
  await deployStack(server);
  network = await makeNetwork(ec2);
});

function resolver(withIam = false) {
  return testNodeClassResolver(provisioner.ec2, provisioner.ssm, withIam ? provisioner.iam : undefined);
}

/** The status of a class with `spec` (and the status `previous`) after resolving it now. */
async function resolve(
  spec: Record<string, unknown>,
  previous?: EC2NodeClassStatus,
  withIam = false,
): Promise<EC2NodeClassStatus> {
  const nodeClass = parseEC2NodeClass({
    ...nodeClassObject(spec),
    ...(previous ? { status: previous } : {}),
  });
  return resolveNodeClassStatus(resolver(withIam), nodeClass, clock.now());
}

function condition(status: EC2NodeClassStatus, type: string) {
  return status.conditions.find((c) => c.type === type);
}

describe('EC2NodeClass resolution against moto', () => {
  it('selects subnets by tags with their zones, and by id', async () => {
    await publishAl2023(ec2, ssm);
    const byTags = await resolve({});
    expect(byTags.subnets.map((s) => s.zone).sort()).toEqual(['us-east-1a', 'us-east-1b', 'us-east-1c']);
    expect(byTags.subnets.map((s) => s.id).sort()).toEqual(network.subnets.map((s) => s.id).sort());
    expect(byTags.subnets.every((s) => s.zoneID?.startsWith('use1-'))).toBe(true);

    const byId = await resolve({ subnetSelectorTerms: [{ id: network.untaggedSubnetId }] });
    expect(byId.subnets).toEqual([
      expect.objectContaining({ id: network.untaggedSubnetId, zone: 'us-east-1d' }),
    ]);

    const ored = await resolve({
      subnetSelectorTerms: [{ id: network.untaggedSubnetId }, { tags: DISCOVERY }],
    });
    expect(ored.subnets).toHaveLength(4);
    expect(condition(ored, 'SubnetsReady')?.status).toBe('True');
  });

  it('selects security groups by tags, id and name', async () => {
    await publishAl2023(ec2, ssm);
    const byTags = await resolve({});
    expect(byTags.securityGroups).toEqual([{ id: network.securityGroupId, name: 'nodes' }]);
    const byId = await resolve({ securityGroupSelectorTerms: [{ id: network.otherSecurityGroupId }] });
    expect(byId.securityGroups).toEqual([{ id: network.otherSecurityGroupId, name: 'other' }]);
    const byName = await resolve({ securityGroupSelectorTerms: [{ name: 'other' }] });
    expect(byName.securityGroups.map((g) => g.id)).toEqual([network.otherSecurityGroupId]);
  });

  it('resolves al2023@latest through the SSM parameters into AMIs with architecture and GPU requirements', async () => {
    const ids = await publishAl2023(ec2, ssm);
    const status = await resolve({});
    expect(condition(status, 'AMIsReady')?.status).toBe('True');
    const byId = new Map(status.amis.map((a) => [a.id, a.requirements]));
    expect(byId.get(ids.amd64)).toEqual([
      { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
      { key: 'karpenter.k8s.aws/instance-gpu-count', operator: 'DoesNotExist' },
      { key: 'karpenter.k8s.aws/instance-accelerator-count', operator: 'DoesNotExist' },
    ]);
    expect(byId.get(ids.arm64)?.[0]).toEqual({
      key: 'kubernetes.io/arch',
      operator: 'In',
      values: ['arm64'],
    });
    expect(byId.get(ids.nvidia)).toContainEqual({
      key: 'karpenter.k8s.aws/instance-gpu-count',
      operator: 'Exists',
    });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(status.instanceProfile).toBe('KarpenterNodeInstanceProfile');
  });

  it('resolves a pinned al2023@vX alias through its versioned parameter name', async () => {
    const pinned = await registerImage(ec2, 'amazon-eks-node-al2023-x86_64-standard-1.34-v20260101');
    await put(
      ssm,
      `${SSM_PREFIX}/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20260101/image_id`,
      pinned,
    );
    await publishAl2023(ec2, ssm);
    const status = await resolve({ amiSelectorTerms: [{ alias: 'al2023@v20260101' }] });
    expect(status.amis.map((a) => a.id)).toEqual([pinned]);
  });

  it('resolves bottlerocket@latest', async () => {
    const ids = await publishBottlerocket(ec2, ssm);
    const status = await resolve({ amiSelectorTerms: [{ alias: 'bottlerocket@latest' }] });
    expect(status.amis).toEqual([
      expect.objectContaining({ id: ids.amd64, name: 'bottlerocket-aws-k8s-1.34-x86_64-v1.50.0' }),
    ]);
  });

  it('selects AMIs by id, by tags, and by name only among images of the allowed owner', async () => {
    const tagged = await registerImage(ec2, 'team-node-image', { team: 'platform' });
    const byId = await resolve({ amiFamily: 'AL2023', amiSelectorTerms: [{ id: tagged }] });
    expect(byId.amis.map((a) => a.id)).toEqual([tagged]);
    const byTags = await resolve({ amiFamily: 'AL2023', amiSelectorTerms: [{ tags: { team: 'platform' } }] });
    expect(byTags.amis.map((a) => a.id)).toEqual([tagged]);

    // moto ships a public Canonical image with this name; ours copies it.
    const lookAlikeName = 'ubuntu/images/hvm-ssd/ubuntu-trusty-14.04-amd64-server-20170727';
    const ours = await registerImage(ec2, lookAlikeName);
    const self = await resolve({
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ name: lookAlikeName, owner: 'self' }],
    });
    expect(self.amis.map((a) => a.id)).toEqual([ours]);
    const canonical = await resolve({
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ name: lookAlikeName, owner: '099720109477' }],
    });
    expect(canonical.amis.map((a) => a.id)).toEqual(['ami-1e749f67']);
  });

  it('selects an AMI through a custom SSM parameter, and says which parameter is missing', async () => {
    const image = await registerImage(ec2, 'team-golden-image');
    await put(ssm, '/team/golden/image_id', image);
    const found = await resolve({
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ ssmParameter: '/team/golden/image_id' }],
    });
    expect(found.amis.map((a) => a.id)).toEqual([image]);
    expect(condition(found, 'AMIsReady')).toMatchObject({ status: 'True' });
    const missing = await resolve({
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ ssmParameter: '/team/missing/image_id' }],
    });
    expect(condition(missing, 'AMIsReady')).toMatchObject({ status: 'False' });
    expect(condition(missing, 'AMIsReady')?.message).toContain('/team/missing/image_id');
    // Outside the stack's amiParameterPaths, IAM refuses (as AWS would) and the condition says how to allow it.
    await put(ssm, '/other/image_id', image);
    const outside = await resolve({
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ ssmParameter: '/other/image_id' }],
    });
    expect(takeDenials()).toEqual([
      expect.objectContaining({ lambda: 'provisioner', call: 'ssm:GetParameter' }),
    ]);
    expect(condition(outside, 'AMIsReady')).toMatchObject({ status: 'False', reason: 'AMIResolutionFailed' });
    expect(condition(outside, 'AMIsReady')?.message).toContain('amiParameterPaths');
  });

  it('reaches Ready with the launch-shaping fields of a Karpenter v1 manifest, and says why not for what it cannot do', async () => {
    await publishAl2023(ec2, ssm);
    const launchShaping = LAUNCH_SHAPING_SPEC;
    expect(condition(await resolve(launchShaping), 'Ready')).toMatchObject({ status: 'True' });

    // A placement group is looked up by name (or id) with the provisioner's role. moto has no
    // placement-group API: the request is what EC2 would be sent, and the class is not Ready, its
    // condition saying why the group is not resolved, instead of launching outside the group.
    const asked: unknown[] = [];
    // One attempt: moto's answer to an action it lacks does not change on a retry.
    const once = new EC2Client({ ...awsConfigAs(server, 'provisioner'), maxAttempts: 1 });
    once.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'DescribePlacementGroupsCommand') asked.push(args.input);
        return next(args);
      },
      { step: 'initialize', name: 'record-placement' },
    );
    const placed = await resolveNodeClassStatus(
      testNodeClassResolver(once, provisioner.ssm),
      parseEC2NodeClass(nodeClassObject({ ...launchShaping, placementGroupSelector: { name: 'training' } })),
      clock.now(),
    );
    expect(asked).toEqual([{ GroupNames: ['training'] }]);
    expect(takeDenials()).toEqual([]);
    // moto answers the action it lacks with an HTML error page, which reads as AWS failing for now.
    expect(condition(placed, 'PlacementGroupReady')).toMatchObject({
      status: 'Unknown',
      reason: 'AwaitingResolution',
    });
    expect(condition(placed, 'PlacementGroupReady')?.message).toContain('ec2:DescribePlacementGroups failed');
    expect(condition(placed, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'NotReady' });
    expect(condition(placed, 'Ready')?.message).toContain('PlacementGroupReady=Unknown');
    expect(placed.placementGroups).toBeUndefined();

    // A field Flotilla does not read is named, and the class does not launch without it.
    const unknown = await resolve({ futureSetting: { enabled: true } });
    expect(condition(unknown, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ValidationFailed',
    });
    expect(condition(unknown, 'ValidationSucceeded')?.message).toContain(
      'spec.futureSetting is not supported',
    );
  });

  it('reports a NodeClass whose subnets match nothing as not ready, saying what to fix', async () => {
    await publishAl2023(ec2, ssm);
    const status = await resolve({ subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'typo' } }] });
    expect(condition(status, 'SubnetsReady')).toMatchObject({ status: 'False', reason: 'SubnetsNotFound' });
    expect(condition(status, 'SubnetsReady')?.message).toContain('"karpenter.sh/discovery":"typo"');
    expect(condition(status, 'SubnetsReady')?.message).toContain('tag the subnets');
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'NotReady' });
    expect(condition(status, 'Ready')?.message).toContain('SubnetsReady=False');
  });

  it('reports an unknown alias and a version without parameters as AMIsReady=False', async () => {
    await publishAl2023(ec2, ssm);
    const unknown = await resolve({ amiSelectorTerms: [{ alias: 'ubuntu@latest' }] });
    expect(condition(unknown, 'AMIsReady')).toMatchObject({ status: 'False', reason: 'UnsupportedAlias' });
    expect(condition(unknown, 'AMIsReady')?.message).toContain('"ubuntu@latest"');
    expect(condition(unknown, 'Ready')?.status).toBe('False');

    const missing = await resolve({ amiSelectorTerms: [{ alias: 'al2023@v19990101' }] });
    expect(condition(missing, 'AMIsReady')).toMatchObject({ status: 'False', reason: 'AMINotFound' });
    expect(condition(missing, 'AMIsReady')?.message).toContain('Kubernetes 1.34');
  });

  it('flags restricted tags and a role it cannot manage, and keeps transition times of unchanged conditions', async () => {
    await publishAl2023(ec2, ssm);
    const first = await resolve({ tags: { 'karpenter.sh/nodepool': 'x' } });
    expect(condition(first, 'ValidationSucceeded')?.message).toContain('"karpenter.sh/nodepool"');
    const roleOnly = await resolve({ instanceProfile: undefined, role: 'KarpenterNodeRole' });
    expect(condition(roleOnly, 'InstanceProfileReady')).toMatchObject({ status: 'False' });
    expect(condition(roleOnly, 'InstanceProfileReady')?.message).toContain('spec.instanceProfile');

    const before = await resolve({});
    clock.advance(60_000);
    const after = await resolve({}, before);
    expect(condition(after, 'Ready')?.lastTransitionTime).toBe(
      condition(before, 'Ready')?.lastTransitionTime,
    );
    const broken = await resolve({ subnetSelectorTerms: [{ id: 'subnet-00000000' }] }, before);
    expect(condition(broken, 'Ready')?.lastTransitionTime).not.toBe(
      condition(before, 'Ready')?.lastTransitionTime,
    );
  });

  it('manages an instance profile for spec.role: created once, tagged for the cluster, holding exactly that role', async () => {
    await publishAl2023(ec2, ssm);
    // The stack lets the provisioner pass only its own node role to EC2 (iam:PassRole), as
    // Karpenter's policy does, so spec.role names that role.
    const nodeRole = STACK_NAMES.nodeRole;
    const first = await resolve({ instanceProfile: undefined, role: nodeRole }, undefined, true);
    expect(condition(first, 'InstanceProfileReady')).toMatchObject({ status: 'True' });
    expect(condition(first, 'Ready')).toMatchObject({ status: 'True' });
    const nodeClassName = parseEC2NodeClass(nodeClassObject({})).name;
    const name = managedInstanceProfileName(CLUSTER, 'us-east-1', nodeClassName);
    expect(first.instanceProfile).toBe(name);
    const roles = async () =>
      (
        (await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name }))).InstanceProfile
          ?.Roles ?? []
      ).map((r) => r.RoleName);
    expect(await roles()).toEqual([nodeRole]);
    const tags = (await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name })))
      .InstanceProfile?.Tags;
    expect(tags).toEqual(
      expect.arrayContaining([
        { Key: `kubernetes.io/cluster/${CLUSTER}`, Value: 'owned' },
        { Key: 'eks:eks-cluster-name', Value: CLUSTER },
        { Key: 'topology.kubernetes.io/region', Value: 'us-east-1' },
        { Key: 'karpenter.k8s.aws/ec2nodeclass', Value: nodeClassName },
      ]),
    );

    const again = await resolve({ instanceProfile: undefined, role: nodeRole }, first, true);
    expect(again.instanceProfile).toBe(name);
    expect(await roles()).toEqual([nodeRole]);

    // Someone put another role in the profile by hand: it is swapped back for spec.role's.
    const trust = JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' }, Action: 'sts:AssumeRole' }],
    });
    await iam.send(new CreateRoleCommand({ RoleName: 'OtherNodeRole', AssumeRolePolicyDocument: trust }));
    await iam.send(
      new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: name, RoleName: nodeRole }),
    );
    await iam.send(
      new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: 'OtherNodeRole' }),
    );
    expect(await roles()).toEqual(['OtherNodeRole']);
    const swapped = await resolve({ instanceProfile: undefined, role: nodeRole }, again, true);
    expect(swapped.instanceProfile).toBe(name);
    expect(await roles()).toEqual([nodeRole]);

    // The node role deleted (taken out of its profiles first, as IAM requires): spec.role names a
    // role that does not exist.
    for (const profile of [name, STACK_NAMES.instanceProfile]) {
      await iam.send(
        new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: profile, RoleName: nodeRole }),
      );
    }
    await iam.send(new DeleteRoleCommand({ RoleName: nodeRole }));
    const missing = await resolve({ instanceProfile: undefined, role: nodeRole }, swapped, true);
    expect(condition(missing, 'InstanceProfileReady')).toMatchObject({ status: 'False' });
    expect(condition(missing, 'InstanceProfileReady')?.message).toContain(
      `spec.role "${nodeRole}" does not exist`,
    );
    expect(condition(missing, 'Ready')).toMatchObject({ status: 'False' });
  });

  it('keeps using the instance profile Karpenter made for the class (its ownership tags), and deletes it with the class', async () => {
    await publishAl2023(ec2, ssm);
    const nodeRole = STACK_NAMES.nodeRole;
    const nodeClassName = parseEC2NodeClass(nodeClassObject({})).name;
    // As Karpenter v1 names and tags the profile it makes for spec.role.
    const profile = async (name: string, tags: Record<string, string>) => {
      await iam.send(
        new CreateInstanceProfileCommand({
          InstanceProfileName: name,
          Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
        }),
      );
      await iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: nodeRole }));
    };
    const karpenters = `${CLUSTER}_7339542916148213541`;
    const ownership = {
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
      'eks:eks-cluster-name': CLUSTER,
      'topology.kubernetes.io/region': 'us-east-1',
      'karpenter.k8s.aws/ec2nodeclass': nodeClassName,
    };
    await profile(karpenters, ownership);
    const spec = { instanceProfile: undefined, role: nodeRole };
    const previous = {
      subnets: [],
      securityGroups: [],
      amis: [],
      instanceProfile: karpenters,
      conditions: [],
    };
    const adopted = await resolve(spec, previous, true);
    expect(adopted.instanceProfile).toBe(karpenters);
    expect(condition(adopted, 'InstanceProfileReady')).toMatchObject({ status: 'True' });
    const managed = managedInstanceProfileName(CLUSTER, 'us-east-1', nodeClassName);
    const exists = (name: string) =>
      iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name })).then(
        () => true,
        (error: unknown) => {
          if (error instanceof NoSuchEntityException) return false;
          throw error;
        },
      );
    expect(await exists(managed)).toBe(false);

    // A profile of another cluster's (or another class's) is never taken: the managed one is made.
    const foreign = `${CLUSTER}_other`;
    await profile(foreign, { ...ownership, 'karpenter.k8s.aws/ec2nodeclass': 'someone-else' });
    const own = await resolve(spec, { ...previous, instanceProfile: foreign }, true);
    expect(own.instanceProfile).toBe(managed);
    expect(await exists(managed)).toBe(true);

    // Deleting the class releases the profile it uses, Karpenter's included; the foreign one stays.
    const release = (instanceProfile: string) =>
      resolver(true).release(
        parseEC2NodeClass({ ...nodeClassObject(spec), status: { ...previous, instanceProfile } }),
      );
    await release(karpenters);
    expect(await exists(karpenters)).toBe(false);
    await release(foreign);
    expect(await exists(foreign)).toBe(true);
    expect(await exists(managed)).toBe(false);
    expect(takeDenials()).toEqual([]);
  });
});
