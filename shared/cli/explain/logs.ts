import {
  CloudWatchLogsClient,
  DescribeLogGroupsCommand,
  FilterLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';

// The last decisions about a pod or node, from the stack's CloudWatch Logs, with the caller's own
// AWS credentials (read-only calls: DescribeLogGroups and FilterLogEvents). The stack of a cluster
// is `Flotilla-<cluster>` (underscores become '-', as the CDK app names it), and the log groups
// CloudFormation names for its Lambdas start with the stack name.

export type DecisionLookup =
  | { readonly kind: 'skipped'; readonly why: string }
  | {
      readonly kind: 'found';
      /** One line per decision, oldest first: time, Lambda, decision, reason. */
      readonly lines: readonly string[];
      readonly groups: number;
      readonly sinceMs: number;
    };

/** The prefix of the log groups of a cluster's stack. */
export function logGroupPrefix(clusterName: string): string {
  return `Flotilla-${clusterName.replaceAll('_', '-')}-`;
}

export interface DecisionLookupOptions {
  readonly clusterName: string;
  readonly region: string;
  /** The pod (`namespace/name` is searched as its name) or node name to look for. */
  readonly term: string;
  readonly sinceMs: number;
  /** At most this many lines, the newest. @default 10 */
  readonly limit?: number;
  /** @default a client for `region` with the default credential chain */
  readonly client?: CloudWatchLogsClient;
}

/**
 * Looks up the decisions that name `term`. Without credentials, or when AWS refuses, the lookup is
 * skipped with one line saying why: the explanation stands without it.
 */
export async function lastDecisions(options: DecisionLookupOptions): Promise<DecisionLookup> {
  const client = options.client ?? new CloudWatchLogsClient({ region: options.region, maxAttempts: 2 });
  try {
    await client.config.credentials();
  } catch (error) {
    return {
      kind: 'skipped',
      why: `no AWS credentials (${firstLine(error)}); set AWS_PROFILE or run aws sso login`,
    };
  }
  const prefix = logGroupPrefix(options.clusterName);
  try {
    const groups = await logGroupsNamed(client, prefix, 50);
    if (groups.length === 0) {
      return {
        kind: 'skipped',
        why: `no log group starts with ${prefix} in ${options.region}; pass --cluster-name and --region of the stack`,
      };
    }
    const found: { time: number; text: string }[] = [];
    await Promise.all(
      groups.map(async (group) => {
        const out = await client.send(
          new FilterLogEventsCommand({
            logGroupName: group,
            startTime: options.sinceMs,
            filterPattern: `"${options.term.replaceAll('"', '')}"`,
            limit: 100,
          }),
        );
        for (const e of out.events ?? []) {
          const text = describeLine(group, e.message ?? '');
          if (text !== undefined) found.push({ time: e.timestamp ?? 0, text });
        }
      }),
    );
    found.sort((a, b) => a.time - b.time);
    return {
      kind: 'found',
      lines: found.slice(-(options.limit ?? 10)).map((f) => f.text),
      groups: groups.length,
      sinceMs: options.sinceMs,
    };
  } catch (error) {
    return { kind: 'skipped', why: `CloudWatch Logs refused: ${firstLine(error)}` };
  } finally {
    if (options.client === undefined) client.destroy();
  }
}

/** A decision line as `time  lambda  decision  reason`; undefined for a line that is no decision. */
export function describeLine(group: string, message: string): string | undefined {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(message.slice(message.indexOf('{'))) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const decision = parsed['decision'];
  if (typeof decision !== 'string') return undefined;
  const lambda = /Flotilla-.*?-Flotilla([A-Za-z]+?)LogGroup/.exec(group)?.[1] ?? group;
  const reason = typeof parsed['reason'] === 'string' ? parsed['reason'] : '';
  return `${String(parsed['time'] ?? '')}  ${lambda}  ${decision}  ${reason}`.trim();
}

const firstLine = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';

/** The names of the log groups starting with `prefix`, page after page, `max` at most. */
export async function logGroupsNamed(
  client: CloudWatchLogsClient,
  prefix: string,
  max = Number.POSITIVE_INFINITY,
): Promise<string[]> {
  const groups: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new DescribeLogGroupsCommand({
        logGroupNamePrefix: prefix,
        ...(token === undefined ? {} : { nextToken: token }),
      }),
    );
    for (const g of page.logGroups ?? []) if (g.logGroupName !== undefined) groups.push(g.logGroupName);
    token = page.nextToken;
  } while (token !== undefined && groups.length < max);
  return groups;
}
