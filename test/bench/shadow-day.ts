// A shadow day's comparison at scale: `npm run bench:shadow` (5,000 nodes) or
// `npm run bench:shadow -- 2000 5000`. Builds the lines a shadow stack of a busy cluster logs in two
// UTC days (the day compared and the day before, which the shadow-report Lambda reads too), as its
// Lambdas write them (an observation per 30-second disruption pass, with 20
// NodePools, the pods started since the last pass and the NodeClaims created and deleted; a plan
// line per provisioning run every 20 seconds; launches and disruption proposals), then, in a fresh
// process per size, parses and compares them as the shadow-report Lambda does (day.ts), and prints
// the bytes it reads, the time and the peak memory (RSS).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compareLines } from '../../shared/usecases/shadow/compare.ts';
import { compareDecisionOf, utcDay } from '../../shared/usecases/shadow/day.ts';
import { parseLogLines, shadowLines } from '../../shared/usecases/shadow/lines.ts';
import { cacheDir } from '../harness/paths.ts';

const DAY = '2026-12-02';
const DAY_BEFORE = '2026-12-01';
const POOLS = 20;

/** A day of a shadow stack's lines for a cluster of `nodes` nodes (about 20 pods a node). */
function dayOfLines(nodes: number, day: string): string {
  const start = Date.parse(`${day}T00:00:00Z`);
  const iso = (ms: number) => new Date(ms).toISOString();
  const lines: string[] = [];
  // A pod churn of a fifth of the pods a day; a NodeClaim churn of a tenth of the nodes a day.
  const startsPerPass = Math.round((nodes * 20 * 0.2) / 2880);
  const claimChurnPerPass = (nodes * 0.1) / 2880;
  let claim = 0;
  let churn = 0;
  for (let pass = 0; pass < 2880; pass += 1) {
    const at = start + pass * 30_000;
    churn += claimChurnPerPass;
    const changes = (verb: string) => {
      const out = [];
      for (; churn >= 1; churn -= 1) {
        claim += 1;
        out.push({
          nodeClaim: `pool-${claim % POOLS}-${day}-${claim.toString(36)}`,
          nodePool: `pool-${claim % POOLS}`,
          at: iso(at - 10_000),
          instanceType: 'm6i.2xlarge',
          zone: 'us-east-1a',
          capacityType: 'on-demand',
          pricePerHour: 0.384,
        });
      }
      return out.length === 0
        ? undefined
        : { count: out.length, pricePerHour: 0.384 * out.length, nodeClaims: out, verb };
    };
    const nodePools = Object.fromEntries(
      Array.from({ length: POOLS }, (_, p) => [
        `pool-${p}`,
        {
          nodes: nodes / POOLS,
          cpu: (nodes / POOLS) * 8,
          memoryBytes: (nodes / POOLS) * 34_359_738_368,
          limits: { cpu: 100_000 },
          pricePerHour: (nodes / POOLS) * 0.384,
          idlePricePerHour: (nodes / POOLS) * 0.05,
          cpuUtilization: 71.3,
          memoryUtilization: 54.2,
        },
      ]),
    );
    const created = changes('created');
    lines.push(
      JSON.stringify({
        level: 'info',
        time: iso(at),
        message: 'cluster observed',
        lambda: 'disruption',
        cluster: 'prod',
        shadow: true,
        decision: 'observe',
        reason: 'disruption pass',
        nodePools,
        podStartupSeconds: Array.from({ length: startsPerPass }, (_, i) => 5 + ((pass * 7 + i * 13) % 90)),
        ...(created === undefined ? {} : { nodeClaimsCreated: created }),
        since: iso(at - 90_000),
        until: iso(at - 60_000),
      }),
    );
    // The command Flotilla would start first, proposed every pass until it changes (every 30 passes).
    const command = Math.floor(pass / 30);
    lines.push(
      JSON.stringify({
        level: 'info',
        time: iso(at + 2_000),
        message: 'disruption command',
        lambda: 'disruption',
        cluster: 'prod',
        shadow: true,
        decision: 'disrupt',
        reason: 'Underutilized',
        method: 'multi-node',
        action: 'replace',
        outcome: 'started',
        commandId: `cmd-${command}`,
        candidates: Array.from({ length: 5 }, (_, c) => ({
          nodeClaim: `pool-${command % POOLS}-${day}-c${command}-${c}`,
          node: `ip-10-0-${command % 250}-${c}`,
          nodePool: `pool-${command % POOLS}`,
          instanceType: 'm6i.2xlarge',
          capacityType: 'on-demand',
          pricePerHour: 0.384,
        })),
        replacements: [
          {
            nodeClaim: `r-${command}`,
            nodePool: `pool-${command % POOLS}`,
            instanceTypes: ['m6i.4xlarge'],
            pricePerHour: 0.768,
          },
        ],
        pricePerHourBefore: 1.92,
        pricePerHourAfter: 0.768,
      }),
    );
  }
  // A provisioning run every 20 seconds; one in six plans a launch.
  for (let run = 0; run < 4320; run += 1) {
    const at = start + run * 20_000 + 5_000;
    const launches = run % 6 === 0;
    lines.push(
      JSON.stringify({
        level: 'info',
        time: iso(at),
        message: 'provisioning planned',
        lambda: 'provisioner',
        cluster: 'prod',
        shadow: true,
        decision: 'plan',
        reason: 'pending pods',
        nodeClaims: launches ? 1 : 0,
        queued: launches ? 12 : 0,
        unschedulable: 0,
        oldestPendingSeconds: launches ? 4 : 0,
        planMs: 120,
      }),
    );
    if (launches) {
      lines.push(
        JSON.stringify({
          level: 'info',
          time: iso(at + 500),
          message: 'launch decided',
          lambda: 'provisioner',
          cluster: 'prod',
          shadow: true,
          decision: 'launch',
          reason: 'provisioning',
          outcome: 'launched',
          nodePool: `pool-${run % POOLS}`,
          nodeClaim: `pool-${run % POOLS}-s${run}`,
          podCount: 12,
          pods: Array.from({ length: 10 }, (_, i) => `apps/web-${day}-${run}-${i}`),
          instanceTypes: ['m6i.2xlarge', 'm6a.2xlarge', 'm7i.2xlarge'],
          instanceTypeCount: 60,
          capacityType: 'on-demand',
          instanceType: 'm6a.2xlarge',
          zone: 'us-east-1b',
          pricePerHour: 0.3456,
        }),
      );
    }
  }
  return lines.join('\n');
}

