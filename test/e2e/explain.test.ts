import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { lastDecisions, logGroupPrefix } from '../../shared/cli/explain/logs.ts';
import { main } from '../../shared/cli/main.ts';
import { awsClientConfig, kube } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { disruptionLambdaPass } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// `flotilla explain` end to end: what a user applies (NodePools, an EC2NodeClass, workloads, a
// PDB, a do-not-disrupt annotation), the Lambdas' use cases run as deployed (the provisioner and its
// controllers pass, one disruption pass), then `flotilla explain` through the CLI's entry point
// with the cluster user's kubeconfig, as a user runs it: for a pod blocked by each reason and a
// node held by each reason it gives the reason the README documents, and the Event Karpenter
// records for it is on the API server. One shared set-up: every case is built at once.

const e2e = new ProvisionerE2E('explain');
const { id } = e2e;
const README = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');

/** Node cases: one NodePool and one Deployment of 1 pod (1500m on an m5.large) each. */
const NODE_CASES = ['budget', 'dndpod', 'dndnode', 'pdb', 'cheaper', 'after'] as const;
const pools: Record<string, string> = {};
let kubeconfig = '';

interface Explained {
  readonly code: number;
  readonly json: {
    readonly reasons: readonly { code: string; headline: string; detail: string }[];
    readonly nodePools?: readonly {
      nodePool: string;
      code: string;
      headline: string;
      detail: string;
      podMatches: boolean;
    }[];
    readonly nodeClaim?: string;
    readonly failedScheduling?: string;
  };
  readonly err: string;
}

