import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { IAMClient } from '@aws-sdk/client-iam';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { type AwsCloud, makeAwsCloud } from '../../../shared/adapters/aws/aws-cloud.ts';
import type { ClusterInfo } from '../../../shared/adapters/aws/user-data.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import type { ManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { awsConfigAs, type LambdaName } from '../../harness/aws/identity.ts';
import { deployStack, STACK_NAMES } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto } from '../../harness/index.ts';
import {
  CLUSTER,
  makeNetwork,
  nodeClassObject,
  publishAl2023,
  silentLogger,
  testNodeClassResolver,
} from './fixtures.ts';

export const TABLE = STACK_NAMES.stateTable;

export const CLUSTER_INFO: ClusterInfo = {
  name: CLUSTER,
  endpoint: 'https://test-cluster.example.com',
  caBundle: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
  serviceCidr: '172.20.0.0/16',
};

/** The SDK clients of one Lambda's role, and the Cloud adapter built on them. */
export interface LambdaAws {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
  readonly dynamodb: DynamoDBClient;
  readonly iam: IAMClient;
  readonly sqs: SQSClient;
  readonly cloud: AwsCloud;
}

/**
 * A fresh account: the stack deployed (state table, queues, node role and profile), a network,
 * the AL2023 parameters, and a resolved NodeClass. `ec2`, `ssm` and `dynamodb` are the account's
 * own clients (set-up and inspection); `as(lambda)` gives a Lambda's clients and Cloud adapter,
 * whose every call the IAM check holds to that Lambda's policy. `cloud` and `resolver` are the
 * provisioner's, and `lambdaEc2` the EC2 client under them (for injected faults).
 */
export async function setUpAccount(server: Moto, clock: ManualClock, spec: Record<string, unknown> = {}) {
  const config = awsClientConfig(server);
  const ec2 = new EC2Client(config);
  const ssm = new SSMClient(config);
  const dynamodb = new DynamoDBClient(config);
  const stack = await deployStack(server);
  const network = await makeNetwork(ec2);
  const amis = await publishAl2023(ec2, ssm);
  const as = (lambda: LambdaName): LambdaAws => {
    const own = awsConfigAs(server, lambda);
    const clients = {
      ec2: new EC2Client(own),
      ssm: new SSMClient(own),
      dynamodb: new DynamoDBClient(own),
      iam: new IAMClient(own),
      sqs: new SQSClient(own),
    };
    return {
      ...clients,
      cloud: makeAwsCloud({
        ec2: clients.ec2,
        dynamodb: clients.dynamodb,
        tableName: TABLE,
        region: 'us-east-1',
        cluster: CLUSTER_INFO,
        clock,
        logger: silentLogger,
      }),
    };
  };
  const provisioner = as('provisioner');
  const resolver = testNodeClassResolver(provisioner.ec2, provisioner.ssm, provisioner.iam);
  const parsed = parseEC2NodeClass(nodeClassObject({ tags: { team: 'platform' }, ...spec }));
  const nodeClass: EC2NodeClass = {
    ...parsed,
    status: await resolveNodeClassStatus(resolver, parsed, clock.now()),
  };
  return {
    ec2,
    ssm,
    dynamodb,
    stack,
    network,
    amis,
    nodeClass,
    cloud: provisioner.cloud,
    lambdaEc2: provisioner.ec2,
    resolver,
    as,
  };
}
