import { EC2Client } from '@aws-sdk/client-ec2';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  awsClientConfig as flotillaClientConfig,
  type RetryOptions,
} from '../../../shared/adapters/aws/clients.ts';
import { makeInstanceOps } from '../../../shared/adapters/aws/instances.ts';
import { CloudApiError } from '../../../shared/ports/cloud.ts';
import { lambdaCredentials } from '../../harness/aws/identity.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';
import { CLUSTER, silentLogger } from './fixtures.ts';

let server: Moto;

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
});

interface Retry {
  readonly attempt: number;
  readonly delayMs: number;
  readonly errorType: string;
  readonly errorName: string;
}

/**
 * An EC2 client built as the adapter builds it, with the provisioner's role (cloud.list is its
 * call) and `failures` injected below the retry layer.
 */
function client(retry: RetryOptions, failures: readonly string[]) {
  const retries: Retry[] = [];
  const ec2 = new EC2Client(
    flotillaClientConfig({
      region: server.region,
      endpoint: server.endpoint,
      credentials: lambdaCredentials('provisioner'),
      retry: { ...retry, onRetry: (r) => retries.push(r) },
    }),
  );
  let calls = 0;
  // finalizeRequest/low runs inside the retry middleware, so every attempt passes through it.
  ec2.middlewareStack.add(
    (next) => async (args) => {
      const failure = failures[calls++];
      if (failure !== undefined) {
        throw Object.assign(new Error(`${failure} (injected)`), {
          name: failure,
          $fault: 'client',
          $metadata: { httpStatusCode: failure === 'RequestLimitExceeded' ? 503 : 403 },
        });
      }
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'inject-failures' },
  );
  const ops = makeInstanceOps({ ec2, clusterName: CLUSTER, logger: silentLogger });
  return { ops, retries, calls: () => calls };
}

describe('SDK retries', () => {
  it('retries RequestLimitExceeded with exponential backoff and full jitter, then succeeds', async () => {
    const half = client({ throttlingBaseDelayMs: 40, random: () => 0.5 }, [
      'RequestLimitExceeded',
      'RequestLimitExceeded',
    ]);
    const began = Date.now();
    expect(await half.ops.list()).toEqual([]);
    expect(Date.now() - began).toBeGreaterThanOrEqual(60);
    expect(half.calls()).toBe(3);
    expect(half.retries).toEqual([
      { attempt: 1, delayMs: 20, errorType: 'THROTTLING', errorName: 'RequestLimitExceeded' },
      { attempt: 2, delayMs: 40, errorType: 'THROTTLING', errorName: 'RequestLimitExceeded' },
    ]);

    // The delay is a random fraction of the exponential ceiling: another draw, other delays.
    const low = client({ throttlingBaseDelayMs: 40, random: () => 0.25 }, [
      'RequestLimitExceeded',
      'RequestLimitExceeded',
    ]);
    await low.ops.list();
    expect(low.retries.map((r) => r.delayMs)).toEqual([10, 20]);
  });

  it('gives up after maxAttempts with a CloudApiError naming the call and the code', async () => {
    const always = client(
      { maxAttempts: 4, throttlingBaseDelayMs: 1 },
      Array(10).fill('RequestLimitExceeded'),
    );
    const error = await always.ops.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CloudApiError);
    expect(error).toMatchObject({ operation: 'ec2:DescribeInstances', awsCode: 'RequestLimitExceeded' });
    expect((error as Error).message).toContain('retried on the next run');
    expect(always.calls()).toBe(4);
  });

  it('does not retry an error that retrying cannot fix', async () => {
    const denied = client({ throttlingBaseDelayMs: 1 }, ['UnauthorizedOperation']);
    const error = await denied.ops.list().catch((e: unknown) => e);
    expect(error).toMatchObject({ awsCode: 'UnauthorizedOperation' });
    expect((error as Error).message).toContain('IAM policy');
    expect(denied.calls()).toBe(1);
    expect(denied.retries).toEqual([]);
  });
});