interface CaseResult {
  readonly nodes: number;
  readonly lines: number;
  readonly megabytes: number;
  readonly parseSeconds: number;
  readonly compareSeconds: number;
  readonly peakRssMiB: number;
  readonly differences: number;
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === '--case') {
  const [file = '', nodes = '0'] = rest;
  const { readFileSync } = await import('node:fs');
  const text = readFileSync(file, 'utf8');
  const t0 = performance.now();
  const read = parseLogLines(text);
  const lines = shadowLines(read.records);
  const t1 = performance.now();
  const day = utcDay(DAY);
  if (day === undefined) throw new Error(`bad day ${DAY}`);
  const decision = compareDecisionOf(day, compareLines(lines, day), {
    read: read.records.length,
    unreadable: lines.unreadable,
  });
  const t2 = performance.now();
  const result: CaseResult = {
    nodes: Number(nodes),
    lines: read.records.length,
    megabytes: Math.round((Buffer.byteLength(text) / 1e6) * 10) / 10,
    parseSeconds: Math.round(t1 - t0) / 1000,
    compareSeconds: Math.round(t2 - t1) / 1000,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    differences: decision.differenceCount ?? 0,
  };
  console.log(JSON.stringify(result));
} else {
  const sizes = [mode, ...rest].filter((s): s is string => s !== undefined).map(Number);
  const script = fileURLToPath(import.meta.url);
  console.log(`shadow day benchmark: node ${process.version}, one fresh process per size`);
  for (const nodes of sizes.length === 0 ? [5000] : sizes) {
    const file = join(cacheDir, `shadow-day-${nodes}.log`);
    writeFileSync(file, `${dayOfLines(nodes, DAY_BEFORE)}\n${dayOfLines(nodes, DAY)}`);
    const out = execFileSync(process.execPath, ['--import', 'tsx', script, '--case', file, String(nodes)], {
      encoding: 'utf8',
    });
    const r = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as CaseResult;
    console.log(
      `${r.nodes} nodes: ${r.lines} lines, ${r.megabytes} MB read; parse ${r.parseSeconds} s, compare ${r.compareSeconds} s; peak RSS ${r.peakRssMiB} MiB; ${r.differences} differences`,
    );
  }
}
