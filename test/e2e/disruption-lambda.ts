import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeLaunchRequester } from '../../shared/adapters/aws/follow-up.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import type { AlarmReader } from '../../shared/ports/alarms.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import type { LeaseStore } from '../../shared/ports/lease.ts';
import type { DisruptionPassResult } from '../../shared/usecases/disruption/controller.ts';
import { type DisruptionConfig, setUpDisruption } from '../../shared/usecases/disruption/setup.ts';
import { TABLE } from '../integration/aws/cloud-fixture.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import type { ProvisionerE2E } from './provisioner-fixture.ts';

// The disruption Lambda's pass and a user's edit that drifts a NodePool, for the e2e files.

/**
 * One disruption pass as the disruption Lambda runs it (the flotilla:controller group on the API
 * server, the disruption role's policy on every AWS call, the stack's queues and state table), set
 * up as its handler sets it up (setUpDisruption), limited to one NodePool (or those `pool`
 * accepts), as the API server is shared with other test files.
 */
export function disruptionLambdaPass(
  e2e: ProvisionerE2E,
  pool: string | ((name: string) => boolean),
  holder: string,
  overrides: {
    /** The Cluster port as the Lambda wires it (its list reads from the cluster summary, say). */
    readonly cluster?: Cluster;
    /** The lease store (one that never gives a lease back, say). @default the stack's state table */
    readonly leases?: LeaseStore;
    /** Settings beside the file's lease name and NodePools (a deadline, a shorter validation wait). */
    readonly options?: DisruptionConfig;
    /** CloudWatch's alarms as the Lambda reads them. @default none (the pass gets no reader) */
    readonly alarms?: AlarmReader;
  } = {},
): Promise<DisruptionPassResult> {
  const { server, account } = e2e.env;
  const cluster = overrides.cluster ?? e2e.env.cluster;
  const aws = account.as('disruption');
  return asLambda(server, 'disruption', () =>
    setUpDisruption(
      {
        cluster,
        cloud: aws.cloud,
        leases: overrides.leases ?? new DynamoLeaseStore(aws.dynamodb, TABLE),
        ...(overrides.alarms === undefined ? {} : { alarms: overrides.alarms }),
        clock: systemClock,
        sleep: (ms) => sleep(ms),
        logger: e2e.logger,
        metrics: e2e.metrics,
        terminationQueue: makeSqsTerminationQueue(aws.sqs, account.stack.queueUrls.termination),
        requestLaunch: makeLaunchRequester({
          sqs: aws.sqs,
          queueUrl: account.stack.queueUrls.podEvents,
          clusterName: CLUSTER,
          clock: systemClock,
        }),
      },
      {
        leaseName: `disruption#${e2e.id}`,
        nodePools: typeof pool === 'string' ? (name) => name === pool : pool,
        ...overrides.options,
      },
    ).pass(holder),
  );
}

/**
 * `kubectl edit nodepool`: sets one template label, so the NodePool's hash changes and its nodes
 * drift. Retried on a conflict with a status write, as kubectl would be.
 */
export async function relabelNodePool(
  e2e: ProvisionerE2E,
  name: string,
  key: string,
  value: string,
): Promise<void> {
  const nodepools = { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' };
  for (let attempt = 1; ; attempt++) {
    const pool = (await e2e.env.custom.getClusterCustomObject({ ...nodepools, name })) as {
      spec: { template: { metadata?: { labels?: Record<string, string> } } };
    };
    const { metadata } = pool.spec.template;
    pool.spec.template.metadata = { ...metadata, labels: { ...metadata?.labels, [key]: value } };
    try {
      await e2e.env.custom.replaceClusterCustomObject({ ...nodepools, name, body: pool });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
    }
  }
}

/**
 * The messages on a queue now (up to 10), received, given to `handle` as a Lambda's SQS trigger
 * gives them, then deleted (acknowledged). Returns how many there were.
 */
export async function consumeQueue(
  sqs: SQSClient,
  queueUrl: string,
  handle: (messages: readonly Message[]) => Promise<unknown>,
): Promise<number> {
  const received = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 30 }),
  );
  const messages = received.Messages ?? [];
  if (messages.length === 0) return 0;
  await handle(messages);
  for (const m of messages) {
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle ?? '' }));
  }
  return messages.length;
}
