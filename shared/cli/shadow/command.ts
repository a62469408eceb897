import fs from 'node:fs';
import { DEFAULT_REGION } from '../../adapters/memory/index.ts';
import { compareLines } from '../../usecases/shadow/compare.ts';
import { type LogLines, parseLogLines, shadowLines } from '../../usecases/shadow/lines.ts';
import { type CliIo, type Command, parseCommandArgs, parseSince, stringValue } from '../command.ts';
import { readShadowLogs } from './logs.ts';
import { renderShadowComparison } from './render.ts';

// `flotilla shadow report`: what a shadow stack would have done against what the live autoscaler
// did, priced (shared/usecases/shadow/compare.ts), from the shadow stack's CloudWatch Logs or a
// file of its log lines.

export const SHADOW_USAGE = `Usage: flotilla shadow report --cluster-name <name> [--region <region>] [--since 24h]
       flotilla shadow report --file <log lines>

Compares what a shadow stack (deployed with -c mode=shadow) would have done with what the cluster's
live autoscaler did over the window: the dollars each side's choices cost, pod startup and decision
wait, and the choices that make the difference, largest first. Reads the shadow stack's lines
(shadow: true) from its CloudWatch Logs with your AWS credentials (read-only), or from a file of log
lines (JSON, one per line; a prefix before the JSON is skipped).

  --cluster-name  the cluster the shadow stack was deployed for (log groups FlotillaShadow-<name>-…)
  --region        the stack's region (default: AWS_REGION, else ${DEFAULT_REGION})
  --since         how far back to read, in minutes or hours such as 90m or 24h (default 24h)
  --file          read the lines from this file instead of CloudWatch Logs
  --top           differences to list (default 10)
  --output        text (default) or json

Exit codes: 0 reported, 1 the lines could not be read, 2 bad arguments or no shadow observation.
`;

const SUMMARY = `  shadow     \`flotilla shadow report\`: a shadow stack's choices against the live autoscaler's, in dollars
`;

const OPTIONS = {
  'cluster-name': { type: 'string' },
  region: { type: 'string' },
  since: { type: 'string' },
  file: { type: 'string' },
  top: { type: 'string' },
  output: { type: 'string' },
} as const;

export const shadowCommand: Command = {
  name: 'shadow',
  summary: SUMMARY,
  usage: SHADOW_USAGE,
  run: runShadow,
};

async function runShadow(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(args, OPTIONS, 1);
  const refuse = (problem: string) => {
    io.err(`flotilla shadow: ${problem}\n\n${SHADOW_USAGE}`);
    return 2;
  };
  if ('problem' in parsed) return refuse(parsed.problem);
  if (parsed.positionals[0] !== 'report') return refuse('say what to do: report');
  const output = stringValue(parsed, 'output') ?? 'text';
  if (output !== 'text' && output !== 'json') return refuse(`--output is text or json, got "${output}"`);
  const topText = stringValue(parsed, 'top') ?? '10';
  const top = /^\d+$/.test(topText) ? Number(topText) : undefined;
  if (top === undefined) return refuse(`--top is a whole number, got "${topText}"`);
  const file = stringValue(parsed, 'file');
  const clusterName = stringValue(parsed, 'cluster-name');
  if ((file === undefined) === (clusterName === undefined)) {
    return refuse('give either --file or --cluster-name (the shadow stack’s CloudWatch Logs)');
  }
  const sinceText = stringValue(parsed, 'since') ?? '24h';
  const sinceMs = parseSince(sinceText);
  if (sinceMs === undefined)
    return refuse(`--since is minutes or hours such as 90m or 24h, got "${sinceText}"`);

  let read: LogLines;
  if (file !== undefined) {
    read = parseLogLines(fs.readFileSync(file, 'utf8'));
  } else {
    const region = stringValue(parsed, 'region') ?? process.env['AWS_REGION'] ?? DEFAULT_REGION;
    read = await readShadowLogs({
      clusterName: clusterName ?? '',
      region,
      sinceMs: Date.now() - sinceMs,
      progress: (n) => io.err(`\rread ${n} shadow lines`),
    });
    io.err('\n');
  }
  const lines = shadowLines(read.records);
  if (lines.observations.length === 0) {
    return refuse(
      `no shadow observation in ${read.records.length} lines: the shadow stack's disruption Lambda logs one per pass (decision "observe", shadow: true); give a longer --since or the shadow stack's logs`,
    );
  }
  const comparison = compareLines(lines);
  if (output === 'json') {
    io.out(
      `${JSON.stringify({ ...comparison, unreadableLines: lines.unreadable + read.skipped }, null, 2)}\n`,
    );
  } else {
    io.out(renderShadowComparison(comparison, { top, unreadable: lines.unreadable }));
  }
  return 0;
}
