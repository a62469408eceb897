import { EKSClient } from '@aws-sdk/client-eks';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { makeAwsCloud } from '../../shared/adapters/aws/aws-cloud.ts';
import { type AwsClients, awsClientConfig, makeAwsClients } from '../../shared/adapters/aws/clients.ts';
import { type ClusterAccess, describeClusterAccess } from '../../shared/adapters/aws/eks-cluster.ts';
import { makeS3SummarySource } from '../../shared/adapters/aws/summary-source.ts';
import type { ProviderSettings } from '../../shared/adapters/class-instance-types.ts';
import { makeKubeHttp } from '../../shared/adapters/kube/http.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/kube-cluster.ts';
import { makeKubeAccess } from '../../shared/adapters/kube/kube-config.ts';
import { shadowCloud } from '../../shared/adapters/shadow-cloud.ts';
import { withClusterSummary } from '../../shared/adapters/summary-cluster.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { Cloud } from '../../shared/ports/cloud.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import { summaryLimitsFor } from '../../shared/ports/summary.ts';
import { ClusterAccessEnvVar, EnvVar } from '../../shared/runtime/env.ts';
import { FEATURE_GATE_DEFAULTS, type FeatureGateName } from '../../shared/runtime/feature-gates.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { DEFAULT_OPERATOR_SETTINGS } from '../../shared/runtime/operator-settings.ts';
import { shadowModeSetting } from '../../shared/runtime/switch.ts';
import type { MetricsSink } from '../../shared/usecases/decisions/sink.ts';
import { ignoringWrites } from '../../shared/usecases/explain/read-only.ts';
import { makeDecisionOutput } from './decision-output.ts';
import { parseLambdaEnv } from './env.ts';

// Cold-start wiring shared by the Lambdas that reach both the cluster and EC2: configuration from
// the environment, the logger and the metrics sink beside it, SDK clients, the API server (found
// with eks:DescribeCluster unless set), the Cluster and Cloud adapters.

/** The clusterSize a local run without FLOTILLA_CLUSTER_SIZE reads summaries for (the stack's default). */
const DEFAULT_SUMMARY_SIZE = { nodes: 500, pods: 10_000 };

const BaseEnv = z.object({
  AWS_REGION: z.string().min(1),
  [EnvVar.clusterName]: z.string().min(1),
  [EnvVar.stateTable]: z.string().min(1),
  [EnvVar.logLevel]: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** A shadow stack decides beside the cluster's autoscaler and writes nothing (see `wire`). */
  [EnvVar.mode]: shadowModeSetting,
  [ClusterAccessEnvVar.clusterEndpoint]: z.url({ protocol: /^https$/ }).optional(),
  [ClusterAccessEnvVar.clusterCa]: z.string().min(1).optional(),
  [ClusterAccessEnvVar.kubernetesVersion]: z
    .string()
    .regex(/^1\.\d+$/, 'a Kubernetes minor such as 1.34')
    .optional(),
  [ClusterAccessEnvVar.serviceCidr]: z.string().min(1).optional(),
  /** Local runs and tests reach the API server through a kubeconfig file instead of an EKS token. */
  KUBECONFIG: z.string().min(1).optional(),
  /** The stack's event bus: each decision also goes there as an event (unset: logs only). */
  [EnvVar.decisionBus]: z.string().min(1).optional(),
  /** Where the shim publishes the cluster summary; without it every read goes to the API server. */
  [EnvVar.summaryBucket]: z.string().min(1).optional(),
  /** The stack's clusterSize, which caps what a summary may hold; local runs take the default. */
  [EnvVar.clusterSize]: z
    .string()
    .regex(/^\d+,\d+$/, '"<nodes>,<pods>", e.g. "500,10000"')
    .default(`${DEFAULT_SUMMARY_SIZE.nodes},${DEFAULT_SUMMARY_SIZE.pods}`)
    .transform((value) => {
      const [nodes = 0, pods = 0] = value.split(',').map(Number);
      return { nodes, pods };
    }),
  /** An endpoint override (local runs, tests): S3 is then addressed path-style. */
  AWS_ENDPOINT_URL: z.string().min(1).optional(),
  AWS_ENDPOINT_URL_S3: z.string().min(1).optional(),
});

/**
 * One of Karpenter's feature gates as its variable carries it: `true` or `false`, absent taking
 * Karpenter's default for the gate; anything else is a configuration error, not a silent default.
 */
