import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateTagsCommand,
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { beforeEach, describe, expect, it } from 'vitest';
import { FLOTILLA_FUNCTIONS } from '../../infra/functions.ts';
import { authorizationsOf, denial } from './aws/authorize.ts';
import { awsConfigAs, type LambdaName } from './aws/identity.ts';
import { stackPolicies } from './aws/policies.ts';
import { deployStack, STACK_ACCOUNT, STACK_CLUSTER, STACK_NAMES } from './aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from './index.ts';

// The IAM check that every harness test runs under (iam-check.ts): it must refuse what the
// synthesized policies refuse, and let through what they allow.

let server: Moto;

beforeEach(async () => {
  server = await moto();
  await resetMoto(server);
  await deployStack(server);
});

async function instance(tags: Record<string, string>): Promise<string> {
  const ec2 = new EC2Client(awsClientConfig(server));
  const out = await ec2.send(
    new RunInstancesCommand({ ImageId: 'ami-12c6146b', MinCount: 1, MaxCount: 1, InstanceType: 't3.micro' }),
  );
  const id = out.Instances?.[0]?.InstanceId ?? '';
  if (Object.keys(tags).length > 0) {
    await ec2.send(
      new CreateTagsCommand({
        Resources: [id],
        Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
      }),
    );
  }
  return id;
}

const owned = { [`kubernetes.io/cluster/${STACK_CLUSTER}`]: 'owned', 'karpenter.sh/nodepool': 'default' };

describe('the IAM check of Lambda calls', () => {
  it('lets the termination Lambda terminate an instance this cluster owns, and refuses a foreign one', async () => {
    const ec2 = new EC2Client(awsConfigAs(server, 'termination'));
    const mine = await instance(owned);
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [mine] }));
    const foreign = await instance({ team: 'other' });
    const error = await ec2
      .send(new TerminateInstancesCommand({ InstanceIds: [foreign] }))
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('UnauthorizedOperation');
    expect((error as Error).message).toContain('ec2:TerminateInstances');
    // The foreign instance is still running: the refused call never reached moto.
    const described = await new EC2Client(awsClientConfig(server)).send(
      new DescribeInstancesCommand({ InstanceIds: [foreign] }),
    );
    expect(described.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('running');
    // The afterEach of iam-check.ts would fail this test for the refusal; it is what is tested here.
    (await import('./iam-check.ts')).takeDenials();
  });

  it('refuses the catalog Lambda, which has no terminate permission, even for an owned instance', async () => {
    const requests = await authorizationsOf({
      service: 'EC2',
      operation: 'TerminateInstances',
      input: { InstanceIds: [await instance(owned)] },
      region: 'us-east-1',
      endpoint: server.endpoint,
    });
    const policies = await stackPolicies();
    const principal = `arn:aws:iam::${STACK_ACCOUNT}:role/flotilla-catalog`;
    expect(await denial(principal, policies['catalog'] ?? [], requests[0] as never)).toMatch(/Denied/);
    expect(await denial(principal, policies['termination'] ?? [], requests[0] as never)).toBeUndefined();
  });

  it('scopes DynamoDB to the state table', async () => {
    const dynamodb = new DynamoDBClient(awsConfigAs(server, 'provisioner'));
    await dynamodb.send(
      new GetItemCommand({ TableName: STACK_NAMES.stateTable, Key: { pk: { S: 'x' }, sk: { S: 'y' } } }),
    );
    const error = await dynamodb
      .send(new GetItemCommand({ TableName: 'someone-elses', Key: { pk: { S: 'x' }, sk: { S: 'y' } } }))
      .catch((e: Error) => e);
    expect((error as Error).name).toBe('AccessDeniedException');
    (await import('./iam-check.ts')).takeDenials();
  });
});

describe('the IAM check of the cluster summary', () => {
  // moto serves every service on one endpoint: buckets are addressed by path.
  const s3As = (who: LambdaName) => new S3Client({ ...awsConfigAs(server, who), forcePathStyle: true });
  const summary = { Bucket: STACK_NAMES.summaryBucket, Key: STACK_NAMES.summaryObject };

  it('lets the shim write the summary object and the provisioner read it, and nothing more', async () => {
    const body = JSON.stringify({ cluster: STACK_CLUSTER });
    await s3As('shim').send(new PutObjectCommand({ ...summary, Body: body }));
    const read = await s3As('provisioner').send(new GetObjectCommand(summary));
    expect(await read.Body?.transformToString()).toBe(body);

    const write = await s3As('provisioner')
      .send(new PutObjectCommand({ ...summary, Body: '{}' }))
      .catch((e: Error) => e);
    expect((write as Error).name).toBe('AccessDeniedException');
    expect((write as Error).message).toContain('s3:PutObject');
    // Another key exists in the bucket (put by the account itself), and is still refused.
    const other = { Bucket: STACK_NAMES.summaryBucket, Key: 'clusters/other-cluster/summary.json.gz' };
    await new S3Client({ ...awsClientConfig(server), forcePathStyle: true }).send(
      new PutObjectCommand({ ...other, Body: '{}' }),
    );
    for (const who of ['provisioner', 'shim'] as const) {
      const error = await s3As(who)
        .send(new GetObjectCommand(other))
        .catch((e: Error) => e);
      expect((error as Error).name, who).toBe('AccessDeniedException');
    }
    // The refused write never reached moto: the object is still the shim's.
    const after = await s3As('provisioner').send(new GetObjectCommand(summary));
    expect(await after.Body?.transformToString()).toBe(body);
    expect((await import('./iam-check.ts')).takeDenials().map((d) => `${d.lambda} ${d.call}`)).toEqual([
      'provisioner s3:PutObject',
      'provisioner s3:GetObject',
      'shim s3:GetObject',
    ]);
  });

  it('lets exactly the Lambdas that read the cluster read the summary', async () => {
    const policies = await stackPolicies();
    const [read] = await authorizationsOf({
      service: 'S3',
      operation: 'GetObject',
      input: { ...summary },
      region: server.region,
      endpoint: server.endpoint,
    });
    const readers: string[] = [];
    for (const fn of FLOTILLA_FUNCTIONS) {
      const principal = `arn:aws:iam::${STACK_ACCOUNT}:role/flotilla-${fn.name}`;
      if ((await denial(principal, policies[fn.name] ?? [], read as never)) === undefined)
        readers.push(fn.name);
    }
    expect(readers.sort()).toEqual(
      ['provisioner', 'disruption', 'garbage-collector', 'termination', 'interruption'].sort(),
    );
  });
});
