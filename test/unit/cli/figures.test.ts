import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { small, web } from '../simulator/scenarios.ts';
import { flotilla } from './flotilla.ts';

// Figures the CLI prints that must not mislead, run as a user runs it: prices the catalog only
// assumes are marked (and can be left out), and the plan's reasons state requests exactly and
// speak of DaemonSets only when some would run.

const poolsPath = path.resolve(import.meta.dirname, '../../fixtures/plan/nodepools.yaml');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-figures-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** One pending pod of 1850m cpu, and nothing else: no Node, no DaemonSet. */
const snapshot = path.join(tmp, 'one-pod.yaml');
fs.writeFileSync(
  snapshot,
  `apiVersion: v1
kind: Pod
metadata: { name: api-0, namespace: shop, uid: u-api-0, creationTimestamp: '2025-05-01T08:00:00Z' }
spec:
  containers: [{ name: api, image: api, resources: { requests: { cpu: 1850m, memory: 1Gi } } }]
status: { phase: Pending }
`,
);

interface JsonPlan {
  readonly knownPricesOnly: boolean;
  readonly nodeClaims: readonly {
    readonly instanceTypes: readonly { name: string; priceUsdPerHour: number; priceAssumed?: boolean }[];
  }[];
}

const plan = async (...flags: string[]) => {
  const run = await flotilla(['plan', '--cluster', snapshot, '--nodepools', poolsPath, ...flags]);
  expect(run.err).toBe('');
  expect(run.code).toBe(0);
  return run.out;
};

describe('flotilla plan figures', () => {
  it('states 1850m exactly and names no DaemonSet overhead when none would run', async () => {
    const out = await plan();
    expect(out).toContain(
      '  why: the pods request cpu 1850m, memory 1Gi, pods 1; no DaemonSet would run on it;',
    );
    expect(out).not.toMatch(/cpu 1\.9|DaemonSet overhead/);
  });

  it('marks the candidates whose price the catalog only assumes, and leaves them out with --known-prices', async () => {
    const all = JSON.parse(await plan('--output', 'json')) as JsonPlan;
    const candidates = all.nodeClaims.flatMap((c) => c.instanceTypes);
    const assumed = candidates.filter((t) => t.priceAssumed === true);
    expect(assumed.length).toBeGreaterThan(0);
    expect(all.knownPricesOnly).toBe(false);
    const text = await plan();
    expect(text).toMatch(/ \$\d+\.\d{4}\*[,\n ]/);
    expect(text).toMatch(/^\* assumed price: the bundled catalog has no Spot Advisor estimate/m);

    const known = JSON.parse(await plan('--output', 'json', '--known-prices')) as JsonPlan;
    expect(known.knownPricesOnly).toBe(true);
    expect(known.nodeClaims.flatMap((c) => c.instanceTypes).filter((t) => t.priceAssumed)).toEqual([]);
    const knownText = await plan('--known-prices');
    expect(knownText).not.toMatch(/\$\d+\.\d{4}\*/);
    expect(knownText).toContain('Known prices only: offerings with an assumed price were left out.');
  });
});

describe('flotilla simulate figures', () => {
  // Spot c8i-flex has no Spot Advisor estimate: at the assumed discount it is a shade cheaper than
  // c6a, whose spot price is known.
  const scenario = path.join(tmp, 'assumed.yaml');
  fs.writeFileSync(
    scenario,
    small({ workloads: web(1), duration: '3m' })
      .replace('values: [m6i, c6i]', 'values: [c8i-flex, c6a]')
      .replace('values: [on-demand]', 'values: [spot]'),
  );
  const simulateWith = async (...flags: string[]) => {
    const out = path.join(tmp, `out-${flags.length}`);
    const run = await flotilla(['simulate', scenario, '--out', out, ...flags]);
    expect(run.code).toBe(0);
    return run.out;
  };

  it('marks a launch at an assumed price, and launches at known prices only with --known-prices', async () => {
    const assumed = await simulateWith();
    expect(assumed).toMatch(/^ {2}c8i-flex\.xlarge +0 +1 +1 +\$0\.0623 \*$/m);
    expect(assumed).toContain('  * assumed price: the bundled catalog has no Spot Advisor estimate');
    // The launch decision in the decision log says so too.
    const launches = fs
      .readFileSync(path.join(tmp, 'out-0', 'decisions.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((d) => d['decision'] === 'launch' && d['outcome'] === 'launched');
    const rounded = (price: unknown) => Math.round(Number(price) * 10_000) / 10_000;
    expect(launches.map((d) => [d['instanceType'], rounded(d['pricePerHour']), d['priceAssumed']])).toEqual([
      ['c8i-flex.xlarge', 0.0623, true],
    ]);
    const known = await simulateWith('--known-prices');
    expect(known).toContain('  region us-east-1 (known prices only), ');
    expect(known).toMatch(/^ {2}c6a\.xlarge +0 +1 +1 +\$0\.0627$/m);
    expect(known).not.toContain('assumed price');
    expect(fs.readFileSync(path.join(tmp, 'out-1', 'decisions.jsonl'), 'utf8')).not.toContain('priceAssumed');
  }, 180_000);
});
