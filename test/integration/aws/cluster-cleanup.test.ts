import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CloudFormationClient, CreateStackCommand, DeleteStackCommand } from '@aws-sdk/client-cloudformation';
import {
  CreateLaunchTemplateCommand,
  CreateTagsCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { answerCloudFormation, makeCleanUpHandler } from '../../../lambdas/cleanup/run.ts';
import { makeClusterResources } from '../../../shared/adapters/aws/cluster-resources.ts';
import { makeStackStatusReader } from '../../../shared/adapters/aws/stack-status.ts';
import { runCleanup } from '../../../shared/cli/cleanup/command.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, HARNESS_STACK_NAME, STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { asLambda } from './lambda-cold-start.ts';

// The clean-up Lambda as deployed (its role's policy from the synthesized stack on every call) on
// moto: the stack's deletion and EKS's DeleteCluster terminate the instances and delete the launch
// templates Flotilla launched for this cluster, named in a line first, and nothing of another
// cluster or maker; CloudFormation gets its answer at the custom resource's ResponseURL.

let server: Moto;
let admin: EC2Client;
let answers: Record<string, unknown>[] = [];
let responder: Server;
let responseUrl = '';
let lines: Record<string, unknown>[] = [];

const ownedTags = (cluster: string) => ({
  [`kubernetes.io/cluster/${cluster}`]: 'owned',
  'eks:eks-cluster-name': cluster,
  'karpenter.sh/nodepool': 'default',
  'karpenter.k8s.aws/ec2nodeclass': 'default',
});

async function instance(tags: Record<string, string>): Promise<string> {
  const out = await admin.send(
    new RunInstancesCommand({ ImageId: 'ami-12c6146b', MinCount: 1, MaxCount: 1, InstanceType: 't3.micro' }),
  );
  const id = out.Instances?.[0]?.InstanceId ?? '';
  await admin.send(
    new CreateTagsCommand({
      Resources: [id],
      Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
    }),
  );
  return id;
}

async function template(name: string, tags: Record<string, string>): Promise<void> {
  await admin.send(
    new CreateLaunchTemplateCommand({
      LaunchTemplateName: name,
      LaunchTemplateData: { ImageId: 'ami-12c6146b' },
      TagSpecifications: [
        {
          ResourceType: 'launch-template',
          Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
        },
      ],
    }),
  );
}

async function stateOf(id: string): Promise<string | undefined> {
  const out = await admin.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

async function templateNames(): Promise<string[]> {
  const out = await admin.send(new DescribeLaunchTemplatesCommand({}));
  return (out.LaunchTemplates ?? []).map((t) => t.LaunchTemplateName ?? '').sort();
}

/**
 * The clean-up Lambda's handler as its cold start wires it, run as that Lambda; `ec2` in place of
 * its own EC2 client (one that cannot reach EC2, say).
 */
function cleanUp(event: unknown, ec2 = new EC2Client(awsConfigAs(server, 'cleanup'))) {
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const handler = makeCleanUpHandler({
    clusterName: STACK_CLUSTER,
    resources: makeClusterResources({ ec2, clusterName: STACK_CLUSTER, logger }),
    logger,
    metrics: quietMetrics,
    stackStatus: makeStackStatusReader(new CloudFormationClient(awsConfigAs(server, 'cleanup'))),
    respond: answerCloudFormation,
  });
  return asLambda(server, 'cleanup', () => handler(event));
}

let stackId = '';

const stackEvent = (RequestType: 'Create' | 'Delete', onDelete = 'cleanUp') => ({
  RequestType,
  ResponseURL: responseUrl,
  StackId: stackId,
  RequestId: `request-${RequestType}`,
  LogicalResourceId: 'FlotillaCleanupOnStackDelete',
  ResourceType: 'Custom::FlotillaClusterCleanup',
  ResourceProperties: { cluster: STACK_CLUSTER, onDelete },
});

/** `cdk destroy`, as far as moto's CloudFormation plays it: the stack is deleted. */
async function deleteStack(): Promise<void> {
  await new CloudFormationClient(awsClientConfig(server)).send(
    new DeleteStackCommand({ StackName: stackId }),
  );
}

const deleteCluster = (name: string, errorCode?: string) => ({
  source: 'aws.eks',
  'detail-type': 'AWS API Call via CloudTrail',
  detail: {
    eventSource: 'eks.amazonaws.com',
    eventName: 'DeleteCluster',
    requestParameters: { name },
    ...(errorCode === undefined ? {} : { errorCode }),
  },
});

beforeAll(async () => {
  responder = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      answers.push({ method: request.method, ...(JSON.parse(body) as Record<string, unknown>) });
      response.end();
    });
  });
  await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve));
  responseUrl = `http://127.0.0.1:${(responder.address() as AddressInfo).port}/answer`;
});

afterAll(() => new Promise<void>((resolve) => responder.close(() => resolve())));

