import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { describeLeaseContract } from '../../contract/lease-contract.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { createStateTable } from '../aws/cloud-fixture.ts';

const table = 'flotilla-state';
let server: Moto;

beforeAll(async () => {
  server = await moto();
});

describeLeaseContract('DynamoDB store on moto', async () => {
  await resetMoto(server);
  const dynamodb = new DynamoDBClient(awsClientConfig(server));
  await createStateTable(dynamodb, table);
  return new DynamoLeaseStore(dynamodb, table);
});