export function gateSwitch(gate: FeatureGateName) {
  return z
    .enum(['true', 'false'], { error: 'must be "true" or "false"' })
    .default(FEATURE_GATE_DEFAULTS[gate] ? 'true' : 'false')
    .transform((value) => value === 'true');
}

/** `FLOTILLA_NODE_REPAIR`: Karpenter's NodeRepair gate (absent is off). */
export const nodeRepairSwitch = gateSwitch('NodeRepair');

const d = DEFAULT_OPERATOR_SETTINGS;

/** A whole number of milliseconds (or seconds) from the environment, at least `min`. */
const wholeNumber = (min: number, fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .default(String(fallback))
    .transform(Number)
    .refine((n) => n >= min, `must be at least ${min}`);

/**
 * Karpenter's AWS settings and ReservedCapacity gate, for the Lambdas that compute instance types
 * (the provisioner and disruption): `ProviderSettings` through `providerSettingsOf`.
 */
export const providerEnv = {
  [EnvVar.reservedCapacity]: gateSwitch('ReservedCapacity'),
  [EnvVar.vmMemoryOverheadPercent]: z
    .string()
    .default(String(d.vmMemoryOverheadPercent))
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n >= 0 && n < 1, 'must be a fraction at least 0 and below 1'),
  [EnvVar.reservedENIs]: wholeNumber(0, d.reservedENIs),
};

/** The provider settings from an environment parsed with `providerEnv`. */
export function providerSettingsOf(config: {
  readonly [EnvVar.reservedCapacity]: boolean;
  readonly [EnvVar.vmMemoryOverheadPercent]: number;
  readonly [EnvVar.reservedENIs]: number;
}): ProviderSettings {
  return {
    reservedCapacity: config[EnvVar.reservedCapacity],
    vmMemoryOverheadPercent: config[EnvVar.vmMemoryOverheadPercent],
    reservedENIs: config[EnvVar.reservedENIs],
  };
}

/** The provisioner's batch window and AMI refresh interval (Karpenter's names in env.ts). */
export const provisionerSettingsEnv = {
  [EnvVar.batchIdleMs]: wholeNumber(1, d.batchIdleMs),
  [EnvVar.batchMaxMs]: wholeNumber(1, d.batchMaxMs),
  [EnvVar.amiRefreshSeconds]: wholeNumber(60, d.amiRefreshMs / 1000),
};

/** Parses the environment with `extra` fields added; lists every problem at once. */
export function loadEnv<T extends z.ZodRawShape>(lambda: string, env: NodeJS.ProcessEnv, extra: T) {
  return parseLambdaEnv(lambda, BaseEnv.extend(extra), env);
}

/** What a Lambda invocation's context tells the handler (the part Flotilla uses). */
export interface InvocationContext {
  readonly awsRequestId?: string;
  /** Milliseconds left before the invocation times out. */
  getRemainingTimeInMillis?(): number;
}

/** Retries stop this long before the invocation's timeout, leaving time to report and return. */
const DEADLINE_MARGIN_MS = 5_000;

export interface Wiring {
  /** Whether this is a shadow stack's Lambda: its cluster and cloud write nothing. */
  readonly shadow: boolean;
  readonly logger: Logger;
  /**
   * Where the metrics of decisions go: EMF lines beside the logger's, with the cluster as dimension;
   * with the stack's event bus, each decision also goes there as an event (flushed by withDeadline
   * at the end of each invocation).
   */
  readonly metrics: MetricsSink;
  readonly clients: AwsClients;
  readonly sqs: SQSClient;
  /** The API server, its CA and the cluster's Kubernetes version. */
  readonly access: ClusterAccess;
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  /** The running invocation's deadline less a margin (epoch ms), when its context gave one. */
  readonly deadlineMs: () => number | undefined;
  /**
   * Wraps a handler so that calls the API server could not answer are retried only while the
   * invocation has time left (its deadline less a margin).
   */
  withDeadline<E, R>(
    handler: (event: E, context?: InvocationContext) => Promise<R>,
  ): (event: E, context?: InvocationContext) => Promise<R>;
}

/**
 * Builds the adapters once per cold start; `provider` shapes the instance types the Cloud gives
 * (Karpenter's defaults without it).
 */