/** `flotilla explain …` through the CLI's entry point, as the cluster's user, in JSON. */
async function explain(...args: string[]): Promise<Explained> {
  let out = '';
  let err = '';
  const code = await main(['explain', ...args, '--kubeconfig', kubeconfig, '--no-logs', '--output', 'json'], {
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  return { code, json: code === 0 ? JSON.parse(out) : { reasons: [] }, err };
}

/** The words the README gives a reason code (its row in the explain tables). */
function documented(code: string): string {
  const row = new RegExp(`^\\| \`${code}\` \\| ([^|]+) \\|`, 'm').exec(README);
  if (row?.[1] === undefined) throw new Error(`the README documents no reason ${code}`);
  return row[1].trim();
}

async function events(namespace: string, reason: string, name: string) {
  const list = await e2e.env.core.listNamespacedEvent({ namespace });
  return list.items.filter((e) => e.reason === reason && e.involvedObject.name === name);
}

async function nodeOfApp(app: string): Promise<string> {
  const [pod] = await e2e.podsOf(app);
  const node = pod?.spec?.nodeName;
  if (node === undefined) throw new Error(`no pod of ${app} is bound`);
  return node;
}

beforeAll(async () => {
  const started = Date.now();
  kubeconfig = (await kube()).userKubeconfigPath;
  const badClass = await e2e.createNodeClass('bad', {
    subnetSelectorTerms: [{ tags: { nothing: 'matches' } }],
  });
  const made = await Promise.all([
    e2e.createPool('budget', 'budget', {
      instanceTypes: ['m5.large'],
      disruption: {
        consolidateAfter: '0s',
        budgets: [{ nodes: '0', schedule: '0 0 * * *', duration: '24h' }],
      },
    }),
    e2e.createPool('dndpod', 'dndpod', { instanceTypes: ['m5.large'] }),
    e2e.createPool('dndnode', 'dndnode', { instanceTypes: ['m5.large'] }),
    e2e.createPool('pdb', 'pdb', { instanceTypes: ['m5.large'] }),
    e2e.createPool('cheaper', 'cheaper', { instanceTypes: ['m5.large'] }),
    e2e.createPool('after', 'after', {
      instanceTypes: ['m5.large'],
      disruption: { consolidateAfter: '10m' },
    }),
    e2e.createPool('guard', 'guard', {
      instanceTypes: ['m5.large'],
      disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: 'Never' },
    }),
    e2e.createPool('limits', 'limits', { instanceTypes: ['m5.large'], limits: { cpu: '1' } }),
    e2e.createPool('nofit', 'nofit', { instanceTypes: ['m5.large'] }),
    e2e.createPool('notready', 'notready', { instanceTypes: ['m5.large'], nodeClassName: badClass }),
    // Its requirements leave no offering: no instance type is in that zone.
    e2e.createPool('nocompat', 'nocompat', {
      instanceTypes: ['m5.large'],
      requirements: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['nowhere-1z'] }],
    }),
  ]);
  for (const [i, name] of [
    'budget',
    'dndpod',
    'dndnode',
    'pdb',
    'cheaper',
    'after',
    'guard',
    'limits',
    'nofit',
    'notready',
    'nocompat',
  ].entries()) {
    pools[name] = made[i] ?? '';
  }
  // The node cases' workloads, and the pod that brings up the runaway guard's node.
  await e2e.podDisruptionBudget('pdb', 1);
  await Promise.all([
    ...NODE_CASES.map((c) =>
      e2e.deploy(
        c,
        c,
        1,
        '1500m',
        c === 'dndpod' ? { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } } : {},
      ),
    ),
    e2e.createPod('guard', 'guard', 'guard-first', '1500m'),
  ]);
  await e2e.run(`nodes-${id}`);
  await Promise.all([...NODE_CASES.map((c) => e2e.allRunning(c, 1)), e2e.allRunning('guard', 1)]);

  // What users and other controllers do to the nodes: a do-not-disrupt annotation; the guard's
  // node emptied, then tainted by a rogue controller its NodePool knows nothing of.
  const { core } = e2e.env;
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  await core.patchNode(
    {
      name: await nodeOfApp('dndnode'),
      body: { metadata: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } } },
    },
    merge,
  );
  const guardNode = await nodeOfApp('guard');
  await core.deleteNamespacedPod({ namespace: e2e.namespace, name: 'guard-first', gracePeriodSeconds: 0 });
  await waitFor(
    'the guard pod gone',
    async () => ((await e2e.podsOf('guard')).length === 0 ? true : undefined),
    {
      timeoutMs: 30_000,
    },
  );
  await core.patchNode(
    {
      name: guardNode,
      body: { spec: { taints: [{ key: 'chaos.example.com/rogue', value: 'true', effect: 'NoSchedule' }] } },
    },
    merge,
  );

  // Pods each NodePool has a reason not to take, and one no NodePool matches.
  await Promise.all([
    e2e.createPod('nopool', 'nopool', 'nopool', '500m'),
    e2e.createPod('limits', 'limits', 'limits', '500m'),
    e2e.createPod('nofit', 'nofit', 'nofit', '64'),
    e2e.createPod('notready', 'notready', 'notready', '500m'),
    e2e.createPod('nocompat', 'nocompat', 'nocompat', '500m'),
    e2e.createPod('guard', 'guard', 'guard-second', '500m'),
  ]);
  // The provisioner tells the pods why (FailedScheduling); one disruption pass over the node cases.
  await e2e.run(`pods-${id}`);
  const nodeCasePools = new Set(NODE_CASES.map((c) => pools[c]));
  await disruptionLambdaPass(e2e, (name) => nodeCasePools.has(name), `disrupt-${id}`);
  process.stderr.write(`explain e2e set-up: ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
}, 180_000);

describe('flotilla explain pod, against the real API server', () => {
  it.each([
    ['nopool', 'noNodePool', undefined, undefined],
    ['limits', 'nodePoolLimits', 'limits', undefined],
    // Karpenter plans no pod onto a NodePool that is not Ready and records nothing more for it;
    // Flotilla's NodePool says why it is not Ready.
    ['notready', 'nodeClassNotReady', 'notready', 'NodeClassNotReady'],
    // Too big for every instance type: FailedScheduling alone, as in Karpenter.
    ['nofit', 'noInstanceTypeFits', 'nofit', undefined],
    // The NodePool's requirements leave no instance type: Karpenter's Warning on the NodePool too.
    ['nocompat', 'noInstanceTypeFits', 'nocompat', 'NoCompatibleInstanceTypes'],
    // The runaway guard waits for the rogue taint to go before it counts a failure: the pod's
    // FailedScheduling says so; LaunchBackoff on the NodePool comes once the taint counts.
    ['guard-second', 'launchPaused', 'guard', undefined],
  ] as const)('%s waits: %s, and its FailedScheduling Event says so', async (pod, code, pool, poolEvent) => {
    const result = await explain('pod', `${e2e.namespace}/${pod}`);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.json.reasons.map((r) => [r.code, r.headline])).toContainEqual([code, documented(code)]);
    const failed = await waitFor(
      `FailedScheduling on ${pod}`,
      async () => {
        const found = await events(e2e.namespace, 'FailedScheduling', pod);
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 10_000 },
    );
    if (pool === undefined) {
      // Every NodePool of this file rejects it on its requirements, or is left out and would not
      // match it anyway.
      for (const name of Object.values(pools)) {
        const verdict = result.json.nodePools?.find((p) => p.nodePool === name);
        expect(
          verdict?.code === 'requirements' || verdict?.podMatches === false,
          JSON.stringify(verdict),
        ).toBe(true);
      }
      expect(failed.map((e) => e.message)).toContain(
        `Failed to schedule pod: ${result.json.failedScheduling}`.slice(0, 1024),
      );
      return;
    }
    const verdict = result.json.nodePools?.find((p) => p.nodePool === pools[pool]);
    expect(verdict).toMatchObject({ code, headline: documented(code) });
    // The Event the provisioner recorded says what explain says (cut at the 1,024 characters an
    // Event message keeps).
    expect(result.json.failedScheduling).toContain(`nodePool ${pools[pool]}`);
    const ours = `Failed to schedule pod: ${result.json.failedScheduling}`.slice(0, 1024);
    expect(failed.map((e) => e.message)).toContain(ours);
    if (pod === 'nofit')
      expect(verdict?.detail).toMatch(
        /the pod requests cpu 64, memory 128Mi, the closest are m5\.large \(cpu \d+m, memory \d+Mi\)$/,
      );
    if (code === 'launchPaused')
      expect(verdict?.detail).toMatch(/^launches wait until \S+ for a taint to go: /);
    // The Warning on the NodePool, where Kubernetes puts a cluster-scoped object's Events.
    if (poolEvent !== undefined) {
      const found = await events('default', poolEvent, pools[pool] ?? '');
      expect(
        found.map((e) => [e.involvedObject.kind, e.type]),
        `${poolEvent} on ${pools[pool]}`,
      ).toContainEqual(['NodePool', 'Warning']);
    }
  });

  it('a name no pod has exits 2 and says how to look', async () => {
    const result = await explain('pod', `${e2e.namespace}/nobody`);
    expect(result.code).toBe(2);
    expect(result.err).toContain(
      `pod ${e2e.namespace}/nobody is neither bound to a node nor waiting for capacity`,
    );
  });
});

describe('flotilla explain node, against the real API server', () => {
  it.each([
    ['budget', 'budget', { reason: 'DisruptionBlocked', on: 'NodePool' }],
    ['dndpod', 'doNotDisruptPod', { reason: 'Unconsolidatable', on: 'Node' }],
    ['dndnode', 'doNotDisruptNode', { reason: 'DisruptionBlocked', on: 'NodeClaim' }],
    ['pdb', 'pdb', { reason: 'Unconsolidatable', on: 'Node' }],
    ['cheaper', 'notCheaper', { reason: 'Unconsolidatable', on: 'Node' }],
    ['after', 'consolidateAfter', undefined],
  ] as const)('the node of %s stays: %s, and the Event is there', async (app, code, event) => {
    const node = await nodeOfApp(app);
    const result = await explain('node', node);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.json.reasons.map((r) => [r.code, r.headline])).toContainEqual([code, documented(code)]);
    const detail = result.json.reasons.find((r) => r.code === code)?.detail ?? '';
    if (code === 'budget') {
      const today = new Date().toISOString().slice(0, 10);
      expect(detail).toContain(
        `schedule "0 0 * * *" for 24h) allows 0 Underutilized disruptions now, active ${today}T00:00:00.000Z to`,
      );
    }
    if (code === 'pdb') expect(detail).toBe(`pdb ${e2e.namespace}/pdb prevents pod evictions`);
    if (code === 'consolidateAfter') expect(detail).toMatch(/^consolidateAfter 10m: \d+m\d+s left, at /);
    // Karpenter records no Event for a node whose consolidateAfter has not passed.
    if (event === undefined) return;
    const subject =
      event.on === 'NodePool'
        ? (pools[app] ?? '')
        : event.on === 'Node'
          ? node
          : (result.json.nodeClaim ?? '');
    const found = await events('default', event.reason, subject);
    expect(found.length, `${event.reason} on ${event.on} ${subject}`).toBeGreaterThan(0);
    if (event.reason === 'Unconsolidatable' && code !== 'notCheaper') expect(found[0]?.message).toBe(detail);
  });

  it('a name no node has exits 2', async () => {
    const result = await explain('node', `nobody-${id}`);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`no Node or NodeClaim is named nobody-${id}`);
  });
});

describe('the last decisions, from the stack log groups', () => {
  it('finds the decisions that name a pod in CloudWatch Logs (moto), as the provisioner wrote them', async () => {
    // The provisioner's own decision lines of this file, in a log group named as the stack names
    // its Lambdas' groups.
    const logs = new CloudWatchLogsClient(awsClientConfig(e2e.env.server));
    const logGroupName = `${logGroupPrefix(CLUSTER)}FlotillaProvisionerLogGroup${id}`;
    await logs.send(new CreateLogGroupCommand({ logGroupName }));
    await logs.send(new CreateLogStreamCommand({ logGroupName, logStreamName: id }));
    const decisions = e2e.logLines.filter((l) => typeof l['decision'] === 'string');
    await logs.send(
      new PutLogEventsCommand({
        logGroupName,
        logStreamName: id,
        logEvents: decisions.map((l) => ({
          timestamp: Date.parse(String(l['time'])),
          message: JSON.stringify(l),
        })),
      }),
    );
    const found = await lastDecisions({
      clusterName: CLUSTER,
      region: e2e.env.server.region,
      term: 'nofit',
      sinceMs: Date.now() - 3_600_000,
      client: logs,
    });
    expect(found).toMatchObject({ kind: 'found', groups: 1 });
    if (found.kind !== 'found') return;
    expect(found.lines.length).toBeGreaterThan(0);
    expect(found.lines.every((l) => l.includes('  Provisioner  '))).toBe(true);
    expect(found.lines).toContainEqual(
      expect.stringMatching(/ {2}Provisioner {2}unschedulable {2}.*no instance type has 64 cpu/),
    );
    logs.destroy();
  });
});
