import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readShadowLogs, ShadowLogsError, shadowLogGroupPrefix } from '../../shared/cli/shadow/logs.ts';
import { compareShadow } from '../../shared/usecases/shadow/compare.ts';
import { LINES } from '../fixtures/shadow-lines.ts';
import { STACK_CLUSTER } from '../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../harness/index.ts';

// `flotilla shadow report --cluster-name`'s read of a shadow stack's CloudWatch Logs, on moto: the
// log groups of the shadow stack (and not the live stack's beside it), every page of their
// events, the shadow lines among them. moto matches every event to a JSON filter pattern, so the
// filter left to AWS is not what is tested here: the shadow lines are picked again on reading.

let server: Moto;
let logs: CloudWatchLogsClient;
const now = Date.now();
/** The fixture's lines, moved to the last two hours. */
const shifted = LINES.map((l) => ({
  ...l,
  time: new Date(Date.parse(l.time) - Date.parse(LINES[0]?.time ?? '') + now - 2 * 3_600_000).toISOString(),
}));

async function putGroup(logGroupName: string, lines: readonly Record<string, unknown>[]): Promise<void> {
  await logs.send(new CreateLogGroupCommand({ logGroupName }));
  await logs.send(new CreateLogStreamCommand({ logGroupName, logStreamName: 'stream' }));
  await logs.send(
    new PutLogEventsCommand({
      logGroupName,
      logStreamName: 'stream',
      logEvents: lines.map((l) => ({ timestamp: Date.parse(String(l['time'])), message: JSON.stringify(l) })),
    }),
  );
}

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  logs = new CloudWatchLogsClient(awsClientConfig(server));
  const prefix = shadowLogGroupPrefix(STACK_CLUSTER);
  // The shadow's disruption Lambda logs the observations and commands; its provisioner the rest.
  const byDisruption = (l: { decision?: unknown }) => l.decision === 'observe' || l.decision === 'disrupt';
  await putGroup(`${prefix}FlotillaDisruptionLogGroupA1`, shifted.filter(byDisruption));
  await putGroup(
    `${prefix}FlotillaProvisionerLogGroupB2`,
    shifted.filter((l) => !byDisruption(l)),
  );
  // The live stack's group beside it: never read.
  await putGroup(`Flotilla-${STACK_CLUSTER}-FlotillaProvisionerLogGroupC3`, [
    { ...shifted[0], shadow: true, nodePools: { default: { nodes: 1, pricePerHour: 99 } } },
  ]);
});

afterAll(() => logs?.destroy());

describe("a shadow stack's lines from CloudWatch Logs", () => {
  it('reads every shadow line of its log groups and compares them as the file report does', async () => {
    const read = await readShadowLogs({
      clusterName: STACK_CLUSTER,
      region: server.region,
      sinceMs: now - 3 * 3_600_000,
      client: logs,
    });
    expect(read.skipped).toBe(0);
    expect(compareShadow(read.records)).toEqual(compareShadow(shifted));
    expect(compareShadow(read.records).live.dollars).toBeCloseTo(2.85, 6);
  });

  it('says when no log group of a shadow stack is there', async () => {
    await expect(
      readShadowLogs({ clusterName: 'no-such-cluster', region: server.region, sinceMs: 0, client: logs }),
    ).rejects.toThrow(ShadowLogsError);
  });
});
