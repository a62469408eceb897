import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAD_INPUT_DIR, expectedProblems } from '../../fixtures/bad-input.ts';
import { type FlotillaRun, flotilla } from './flotilla.ts';

// Each finding about input handling, through the `flotilla` command's entry as the binary runs it
// (bin.test.ts covers the process around it): the exit code, one `file:line:column: field:
// problem` line per problem on standard error, nothing on standard output.

const root = path.resolve(import.meta.dirname, '../../..');
const tmp = mkdtempSync(path.join(tmpdir(), 'flotilla-input-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The corpus file's path as the command prints it (relative to where it runs: the repository). */
const corpus = (name: string) => path.relative(root, path.join(BAD_INPUT_DIR, `${name}.yaml`));

const FINDINGS: readonly (readonly [string, string])[] = [
  ['consolidateAfter: 5 minutes', 'consolidate-after-words'],
  ['expireAfter: 30d', 'expire-after-days'],
  ['disruption.expireAfter (the wrong place)', 'expire-after-in-disruption'],
  ['a budget of nodes: "abc"', 'budget-nodes-word'],
  ['a budget of nodes: "200%"', 'budget-nodes-over-100'],
  ['a budget schedule without a duration', 'budget-schedule-without-duration'],
  ['taint: for taints', 'taint-singular'],
  ['consolidateAftr', 'consolidate-after-misspelt'],
  ['resources.request for requests', 'resources-request-singular'],
  ['an interruption naming a NodePool that does not exist', 'interruption-unknown-nodepool'],
  ['a region the catalog lacks', 'region-not-in-catalog'],
  ['several problems in one file, each at its own line', 'four-problems'],
  ['an empty file', 'empty-file'],
];

const DEFAULTS_SCENARIO = `name: defaults
duration: 3m
ec2NodeClasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: { name: default }
    spec:
      role: KarpenterNodeRole-sim
      amiSelectorTerms: [{ alias: al2023@latest }]
      subnetSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
      securityGroupSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: default }
    spec:
      template:
        spec:
          nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
          requirements: [{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }]
workloads:
  - kind: Deployment
    name: web
    replicas: 1
    template:
      spec:
        containers: [{ name: web, resources: { requests: { cpu: 500m } } }]
`;

const BAD_POOLS = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  disruption:
    consolidateAftr: 5m
  template:
    spec:
      nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
      taint: [{ key: a, effect: NoSchedule }]
      requirements: [{ key: karpenter.sh/capacity-type, operator: In, values: [spot] }]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-sim
  amiSelectorTerms: [{ alias: al2023@latest }]
  subnetSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
  securityGroupSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
`;

const runs = new Map<string, Promise<FlotillaRun>>();

beforeAll(() => {
  // Start every run at once; each test awaits its own.
  for (const [, name] of FINDINGS)
    runs.set(name, flotilla(['simulate', corpus(name), '--out', path.join(tmp, name)]));
  const defaults = path.join(tmp, 'defaults.yaml');
  writeFileSync(defaults, DEFAULTS_SCENARIO);
  runs.set('defaults', flotilla(['simulate', defaults, '--out', path.join(tmp, 'defaults-out')]));
  runs.set('missing', flotilla(['simulate', 'no-such-scenario.yaml', '--out', path.join(tmp, 'missing')]));
  const pools = path.join(tmp, 'bad-pools.yaml');
  writeFileSync(pools, BAD_POOLS);
  runs.set('plan', flotilla(['plan', '--cluster', 'test/fixtures/plan/cluster.yaml', '--nodepools', pools]));
}, 60_000);

const result = async (name: string): Promise<FlotillaRun> => {
  const run = runs.get(name);
  if (run === undefined) throw new Error(`no run named ${name}`);
  return run;
};

describe('flotilla refuses bad input, every problem at once, each at its line and column', () => {
  it.each(FINDINGS)(
    '%s (%s.yaml): exit 2 and the declared problems',
    async (_finding, name) => {
      const { code, out, err } = await result(name);
      const file = corpus(name);
      const expected = expectedProblems(
        readFileSync(file.startsWith('/') ? file : path.join(root, file), 'utf8'),
      );
      expect(expected.length).toBeGreaterThan(0);
      expect(code).toBe(2);
      expect(out).toBe('');
      expect(err).toBe(expected.map((p) => `${file}:${p}\n`).join(''));
    },
    120_000,
  );

  it('runs a scenario that leaves bootDelay and sampleInterval out with 45s and 30s', async () => {
    const { code, out } = await result('defaults');
    expect(code).toBe(0);
    // 3 minutes sampled every 30 s (not every 30 ms), and a pod that waited for a 45 s boot.
    const samples = Number(/(\d+) samples/.exec(out)?.[1]);
    expect(samples).toBeGreaterThanOrEqual(6);
    expect(samples).toBeLessThanOrEqual(8);
    const p50 = Number(/Pod wait \(1 pods?, creation to binding\): p50 ([\d.]+)s/.exec(out)?.[1]);
    expect(p50).toBeGreaterThanOrEqual(45);
  }, 120_000);

  it('says a scenario file is missing, without a made-up position', async () => {
    const { code, out, err } = await result('missing');
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toBe('no-such-scenario.yaml: cannot read the scenario: no such file\n');
  }, 120_000);

  it('checks plan input with the same validator: every problem of the NodePools file at its line', async () => {
    const { code, out, err } = await result('plan');
    const file = path.join(tmp, 'bad-pools.yaml');
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toBe(
      [
        `${file}:7:5: NodePool "general": spec.disruption.consolidateAftr: unknown field "consolidateAftr"; did you mean "consolidateAfter"?`,
        `${file}:11:7: NodePool "general": spec.template.spec.taint: unknown field "taint"; did you mean "taints"?`,
        '',
      ].join('\n'),
    );
  }, 120_000);
});
