import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateFleetCommand,
  CreateLaunchTemplateCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeInstancesCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import {
  EventBridgeClient,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { awsClientConfig, type Moto, moto, resetMoto } from '../harness/index.ts';

let server: Moto;

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
});

describe('moto in server mode', () => {
  it('launches an instance with CreateFleet type instant from a launch template with overrides', async () => {
    const ec2 = new EC2Client(awsClientConfig(server));
    const vpc = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
    const subnet = await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpc.Vpc?.VpcId,
        CidrBlock: '10.0.1.0/24',
        AvailabilityZone: 'us-east-1b',
      }),
    );
    const template = await ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: 'smoke',
        LaunchTemplateData: { ImageId: 'ami-12c6146b', InstanceType: 't3.micro' },
      }),
    );
    const fleet = await ec2.send(
      new CreateFleetCommand({
        Type: 'instant',
        TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
        OnDemandOptions: { AllocationStrategy: 'lowest-price' },
        LaunchTemplateConfigs: [
          {
            LaunchTemplateSpecification: {
              LaunchTemplateId: template.LaunchTemplate?.LaunchTemplateId,
              Version: '$Latest',
            },
            Overrides: [{ InstanceType: 'm5.large', SubnetId: subnet.Subnet?.SubnetId }],
          },
        ],
        TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'smoke', Value: 'yes' }] }],
      }),
    );
    const ids = fleet.Instances?.flatMap((i) => i.InstanceIds ?? []) ?? [];
    expect(ids).toHaveLength(1);
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
    const instance = described.Reservations?.[0]?.Instances?.[0];
    expect(instance?.InstanceType).toBe('m5.large');
    expect(instance?.SubnetId).toBe(subnet.Subnet?.SubnetId);
    expect(instance?.Tags).toContainEqual({ Key: 'smoke', Value: 'yes' });
  });

  it('delivers a PutEvents event to the SQS target of a matching EventBridge rule', async () => {
    const sqs = new SQSClient(awsClientConfig(server));
    const events = new EventBridgeClient(awsClientConfig(server));
    const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'interruption' }));
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    await events.send(
      new PutRuleCommand({
        Name: 'spot',
        EventPattern: JSON.stringify({
          source: ['aws.ec2'],
          'detail-type': ['EC2 Spot Instance Interruption Warning'],
        }),
      }),
    );
    await events.send(
      new PutTargetsCommand({
        Rule: 'spot',
        Targets: [{ Id: 'queue', Arn: attributes.Attributes?.['QueueArn'] }],
      }),
    );
    const put = await events.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: 'aws.ec2',
            DetailType: 'EC2 Spot Instance Interruption Warning',
            Detail: JSON.stringify({ 'instance-id': 'i-0123456789abcdef0', 'instance-action': 'terminate' }),
          },
          { Source: 'aws.ec2', DetailType: 'Something Else', Detail: '{}' },
        ],
      }),
    );
    expect(put.FailedEntryCount).toBe(0);
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(received.Messages).toHaveLength(1);
    const body = JSON.parse(received.Messages?.[0]?.Body ?? '{}') as Record<string, unknown>;
    expect(body['detail-type']).toBe('EC2 Spot Instance Interruption Warning');
    expect(body['detail']).toEqual({ 'instance-id': 'i-0123456789abcdef0', 'instance-action': 'terminate' });
  });

  it('rejects a second conditional put of the same DynamoDB key', async () => {
    const dynamo = new DynamoDBClient(awsClientConfig(server));
    await dynamo.send(
      new CreateTableCommand({
        TableName: 'leases',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    const put = () =>
      dynamo.send(
        new PutItemCommand({
          TableName: 'leases',
          Item: { pk: { S: 'provisioner' }, holder: { S: 'a' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    await put();
    await expect(put()).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });
});
