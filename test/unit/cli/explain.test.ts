import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTarget } from '../../../shared/cli/explain/command.ts';
import { describeLine, lastDecisions, logGroupPrefix } from '../../../shared/cli/explain/logs.ts';
import { explainInWorld } from '../../../shared/cli/explain/simulated.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { assumedSpotReplacement, defaultPoolYaml, web } from '../simulator/scenarios.ts';
import { flotilla } from './flotilla.ts';

// `flotilla explain`'s command line: its arguments, its exit codes, what it says when the API
// server cannot be reached, and `flotilla simulate --explain` on a scenario.

const dir = mkdtempSync(path.join(tmpdir(), 'flotilla-explain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const examples = path.resolve(import.meta.dirname, '../../../examples');

/** `flotilla <args>` through the command's entry, in this process. */
const run = (...args: string[]) => flotilla(args);

/** A kubeconfig whose only context points at a port nothing listens on. */
function deadKubeconfig(): string {
  const file = path.join(dir, 'dead.kubeconfig');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
  - name: arn:aws:eks:us-east-1:111122223333:cluster/prod_east
    cluster: { server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true }
users:
  - name: u
    user: { token: t }
contexts:
  - name: prod
    context: { cluster: 'arn:aws:eks:us-east-1:111122223333:cluster/prod_east', user: u }
current-context: prod
`,
  );
  return file;
}

describe('flotilla explain arguments', () => {
  it.each([
    [[], 'say what to explain: pod <namespace>/<name> or node <name>'],
    [['pod'], 'name the pod'],
    [['pod', 'web-0'], 'name the pod as <namespace>/<name>, e.g. default/web-0, got "web-0"'],
    [['pod', '/web'], 'name the pod as <namespace>/<name>, e.g. default/web-0, got "/web"'],
    [['deployment', 'x'], 'explain pod or node, not "deployment"'],
    [['node', 'a', 'b'], 'one node at a time, got a b'],
  ])('%j: %s', (args, problem) => {
    expect(parseTarget(args)).toEqual({ problem });
  });

  it('parses a pod and a node', () => {
    expect(parseTarget(['pod', 'team-a/web-0'])).toEqual({ kind: 'pod', namespace: 'team-a', name: 'web-0' });
    expect(parseTarget(['node', 'ip-10-0-0-1.ec2.internal'])).toEqual({
      kind: 'node',
      name: 'ip-10-0-0-1.ec2.internal',
    });
  });

  it.each([
    [['explain'], 'say what to explain'],
    [['explain', 'pod', 'web-0'], 'name the pod as <namespace>/<name>'],
    [['explain', 'node', 'n', '--output', 'yaml'], '--output is text or json, got "yaml"'],
    [
      ['explain', 'node', 'n', '--max-cost-per-hour', '$50'],
      '--max-cost-per-hour "$50" is not a number of US dollars per hour, such as 50 or 12.5',
    ],
    [['explain', 'node', 'n', '--since', '2d'], '--since is minutes or hours such as 30m or 6h, got "2d"'],
    [
      ['explain', 'node', 'n', '--kube-scheduler-scoring', 'Spread'],
      '--kube-scheduler-scoring is LeastAllocated or MostAllocated, got "Spread"',
    ],
    [['explain', 'node', 'n', '--kubeconfig', '/nonexistent/kubeconfig'], 'cannot load the kubeconfig'],
    // A strategy it knows passes the checks of the arguments; the kubeconfig is what stops it.
    [
      [
        'explain',
        'node',
        'n',
        '--kube-scheduler-scoring',
        'MostAllocated',
        '--kubeconfig',
        '/nonexistent/kubeconfig',
      ],
      'cannot load the kubeconfig',
    ],
    [['explain', 'node', 'n', '--frob'], 'unknown option --frob'],
  ])('%j exits 2 with the usage', async (args, problem) => {
    const result = await run(...args);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`flotilla explain: ${problem}`);
    expect(result.err).toContain('Usage: flotilla explain pod <namespace>/<name> [options]');
    expect(result.out).toBe('');
  });

  it('refuses a context the kubeconfig does not have, naming those it has', async () => {
    const result = await run(
      'explain',
      'node',
      'n',
      '--kubeconfig',
      deadKubeconfig(),
      '--context',
      'staging',
    );
    expect(result.code).toBe(2);
    expect(result.err).toContain('flotilla explain: no context "staging" in the kubeconfig; it has prod');
  });

  it('exits 1 and says what to check when the API server cannot be reached', async () => {
    const result = await run(
      'explain',
      'node',
      'n',
      '--kubeconfig',
      deadKubeconfig(),
      '--region',
      'us-east-1',
    );
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^flotilla explain: cannot read the cluster at https:\/\/127\.0\.0\.1:1: /);
    expect(result.err).toContain(
      'Check that the API server is reachable with this kubeconfig and context (kubectl get nodes)',
    );
    expect(result.out).toBe('');
  }, 60_000);

  it('prints its help', async () => {
    const result = await run('explain', '--help');
    expect(result.code).toBe(0);
    expect(result.out).toContain('Exit codes: 0 explained, 1 a failure while running');
  });
});

describe('the last decisions from CloudWatch Logs', () => {
  it('are skipped in one line, saying what to do, when there are no AWS credentials', async () => {
    // The default chain found nothing: no call goes out.
    const client = new CloudWatchLogsClient({
      region: 'us-east-1',
      credentials: async () => {
        throw new Error('Could not load credentials from any providers');
      },
    });
    const found = await lastDecisions({
      clusterName: 'prod',
      region: 'us-east-1',
      term: 'web-0',
      sinceMs: 0,
      client,
    });
    expect(found).toEqual({
      kind: 'skipped',
      why: 'no AWS credentials (Could not load credentials from any providers); set AWS_PROFILE or run aws sso login',
    });
  });

  it('looks in the log groups of the stack Flotilla-<cluster>', () => {
    expect(logGroupPrefix('prod_east')).toBe('Flotilla-prod-east-');
  });

  it('shows a decision line as time, Lambda, decision and reason, and skips other lines', () => {
    const group = 'Flotilla-prod-FlotillaProvisionerLogGroupA1B2C3-xyz';
    expect(
      describeLine(
        group,
        '{"level":"info","time":"2026-01-01T00:00:00.000Z","message":"unschedulable pods","decision":"unschedulable","reason":"limits"}',
      ),
    ).toBe('2026-01-01T00:00:00.000Z  Provisioner  unschedulable  limits');
    expect(describeLine(group, '{"level":"info","message":"batch closed"}')).toBeUndefined();
    expect(describeLine(group, 'START RequestId: 1')).toBeUndefined();
  });
});

/** `flotilla simulate <file> --out <dir>/<out> <args>`, run as a user runs it. */
const simulateBin = (file: string, out: string, ...args: string[]) =>
  flotilla(['simulate', file, '--out', path.join(dir, out), ...args]);

describe('flotilla simulate --explain', () => {
  it('explains a node of the run at its end, after the summary', async () => {
    const result = await run(
      'simulate',
      path.join(examples, 'spot-storm.yaml'),
      '--out',
      path.join(dir, 'sim'),
      '--explain',
      'node',
      'no-such-node',
    );
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/^Flotilla simulation "spot-storm"/);
    expect(result.out).toContain('no Node or NodeClaim is named no-such-node');
  }, 60_000);

  it('marks a price the catalog only assumes with *, and says what * means', async () => {
    // The run ends before the first disruption pass: the node is still there to explain.
    const file = path.join(dir, 'assumed.yaml');
    writeFileSync(file, assumedSpotReplacement('20s'));
    const explain = (...more: string[]) =>
      simulateBin(file, `assumed-${more.length}`, ...more, '--explain', 'node', 'big');
    const [assumed, known] = await Promise.all([explain(), explain('--known-prices')]);
    expect(assumed.code).toBe(0);
    const text = assumed.out.slice(assumed.out.indexOf('\nnode '));
    expect(text).toMatch(
      /\n {2}- disruption acts on the node next: \S+ \(Underutilized\) would replace nodeClaims big: \$0\.3748\/h → \$0\.0656\/h\*\n\* assumed price: the bundled catalog has no Spot Advisor estimate for the type \(spot at its default 65% discount\) or no on-demand price for the region \(another region's\)\n$/,
    );
    // Without the assumed offerings the replacement is an on-demand c8i.xlarge, at a known price.
    expect(known.code).toBe(0);
    const knownText = known.out.slice(known.out.indexOf('\nnode '));
    expect(knownText).toContain('would replace nodeClaims big: $0.3748/h → $0.1874/h\n');
    expect(knownText).not.toContain('*');
  }, 60_000);

  it('marks the launch prices of a pod the catalog only assumes, and says what * means', async () => {
    // The pod comes as the run ends: Flotilla would launch spot c8i for it.
    const file = path.join(dir, 'assumed-pod.yaml');
    writeFileSync(
      file,
      `name: pod\nduration: 20s\n${defaultPoolYaml([
        '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [c8i] }',
        '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge, 2xlarge] }',
      ])}${web(0, '    scale: [{ at: 20s, replicas: 1 }]\n', '"1"')}`,
    );
    const run = await simulateBin(file, 'assumed-pod', '--explain', 'pod', 'default/web-00001');
    expect(run.code).toBe(0);
    const text = run.out.slice(run.out.indexOf('\npod '));
    expect(text).toContain(': nodePool default: c8i.xlarge at $0.0656/h*, the cheapest of 2 instance types');
    expect(text).toContain(
      '\n    c8i.xlarge       $0.0656/h*\n    c8i.2xlarge      $0.1312/h*\n* assumed price: ',
    );
  }, 60_000);

  it('refuses --explain without a name', async () => {
    const result = await run('simulate', '--explain', 'pod');
    expect(result.code).toBe(2);
    expect(result.err).toContain('flotilla simulate: --explain: name the pod');
  });
});

describe('explain as text', () => {
  it('a pod past the NodePool limits and the node its sibling runs on, as a person reads them', async () => {
    const scenario = parseScenario(`name: text
duration: 3m
bootDelay: 30s
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  '      limits: { cpu: "4" }\n      disruption: { consolidateAfter: 1h }\n',
)}workloads:
  - kind: Deployment
    name: web
    replicas: 2
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "3" } }
`);
    const texts: string[] = [];
    await simulate(scenario, {
      atEnd: async (world) => {
        const [pending] = (await world.cluster.provisionablePods()).items;
        const [node] = (await world.cluster.nodeInfos()).items;
        if (pending === undefined || node === undefined)
          throw new Error('the run left no pending pod or no node');
        texts.push(
          await explainInWorld(world, { kind: 'pod', namespace: pending.namespace, name: pending.name }),
        );
        texts.push(await explainInWorld(world, { kind: 'node', name: node.name }));
      },
    });
    const [pod = '', node = ''] = texts;
    expect(pod).toMatch(/^pod default\/web-\S+ waits \(as of 2\S+Z UTC\)\n/);
    expect(pod).toContain('\n  - the NodePool limits are reached: nodePool default: limits cpu 4 ');
    expect(pod).toContain('\nNodePools:\n  default  the NodePool limits are reached: limits cpu 4 ');
    expect(pod).toMatch(/\nFailedScheduling Event: nodePool default: limits cpu 4 [^\n]+\n$/);
    expect(node).toMatch(/^node \S+ \(nodeClaim default-\S+, nodePool default\) stays \(as of \S+ UTC\)\n/);
    expect(node).toMatch(
      /\n {2}- consolidateAfter has not passed: consolidateAfter 1h: \d+m\d+s left, at \S+ \(since its last pod change or initialization\)\n$/,
    );
  }, 60_000);
});