beforeEach(async () => {
  server = await moto();
  await resetMoto(server);
  await deployStack(server);
  admin = new EC2Client(awsClientConfig(server));
  answers = [];
  lines = [];
  // The stack in CloudFormation, which the clean-up asks whether it is being deleted.
  const created = await new CloudFormationClient(awsClientConfig(server)).send(
    new CreateStackCommand({
      StackName: HARNESS_STACK_NAME,
      TemplateBody: JSON.stringify({
        Resources: { Handle: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
      }),
    }),
  );
  stackId = created.StackId ?? '';
});

describe('the clean-up when the cluster goes', () => {
  it('on the stack deletion terminates and deletes what this cluster owns, after a line naming it, and answers CloudFormation', async () => {
    const mine = [
      await instance(ownedTags(STACK_CLUSTER)),
      await instance(ownedTags(STACK_CLUSTER)),
      // Only the ownership tags (as a node adopted from Karpenter may carry): it goes too.
      await instance({
        [`kubernetes.io/cluster/${STACK_CLUSTER}`]: 'owned',
        'karpenter.sh/nodepool': 'default',
      }),
    ];
    const other = await instance(ownedTags('other-cluster'));
    const untagged = await instance({ team: 'platform' });
    await template('flotilla-mine', ownedTags(STACK_CLUSTER));
    await template('flotilla-other', ownedTags('other-cluster'));
    await template('someone-elses', { team: 'platform' });

    // Creation does nothing but answer.
    expect(await cleanUp(stackEvent('Create'))).toMatchObject({ kind: 'ignored' });
    expect(answers).toEqual([expect.objectContaining({ method: 'PUT', Status: 'SUCCESS' })]);
    expect(await stateOf(mine[0] ?? '')).toBe('running');

    // The resource deleted while the stack stays (an update or a rollback removed it), or deployed
    // with cleanUpOnDestroy false: nothing goes, and CloudFormation hears SUCCESS.
    expect(await cleanUp(stackEvent('Delete'))).toMatchObject({
      kind: 'ignored',
      why: expect.stringContaining('not being deleted'),
    });
    await deleteStack();
    expect(await cleanUp(stackEvent('Delete', 'keep'))).toMatchObject({
      kind: 'ignored',
      why: expect.stringContaining('cleanUpOnDestroy false'),
    });
    for (const id of mine) expect(await stateOf(id)).toBe('running');
    expect(answers.map((a) => a['Status'])).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);

    // The stack's own deletion.
    const outcome = await cleanUp(stackEvent('Delete'));
    expect(outcome).toMatchObject({ kind: 'cleaned' });
    for (const id of mine) expect(['shutting-down', 'terminated']).toContain(await stateOf(id));
    expect(await stateOf(other)).toBe('running');
    expect(await stateOf(untagged)).toBe('running');
    expect(await templateNames()).toEqual(['flotilla-other', 'someone-elses']);
    expect(answers.at(-1)).toMatchObject({
      Status: 'SUCCESS',
      RequestId: 'request-Delete',
      LogicalResourceId: 'FlotillaCleanupOnStackDelete',
      PhysicalResourceId: `flotilla-cleanup-${STACK_CLUSTER}`,
    });
    // What it would remove was named before anything went, then what went.
    const cleanUpLines = lines.filter((l) => l['decision'] === 'cleanUp');
    expect(cleanUpLines.map((l) => [l['action'], l['reason']])).toEqual([
      ['planned', 'stackDeleted'],
      ['done', 'stackDeleted'],
    ]);
    expect(cleanUpLines[0]).toMatchObject({
      instances: [...mine].sort(),
      instanceCount: 3,
      launchTemplates: ['flotilla-mine'],
      launchTemplateCount: 1,
    });
  });

  it('on EKS DeleteCluster of this cluster cleans up; of another cluster, or refused, does nothing', async () => {
    const mine = await instance(ownedTags(STACK_CLUSTER));
    expect(await cleanUp(deleteCluster('other-cluster'))).toMatchObject({ kind: 'ignored' });
    expect(await cleanUp(deleteCluster(STACK_CLUSTER, 'ResourceInUseException'))).toMatchObject({
      kind: 'ignored',
    });
    expect(await stateOf(mine)).toBe('running');
    expect(await cleanUp(deleteCluster(STACK_CLUSTER))).toMatchObject({ kind: 'cleaned' });
    expect(['shutting-down', 'terminated']).toContain(await stateOf(mine));
    expect(answers).toEqual([]);
  });

  it('tells CloudFormation FAILED with why when EC2 fails: the deletion stops rather than leave instances in silence', async () => {
    await instance(ownedTags(STACK_CLUSTER));
    await deleteStack();
    // A template that carries the cluster's tags but is refused by the role's conditions cannot be
    // made here; a closed endpoint plays EC2 failing instead.
    const unreachable = new EC2Client({
      ...awsConfigAs(server, 'cleanup'),
      endpoint: 'http://127.0.0.1:1',
      maxAttempts: 1,
    });
    expect(await cleanUp(stackEvent('Delete'), unreachable)).toMatchObject({
      kind: 'failed',
      why: expect.stringMatching(/DescribeInstances/),
    });
    expect(answers.at(-1)).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringContaining('clean-up of cluster'),
    });
  });
});

describe('flotilla cleanup --dry-run', () => {
  it("lists what the clean-up would remove, with the user's credentials, and removes nothing", async () => {
    const mine = await instance(ownedTags(STACK_CLUSTER));
    await instance(ownedTags('other-cluster'));
    await template('flotilla-mine', ownedTags(STACK_CLUSTER));
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const user = (cluster: string) =>
      makeClusterResources({ ec2: admin, clusterName: cluster, logger: makeLogger({}, { sink: () => {} }) });

    expect(
      await runCleanup(['--cluster-name', STACK_CLUSTER, '--region', 'us-east-1', '--dry-run'], io, user),
    ).toBe(0);
    expect(out.join('')).toBe(
      `Cluster ${STACK_CLUSTER} (us-east-1): the clean-up would terminate 1 instances and delete 1 launch templates.\nInstances:\n  ${mine}\nLaunch templates:\n  flotilla-mine\n`,
    );
    expect(await stateOf(mine)).toBe('running');
    expect(await templateNames()).toContain('flotilla-mine');

    // It never removes: without --dry-run it refuses.
    expect(await runCleanup(['--cluster-name', STACK_CLUSTER], io, user)).toBe(2);
    expect(err.join('')).toContain('only --dry-run');
    expect(await stateOf(mine)).toBe('running');
  });
});
