import { CloudWatchLogsClient, FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { FlotillaError } from '../../core/index.ts';
import { logGroupsNamed } from '../explain/logs.ts';

// The lines a shadow stack logged, from its CloudWatch Logs (the caller's own credentials;
// DescribeLogGroups and FilterLogEvents only) or from a file of log lines, each parsed from its
// first `{` (CloudWatch exports and `aws logs tail` put a prefix before the JSON).

/** A shadow report's lines could not be had. */
export class ShadowLogsError extends FlotillaError {
  readonly code = 'ShadowLogsError';
}

export interface ReadLines {
  readonly records: Record<string, unknown>[];
  /** Lines that held no JSON object. */
  readonly skipped: number;
}

/** The JSON objects of a text of log lines. */
export function parseLogLines(text: string): ReadLines {
  const records: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const start = line.indexOf('{');
    try {
      const parsed: unknown = start === -1 ? undefined : JSON.parse(line.slice(start));
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        records.push(parsed as Record<string, unknown>);
        continue;
      }
    } catch {
      // counted below
    }
    skipped += 1;
  }
  return { records, skipped };
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

/** Every `shadow: true` line of the cluster's shadow stack since `sinceMs`. */
export async function readShadowLogs(options: ShadowLogsOptions): Promise<ReadLines> {
  const client = options.client ?? new CloudWatchLogsClient({ region: options.region, maxAttempts: 5 });
  const prefix = shadowLogGroupPrefix(options.clusterName);
  try {
    const groups = await logGroupsNamed(client, prefix);
    if (groups.length === 0) {
      throw new ShadowLogsError(
        `no log group starts with ${prefix} in ${options.region}: deploy the shadow stack (-c mode=shadow) or pass --cluster-name and --region of it`,
      );
    }
    const texts: string[] = [];
    for (const group of groups) {
      let next: string | undefined;
      do {
        const page = await client.send(
          new FilterLogEventsCommand({
            logGroupName: group,
            startTime: options.sinceMs,
            filterPattern: '{ $.shadow IS TRUE }',
            ...(next === undefined ? {} : { nextToken: next }),
          }),
        );
        for (const e of page.events ?? []) if (e.message !== undefined) texts.push(e.message);
        options.progress?.(texts.length);
        next = page.nextToken;
      } while (next !== undefined);
    }
    return parseLogLines(texts.join('\n'));
  } catch (error) {
    if (error instanceof ShadowLogsError) throw error;
    throw new ShadowLogsError(
      `CloudWatch Logs refused: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    if (options.client === undefined) client.destroy();
  }
}