export async function wire(
  lambda: string,
  config: z.infer<typeof BaseEnv>,
  functionName: string,
  provider?: ProviderSettings,
): Promise<Wiring> {
  const clusterName = config[EnvVar.clusterName];
  const region = config.AWS_REGION;
  const shadow = config[EnvVar.mode];
  const { logger, metrics, bus } = makeDecisionOutput({
    lambda,
    clusterName,
    region,
    shadow,
    logLevel: config[EnvVar.logLevel],
    busName: config[EnvVar.decisionBus],
  });
  const clients = makeAwsClients({ region, logger });
  const access = await clusterAccess(config, logger);
  const connection = makeKubeHttp(
    makeKubeAccess(
      config.KUBECONFIG === undefined
        ? {
            kind: 'eks',
            clusterName,
            region,
            endpoint: access.endpoint,
            caData: access.caData,
            credentials: clients.ec2.config.credentials,
          }
        : { kind: 'file', path: config.KUBECONFIG },
    ),
  );
  const invocation: { deadlineMs: number | undefined } = { deadlineMs: undefined };
  const kubeCluster = makeKubeCluster({
    connection,
    logger,
    clock: systemClock,
    instance: functionName,
    retry: { deadlineMs: () => invocation.deadlineMs },
  });
  const summaryBucket = config[EnvVar.summaryBucket];
  const read =
    summaryBucket === undefined
      ? kubeCluster
      : withClusterSummary(kubeCluster, {
          source: makeS3SummarySource({
            s3: new S3Client({
              ...awsClientConfig({ region, logger }),
              forcePathStyle:
                config.AWS_ENDPOINT_URL !== undefined || config.AWS_ENDPOINT_URL_S3 !== undefined,
            }),
            bucket: summaryBucket,
            cluster: clusterName,
            limits: summaryLimitsFor(config[EnvVar.clusterSize]),
          }),
          clock: systemClock,
          logger,
        });
  // A shadow stack reads as a live one does; its writes resolve as done and are never sent.
  const cluster = shadow ? ignoringWrites(read) : read;
  const serviceCidr = config[ClusterAccessEnvVar.serviceCidr] ?? access.serviceCidr;
  const awsCloud = makeAwsCloud({
    ec2: clients.ec2,
    dynamodb: clients.dynamodb,
    tableName: config[EnvVar.stateTable],
    region,
    cluster: {
      name: clusterName,
      endpoint: access.endpoint,
      caBundle: access.caData,
      ...(serviceCidr === undefined ? {} : { serviceCidr }),
      ...(access.ipFamily === undefined ? {} : { ipFamily: access.ipFamily }),
    },
    clock: systemClock,
    logger,
    ...(provider === undefined ? {} : { provider }),
  });
  const cloud = shadow ? shadowCloud(awsCloud, () => systemClock.now()) : awsCloud;
  const sqs = new SQSClient(awsClientConfig({ region, logger }));
  const withDeadline: Wiring['withDeadline'] = (handler) => async (event, context) => {
    const left = context?.getRemainingTimeInMillis?.();
    invocation.deadlineMs = left === undefined ? undefined : Date.now() + left - DEADLINE_MARGIN_MS;
    try {
      return await handler(event, context);
    } finally {
      // The invocation's decision events go out before it returns (a frozen Lambda sends nothing).
      await bus?.flush();
    }
  };
  return {
    shadow,
    logger,
    metrics,
    clients,
    sqs,
    access,
    cluster,
    cloud,
    deadlineMs: () => invocation.deadlineMs,
    withDeadline,
  };
}

/** The API server and version: from the environment when all are set, else from EKS itself. */
async function clusterAccess(config: z.infer<typeof BaseEnv>, logger: Logger): Promise<ClusterAccess> {
  const endpoint = config[ClusterAccessEnvVar.clusterEndpoint];
  const caData = config[ClusterAccessEnvVar.clusterCa];
  const kubernetesVersion = config[ClusterAccessEnvVar.kubernetesVersion];
  if (endpoint !== undefined && caData !== undefined && kubernetesVersion !== undefined) {
    return { endpoint, caData, kubernetesVersion };
  }
  const region = config.AWS_REGION;
  const discovered = await describeClusterAccess(
    new EKSClient(awsClientConfig({ region, logger })),
    config[EnvVar.clusterName],
  );
  logger.info('cluster discovered', {
    endpoint: discovered.endpoint,
    kubernetesVersion: discovered.kubernetesVersion,
  });
  return discovered;
}
