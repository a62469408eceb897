import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import { makeAwsCloud } from '../../../shared/adapters/aws/aws-cloud.ts';
import { STATE_TABLE } from '../../../shared/adapters/aws/dynamo-state.ts';
import { parseEC2NodeClass } from '../../../shared/adapters/aws/nodeclass-schema.ts';
import type { ClusterInfo } from '../../../shared/adapters/aws/user-data.ts';
import type { ManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { awsClientConfig, type Moto } from '../../harness/index.ts';
import {
  CLUSTER,
  makeNetwork,
  nodeClassObject,
  publishAl2023,
  silentLogger,
  testNodeClassResolver,
} from './fixtures.ts';

export const TABLE = 'flotilla-state';

export const CLUSTER_INFO: ClusterInfo = {
  name: CLUSTER,
  endpoint: 'https://test-cluster.example.com',
  caBundle: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
  serviceCidr: '172.20.0.0/16',
};

/** The state table as the stack creates it (string pk and sk), named `name`. */
export async function createStateTable(dynamodb: DynamoDBClient, name = TABLE): Promise<void> {
  await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: STATE_TABLE.partitionKey, AttributeType: 'S' },
        { AttributeName: STATE_TABLE.sortKey, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: STATE_TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: STATE_TABLE.sortKey, KeyType: 'RANGE' },
      ],
    }),
  );
}

/** A fresh account: network, AL2023 parameters, state table, and a Ready NodeClass. */
export async function setUpAccount(server: Moto, clock: ManualClock, spec: Record<string, unknown> = {}) {
  const config = awsClientConfig(server);
  const ec2 = new EC2Client(config);
  const ssm = new SSMClient(config);
  const dynamodb = new DynamoDBClient(config);
  const network = await makeNetwork(ec2);
  const amis = await publishAl2023(ec2, ssm);
  await createStateTable(dynamodb);
  const resolver = testNodeClassResolver(ec2, ssm, clock);
  const parsed = parseEC2NodeClass(nodeClassObject({ tags: { team: 'platform' }, ...spec }));
  const nodeClass: EC2NodeClass = { ...parsed, status: await resolver.resolve(parsed) };
  const cloud = makeAwsCloud({
    ec2,
    dynamodb,
    tableName: TABLE,
    region: 'us-east-1',
    cluster: CLUSTER_INFO,
    clock,
    logger: silentLogger,
  });
  return { ec2, ssm, dynamodb, network, amis, nodeClass, cloud, resolver };
}
