import { S3Client } from '@aws-sdk/client-s3';
import { beforeEach } from 'vitest';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// The stack's summary bucket on moto, deployed afresh before each test, and S3 clients as the
// stack's roles see it (the IAM check holds each of their calls to the stack's policies).

export interface SummaryBucketFixture {
  /** The moto server of the current test. */
  server(): Moto;
  /** S3 as `who`'s role. */
  s3As(who: 'provisioner' | 'shim'): S3Client;
  /** S3 with the account's own keys: set-up that plays an operator. */
  s3AsAdmin(): S3Client;
}

/** Registers the beforeEach that deploys the stack on a reset moto. */
export function useSummaryBucket(): SummaryBucketFixture {
  let server: Moto | undefined;
  beforeEach(async () => {
    server = await moto();
    await resetMoto(server);
    await deployStack(server);
  });
  const current = () => {
    if (server === undefined) throw new Error('the summary bucket is deployed before each test');
    return server;
  };
  return {
    server: current,
    s3As: (who) => new S3Client({ ...awsConfigAs(current(), who), forcePathStyle: true }),
    s3AsAdmin: () => new S3Client({ ...awsClientConfig(current()), forcePathStyle: true }),
  };
}
