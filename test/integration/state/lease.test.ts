import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { describeLeaseContract } from '../../contract/lease-contract.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_NAMES } from '../../harness/aws/stack.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';

let server: Moto;

beforeAll(async () => {
  server = await moto();
});

// The provisioner holds its leases in the stack's state table, with its own role.
describeLeaseContract('DynamoDB store on moto', async () => {
  await resetMoto(server);
  await deployStack(server);
  const dynamodb = new DynamoDBClient(awsConfigAs(server, 'provisioner'));
  return new DynamoLeaseStore(dynamodb, STACK_NAMES.stateTable);
});
