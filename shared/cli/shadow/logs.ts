import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { makeCloudWatchShadowLines } from '../../adapters/aws/shadow-lines.ts';
import { FlotillaError } from '../../core/index.ts';
import { ShadowLinesError } from '../../ports/log-lines.ts';
import { type LogLines, parseLogLines, SHADOW_DECISION_KINDS } from '../../usecases/shadow/lines.ts';
import { logGroupsNamed } from '../explain/logs.ts';

// The lines a shadow stack logged, from its CloudWatch Logs (the caller's own credentials;
// DescribeLogGroups and FilterLogEvents only), with the shadow-report Lambda's reader; a file of
// lines is read with parseLogLines (shared/usecases/shadow/lines.ts).

/** A shadow report's lines could not be had. */
export class ShadowLogsError extends FlotillaError {
  readonly code = 'ShadowLogsError';
}

/** The prefix of the log groups of a cluster's shadow stack (as the CDK app names the stack). */
export function shadowLogGroupPrefix(clusterName: string): string {
  return `FlotillaShadow-${clusterName.replaceAll('_', '-')}-`;
}

export interface ShadowLogsOptions {
  readonly clusterName: string;
  readonly region: string;
  readonly sinceMs: number;
  /** @default a client for `region` with the default credential chain */
  readonly client?: CloudWatchLogsClient;
  /** Called as pages arrive (a day of a large cluster's lines takes a while). */
  readonly progress?: (lines: number) => void;
}

/** The shadow lines the comparison reads, of the cluster's shadow stack since `sinceMs`. */
export async function readShadowLogs(options: ShadowLogsOptions): Promise<LogLines> {
  const client = options.client ?? new CloudWatchLogsClient({ region: options.region, maxAttempts: 5 });
  const prefix = shadowLogGroupPrefix(options.clusterName);
  try {
    let groups: string[];
    try {
      groups = await logGroupsNamed(client, prefix);
    } catch (error) {
      throw new ShadowLogsError(`CloudWatch Logs refused: ${firstLine(error)}`, { cause: error });
    }
    if (groups.length === 0) {
      throw new ShadowLogsError(
        `no log group starts with ${prefix} in ${options.region}: deploy the shadow stack (-c mode=shadow) or pass --cluster-name and --region of it`,
      );
    }
    const texts = await makeCloudWatchShadowLines({ client, logGroups: groups }).read(
      { fromMs: options.sinceMs, decisions: SHADOW_DECISION_KINDS },
      options.progress,
    );
    return parseLogLines(texts.join('\n'));
  } catch (error) {
    if (error instanceof ShadowLinesError) throw new ShadowLogsError(error.message, { cause: error });
    throw error;
  } finally {
    if (options.client === undefined) client.destroy();
  }
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message.split('\n')[0] : String(error));
