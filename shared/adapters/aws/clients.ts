import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client, type EC2ClientConfig } from '@aws-sdk/client-ec2';
import { IAMClient } from '@aws-sdk/client-iam';
import { PricingClient } from '@aws-sdk/client-pricing';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Logger } from '../../runtime/logger.ts';
import { pricingEndpointRegion } from './pricing.ts';

/** The SDK's retry-strategy interface (v2), taken from the client config so no extra package is needed. */
type RetryStrategyV2 = Extract<
  NonNullable<EC2ClientConfig['retryStrategy']>,
  { acquireInitialRetryToken: unknown }
>;
type RetryErrorInfo = Parameters<RetryStrategyV2['refreshRetryTokenForRetry']>[1];

export interface RetryOptions {
  /** Attempts in total, first one included. @default 5 */
  readonly maxAttempts?: number;
  /** Backoff base for throttling errors (RequestLimitExceeded and friends). @default 500 */
  readonly throttlingBaseDelayMs?: number;
  /** Backoff base for transient errors (timeouts, 5xx). @default 100 */
  readonly transientBaseDelayMs?: number;
  /** Cap of one backoff. @default 20_000 */
  readonly maxDelayMs?: number;
  /** Uniform random in [0, 1), for the jitter. @default Math.random */
  readonly random?: () => number;
  /** Told about every retry, for logs and tests. */
  readonly onRetry?: (retry: {
    readonly attempt: number;
    readonly delayMs: number;
    readonly errorType: string;
    readonly errorName: string;
  }) => void;
}

/**
 * Exponential backoff with full jitter: a uniform delay in [0, min(max, base·2^retry)). `retry`
 * counts from 0 for the first retry.
 */
export function computeBackoffMs(retry: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}

/**
 * The retry policy of every Flotilla SDK client: throttling and transient errors are retried with
 * exponential backoff and full jitter, up to `maxAttempts`; everything else fails at once.
 */
export function makeRetryStrategy(options: RetryOptions = {}): RetryStrategyV2 {
  const maxAttempts = options.maxAttempts ?? 5;
  const throttlingBase = options.throttlingBaseDelayMs ?? 500;
  const transientBase = options.transientBaseDelayMs ?? 100;
  const maxDelay = options.maxDelayMs ?? 20_000;
  const random = options.random ?? Math.random;
  const token = (retryCount: number, delay: number) => ({
    getRetryCount: () => retryCount,
    getRetryDelay: () => delay,
  });
  return {
    mode: 'flotilla',
    acquireInitialRetryToken: async () => token(0, 0),
    refreshRetryTokenForRetry: async (previous, info: RetryErrorInfo) => {
      const retryable = info.errorType === 'THROTTLING' || info.errorType === 'TRANSIENT';
      const retryCount = previous.getRetryCount();
      if (!retryable || retryCount + 1 >= maxAttempts) throw new Error('no retry');
      const base = info.errorType === 'THROTTLING' ? throttlingBase : transientBase;
      const delayMs = computeBackoffMs(retryCount, base, maxDelay, random);
      options.onRetry?.({
        attempt: retryCount + 1,
        delayMs,
        errorType: info.errorType,
        errorName: info.error?.name ?? 'unknown',
      });
      return token(retryCount + 1, delayMs);
    },
    recordSuccess: () => {},
  } as RetryStrategyV2;
}

export interface AwsClientOptions {
  readonly region: string;
  /** For moto in tests; unset in production. */
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly retry?: RetryOptions;
  /** Socket idle/response timeout of one attempt. @default 10_000 */
  readonly requestTimeoutMs?: number;
  /** TCP connect timeout. @default 3_000 */
  readonly connectionTimeoutMs?: number;
  readonly logger?: Logger;
}

export interface AwsClients {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
  readonly dynamodb: DynamoDBClient;
  /** IAM is global: instance profiles for EC2NodeClasses that set spec.role. */
  readonly iam: IAMClient;
  /** In the Pricing API's own region (see pricingEndpointRegion). */
  readonly pricing: PricingClient;
}

/** Builds the SDK clients once per cold start, with explicit retries and timeouts. */
export function makeAwsClients(options: AwsClientOptions): AwsClients {
  const config = awsClientConfig(options);
  return {
    ec2: new EC2Client(config),
    ssm: new SSMClient(config),
    dynamodb: new DynamoDBClient(config),
    iam: new IAMClient(config),
    pricing: new PricingClient({ ...config, region: pricingEndpointRegion(options.region) }),
  };
}

/** The shared client configuration (exported so other adapters build their clients the same way). */
export function awsClientConfig(options: AwsClientOptions) {
  const logger = options.logger;
  const retry: RetryOptions = {
    ...options.retry,
    onRetry: (event) => {
      logger?.warn('aws call retried', { ...event });
      options.retry?.onRetry?.(event);
    },
  };
  return {
    region: options.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.credentials === undefined ? {} : { credentials: { ...options.credentials } }),
    retryStrategy: makeRetryStrategy(retry),
    requestHandler: {
      requestTimeout: options.requestTimeoutMs ?? 10_000,
      connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    },
  };
}
