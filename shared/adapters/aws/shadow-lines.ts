import {
  type CloudWatchLogsClient,
  FilterLogEventsCommand,
  type FilterLogEventsCommandOutput,
} from '@aws-sdk/client-cloudwatch-logs';
import { type ShadowLineQuery, type ShadowLineSource, ShadowLinesError } from '../../ports/log-lines.ts';

// A shadow stack's lines from its Lambdas' CloudWatch Logs groups (FilterLogEvents only: the
// shadow-report Lambda's role may call nothing else there, and `flotilla shadow report` needs no
// more of its caller). The filter pattern leaves every other line in CloudWatch, so a day of a
// large cluster's logs is read as the few megabytes the comparison needs.

/** CloudWatch's JSON filter pattern for `shadow: true` lines whose `decision` is one of `decisions`. */
export function shadowLinePattern(decisions: readonly string[]): string {
  for (const kind of decisions) {
    if (!/^[A-Za-z]+$/.test(kind)) throw new Error(`decision kind "${kind}" cannot go in a filter pattern`);
  }
  const kinds = decisions.map((kind) => `$.decision = "${kind}"`).join(' || ');
  return decisions.length === 0 ? '{ $.shadow IS TRUE }' : `{ $.shadow IS TRUE && (${kinds}) }`;
}

export interface CloudWatchShadowLinesOptions {
  readonly client: CloudWatchLogsClient;
  /** The log groups of the shadow stack's Lambdas that decide (its provisioner and disruption). */
  readonly logGroups: readonly string[];
}

/** Reads the query's lines from each group in turn, every page, as CloudWatch returns them (each line's text). */
export function makeCloudWatchShadowLines(options: CloudWatchShadowLinesOptions): ShadowLineSource {
  return {
    async read(query: ShadowLineQuery, progress?: (lines: number) => void) {
      const texts: string[] = [];
      for (const group of options.logGroups) {
        let next: string | undefined;
        do {
          let page: FilterLogEventsCommandOutput;
          try {
            page = await options.client.send(
              new FilterLogEventsCommand({
                logGroupName: group,
                startTime: query.fromMs,
                // FilterLogEvents' end is inclusive; the query's is not.
                ...(query.toMs === undefined ? {} : { endTime: query.toMs - 1 }),
                filterPattern: shadowLinePattern(query.decisions),
                ...(next === undefined ? {} : { nextToken: next }),
              }),
            );
          } catch (error) {
            const said = error instanceof Error ? error.message.split('\n')[0] : String(error);
            throw new ShadowLinesError(`CloudWatch Logs failed to filter ${group}: ${said}`, {
              cause: error,
            });
          }
          for (const e of page.events ?? []) if (e.message !== undefined) texts.push(e.message);
          progress?.(texts.length);
          next = page.nextToken;
        } while (next !== undefined);
      }
      return texts;
    },
  };
}
