import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { defaultPoolYaml } from '../simulator/scenarios.ts';
import { type FlotillaRun, flotilla } from './flotilla.ts';

// What `flotilla simulate` tells a user about a run whose budget holds consolidation for hours:
// the hold in one line with its reason, length and passes, idle capacity and its $/hour, each
// NodePool, the evictions, and every time in UTC with the date, as the run crosses midnight.

const dir = mkdtempSync(path.join(tmpdir(), 'flotilla-simulate-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Seven pods of 1 cpu on an xlarge and a 2xlarge, scaled to two at 23:10: consolidation would
 * move them onto one node, but the NodePool's budget allows no Underutilized disruption from 23:00
 * for two hours, so it waits until 01:00 the next day.
 */
const scenario = `name: budget-hold
start: 2026-01-01T23:00:00Z
duration: 2h30m
bootDelay: 30s
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge, 2xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  `      disruption:
        consolidationPolicy: WhenEmptyOrUnderutilized
        consolidateAfter: 1m
        budgets:
          - { nodes: "0", reasons: [Underutilized], schedule: "0 23 * * *", duration: 2h }
`,
)}workloads:
  - kind: Deployment
    name: web
    replicas: 7
    scale: [{ at: 10m, replicas: 2 }]
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
`;

describe('flotilla simulate: the report of a run a budget holds', () => {
  let run: FlotillaRun;
  const out = path.join(dir, 'out');
  beforeAll(async () => {
    const file = path.join(dir, 'budget-hold.yaml');
    writeFileSync(file, scenario);
    run = await flotilla(['simulate', file, '--out', out]);
  }, 120_000);

  it('exits 0 and says that times are UTC', () => {
    expect(run.code).toBe(0);
    expect(run.out).toContain('\n  times below are UTC, as budget schedules are\n');
  });

  it('tells the budget hold once, with its NodePool, reason, length, passes and span in UTC with dates', () => {
    const line =
      /^ {2}budget default\/Underutilized held Underutilized disruptions for (\d)h(\d\d)m over (\d+) passes \(2026-01-01 23:0\d to 2026-01-02 01:00\)$/m.exec(
        run.out,
      );
    expect(line).not.toBeNull();
    const minutes = Number(line?.[1]) * 60 + Number(line?.[2]);
    // From the first pass after the scale-down to 01:00, passes every 30 seconds.
    expect(minutes).toBeGreaterThanOrEqual(110);
    expect(minutes).toBeLessThanOrEqual(120);
    expect(Number(line?.[3])).toBeGreaterThanOrEqual(2 * minutes - 2);
    expect(run.out.match(/default\/Underutilized/g)).toHaveLength(1);
    // Consolidation acts once the budget's window ends, and its times carry the date.
    expect(run.out).toMatch(/^ {2}Underutilized {6}1 {2}2026-01-02 01:0\d {2}2026-01-02 01:0\d$/m);
  });

  it('gives idle capacity, the NodePool breakdown and the evictions', () => {
    expect(run.out).toMatch(
      /^Idle capacity \(\$\/hour of the nodes no pod requests\): avg \$0\.\d{4} {2}peak \$0\.\d{4} at 2026-01-0\d \d\d:\d\d {2}idle share \d+% of the spend, \$0\.\d{4} over the run$/m,
    );
    expect(run.out).toMatch(
      /^ {2}default +2 +0 +7 +0 +2 +\$0\.\d{4} +\$0\.5760 +\$0\.\d{4} +Underutilized 1$/m,
    );
    expect(run.out).toMatch(/^Evictions: 2 pods \(Underutilized 2\)$/m);
    const html = readFileSync(path.join(out, 'report.html'), 'utf8');
    for (const id of ['chart-idle', 'chart-evictions']) expect(html).toContain(`<svg id="${id}"`);
    expect(html).toContain('>2026-01-02<');
  });

  it('figures idle $/hour from what the pods request of each node', () => {
    const record = JSON.parse(readFileSync(path.join(out, 'record.json'), 'utf8')) as SimulationRecord;
    // After the consolidation one xlarge runs the two pods of 1 cpu: it is idle for the cpu they
    // leave (cpu is the busier resource), at its price.
    const last = record.samples[record.samples.length - 1];
    const pool = last?.nodePools?.['default'];
    expect(pool).toMatchObject({ nodes: 1, costPerHour: 0.192, cpuMillisRequested: 2000 });
    const cpuUsed = 2000 / (pool?.cpuMillisAllocatable ?? 1);
    expect(pool?.memoryBytesRequested).toBe(0);
    expect(pool?.idleCostPerHour).toBeCloseTo(0.192 * (1 - cpuUsed), 4);
    expect(last?.idleCostPerHour).toBe(pool?.idleCostPerHour);
  });
});
