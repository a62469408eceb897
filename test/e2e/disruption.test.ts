import { setTimeout as sleep } from 'node:timers/promises';
import { type Message, SQSClient } from '@aws-sdk/client-sqs';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeTerminationHandler } from '../../lambdas/termination/run.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import type { LeaseStore } from '../../shared/ports/lease.ts';
import type { DisruptionConfig } from '../../shared/usecases/disruption/setup.ts';
import { COMMAND_ANNOTATION, decodeCommand } from '../../shared/usecases/state/command-record.ts';
import { awsClientConfig } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import type { LambdaAws } from '../integration/aws/cloud-fixture.ts';
import { registerImage } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { consumeQueue, disruptionLambdaPass } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// Disruption end to end: NodePools and workloads as a user applies and changes them, and the
// disruption Lambda's pass (run as the disruption Lambda: the controller group on the API server,
// its own role on AWS) removing empty nodes, replacing drifted and expired ones, within budgets.
// The other Lambdas are played in the background as their triggers would run them: the
// provisioner on pending pods and on the launch requests the disruption pass sends to its queue
// (with its lifecycle pass), and the termination Lambda on the stack's termination queue. The
// disruption pass runs every 2 s (its schedule, compressed) and waits 3 s to validate emptiness
// (Karpenter's 15 s, compressed); it is limited to this file's NodePools, as the API server is
// shared with other test files.

const e2e = new ProvisionerE2E('disrupt', { lifecycleLoop: false });
const { id, logLines } = e2e;
const karpenter = { group: 'karpenter.sh', version: 'v1' };

let sqs: SQSClient;
let disruptionAws: LambdaAws;
let podEventQueueUrl = '';
let terminationQueueUrl = '';

/** The NodePool whose node expires (`expireAfter: 5m`) while the other tests run. */
let agingPool = '';

beforeAll(async () => {
  const { server, account } = e2e.env;
  sqs = new SQSClient(awsClientConfig(server));
  podEventQueueUrl = account.stack.queueUrls.podEvents;
  terminationQueueUrl = account.stack.queueUrls.termination;
  disruptionAws = account.as('disruption');
  // Its budget allows no drift, so the AMI change below leaves it to expiration (which no budget
  // holds back); the last test looks at it.
  agingPool = await e2e.createPool('expire', 'expire', {
    instanceTypes: ['m5.large'],
    expireAfter: '5m',
    disruption: { consolidateAfter: '0s', budgets: [{ nodes: '0', reasons: ['Drifted'] }] },
  });
  await e2e.deploy('expire', 'aging', 1, '1500m');
  startControllers();
});

afterAll(() => stopControllers());
// A test that paused the scheduled passes and failed leaves them on for the others.
afterEach(() => {
  disruptionOn = true;
});

const mine = (pool: string) => pool.startsWith(`prov-${id}-`);

/** One disruption pass as the Lambda runs it, over this file's NodePools, validating after 3 s. */
function disruptionPass(
  holder: string,
  overrides: { cluster?: Cluster; leases?: LeaseStore } = {},
  options: DisruptionConfig = {},
) {
  return disruptionLambdaPass(e2e, mine, holder, {
    ...overrides,
    options: { validationMs: 3_000, ...options },
  });
}

const terminationHandler = (event: unknown) =>
  asLambda(e2e.env.server, 'termination', () => makeTerminationHandler(e2e.terminationLambda())(event));

/** Messages on a queue now, received and deleted (acknowledged) after `handle`. */
const consume = (queueUrl: string, handle: (messages: readonly Message[]) => Promise<unknown>) =>
  consumeQueue(sqs, queueUrl, handle);

// The background Lambdas.
let stopRequested = false;
let loops: Promise<void>[] = [];
let disruptionOn = true;
/** The scheduled disruption pass running now, if any. */
let disruptionInFlight: Promise<unknown> = Promise.resolve();
let runs = 0;
const controllerErrors: unknown[] = [];

function startControllers(): void {
  stopRequested = false;
  const { server } = e2e.env;
  const loop = async (everyMs: number, work: () => Promise<unknown>) => {
    while (!stopRequested) {
      try {
        await work();
      } catch (error) {
        controllerErrors.push(error);
      }
      await sleep(everyMs);
    }
  };
  loops = [
    loop(300, async () => {
      await asLambda(server, 'provisioner', () => e2e.controllersPass());
      await consume(terminationQueueUrl, (messages) =>
        terminationHandler({
          Records: messages.map((m) => ({ messageId: m.MessageId ?? '', body: m.Body ?? '' })),
        }),
      );
      const requests = await consume(podEventQueueUrl, async () => undefined);
      if (requests > 0 || (await e2e.pendingPods()).length > 0) {
        runs += 1;
        await asLambda(server, 'provisioner', () => e2e.run(`run-${runs}-${id}`, { batchMaxMs: 2_000 }));
      }
    }),
    loop(2_000, async () => {
      if (disruptionOn) {
        runs += 1;
        disruptionInFlight = disruptionPass(`disrupt-${runs}-${id}`);
        await disruptionInFlight;
      }
    }),
  ];
}

/**
 * Stops the scheduled disruption passes once the one running has finished (it holds the lease a
 * test's own pass needs). Its errors are the loop's to record.
 */
async function pauseDisruption(): Promise<void> {
  disruptionOn = false;
  await disruptionInFlight.then(
    () => undefined,
    () => undefined,
  );
}

async function stopControllers(): Promise<void> {
  stopRequested = true;
  await Promise.all(loops);
}

const scale = e2e.scale.bind(e2e);

/** The part of a NodePool a test edits. */
interface NodePoolJson {
  spec: { template: { metadata: { labels: Record<string, string> } } };
}

/** A user's edit of a NodePool's spec. */
async function editPool(name: string, edit: (spec: NodePoolJson['spec']) => void): Promise<void> {
  const { custom } = e2e.env;
  const pool = (await custom.getClusterCustomObject({
    ...karpenter,
    plural: 'nodepools',
    name,
  })) as NodePoolJson;
  edit(pool.spec);
  try {
    await custom.replaceClusterCustomObject({ ...karpenter, plural: 'nodepools', name, body: pool });
  } catch (error) {
    // Flotilla wrote the NodePool's status in between (a user's kubectl retries the same way).
    if ((error as { code?: number }).code !== 409) throw error;
    await editPool(name, edit);
  }
}

const isReady = (p: Awaited<ReturnType<typeof e2e.podsOf>>[number]) =>
  p.metadata?.deletionTimestamp === undefined &&
  p.status?.phase === 'Running' &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

async function running(app: string, count: number) {
  return waitFor(
    `${count} pods of ${app} Running`,
    async () => {
      const pods = (await e2e.podsOf(app)).filter((p) => p.metadata?.deletionTimestamp === undefined);
      return pods.length === count && pods.every(isReady) ? pods : undefined;
    },
    { timeoutMs: 90_000 },
  );
}

function disruptLines(pool: string) {
  return logLines.filter(
    (l) =>
      l['decision'] === 'disrupt' &&
      (l['candidates'] as { nodePool: string }[] | undefined)?.some((c) => c.nodePool === pool),
  );
}

async function eventsFor(reason: string, name: string) {
  const events = await e2e.env.core.listNamespacedEvent({ namespace: 'default' });
  return events.items.filter((e) => e.reason === reason && e.involvedObject.name === name);
}

describe('disruption end to end (moto + kube-apiserver + kube-scheduler, the Lambdas as deployed)', () => {
  it('removes the empty nodes of a Deployment scaled to 0 once consolidateAfter has passed', async () => {
    const pool = await e2e.createPool('empty', 'empty', {
      instanceTypes: ['m5.large'],
      disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: '10s', budgets: [{ nodes: '2' }] },
    });
    await e2e.deploy('empty', 'scaled', 2, '1500m');
    await running('scaled', 2);
    const claims = await e2e.nodeClaimsOf(pool);
    // One NodeClaim per pod; should there be more, the decisions about this pool say why.
    expect(
      claims,
      JSON.stringify(logLines.filter((l) => JSON.stringify(l).includes(pool)).slice(0, 40)),
    ).toHaveLength(2);
    // A pass has seen each node's pods (its lastPodEventTime is set). Passes see the pods there as
    // they read: a node whose pods came and went between two passes would count from its
    // initialization (README, differences from Karpenter).
    await waitFor(
      'a pass to see the pods on their nodes',
      async () =>
        (await e2e.nodeClaimsOf(pool)).every((c) => c.status.lastPodEventMs !== undefined) ? true : undefined,
      { timeoutMs: 60_000 },
    );

    // Before the scale request: the pods cannot leave earlier (taken after, a slow answer moved the
    // bound past their leaving, and a command 10 s after it looked early).
    const emptiedAt = Date.now();
    await scale('scaled', 0);
    await waitFor(
      'the empty NodeClaims gone',
      async () => ((await e2e.nodeClaimsOf(pool)).length === 0 ? true : undefined),
      {
        timeoutMs: 90_000,
      },
    );
    // One emptiness command per pass takes every node that is empty by then (the two pods may
    // leave a pass apart); each came at least consolidateAfter after the pods left.
    const lines = disruptLines(pool);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).toMatchObject({
        method: 'emptiness',
        reason: 'Empty',
        action: 'delete',
        outcome: 'deleted',
      });
      expect(Date.parse(String(line['time']))).toBeGreaterThanOrEqual(emptiedAt + 10_000);
    }
    const removed = lines.flatMap((l) =>
      (l['candidates'] as { nodeClaim: string }[]).map((c) => c.nodeClaim),
    );
    expect(removed.sort()).toEqual(claims.map((c) => c.name).sort());
    expect(await e2e.instancesOf(pool)).toHaveLength(0);
    expect(controllerErrors).toEqual([]);
  }, 180_000);

  it('a budget of nodes "0" in a schedule window blocks emptiness until the window ends', async () => {
    const now = new Date();
    // The window opened at the start of this minute and ends 1–2 minutes from now.
    const duration = now.getUTCSeconds() < 20 ? '1m' : '2m';
    const pool = await e2e.createPool('window', 'window', {
      instanceTypes: ['m5.large'],
      disruption: {
        consolidationPolicy: 'WhenEmpty',
        consolidateAfter: '0s',
        budgets: [{ nodes: '0', schedule: `${now.getUTCMinutes()} ${now.getUTCHours()} * * *`, duration }],
      },
    });
    const windowEnd =
      Date.UTC(
        now.getUTCFullYear(),
        now.getUTCMonth(),
        now.getUTCDate(),
        now.getUTCHours(),
        now.getUTCMinutes(),
      ) + (duration === '1m' ? 60_000 : 120_000);
    await e2e.deploy('window', 'windowed', 1, '1500m');
    await running('windowed', 1);
    await scale('windowed', 0);
    await waitFor(
      'a DisruptionBlocked event on the NodePool',
      async () => ((await eventsFor('DisruptionBlocked', pool)).length > 0 ? true : undefined),
      {
        timeoutMs: 60_000,
      },
    );
    expect(Date.now()).toBeLessThan(windowEnd);
    expect(await e2e.nodeClaimsOf(pool)).toHaveLength(1);
    await waitFor(
      'the empty NodeClaim gone',
      async () => ((await e2e.nodeClaimsOf(pool)).length === 0 ? true : undefined),
      {
        timeoutMs: 180_000,
      },
    );
    const [line] = disruptLines(pool);
    expect(Date.parse(String(line?.['time']))).toBeGreaterThanOrEqual(windowEnd);
  }, 240_000);

  it('a new AMI drifts every node; they are replaced one budget at a time, every pod kept Running within its PDB', async () => {
    const { custom, account } = e2e.env;
    const pool = await e2e.createPool('drift', 'drift', {
      instanceTypes: ['m5.large'],
      disruption: { budgets: [{ nodes: '1' }], consolidationPolicy: 'WhenEmpty', consolidateAfter: 'Never' },
    });
    await e2e.deploy('drift', 'web', 3, '1500m');
    await e2e.podDisruptionBudget('web', 2);
    await running('web', 3);
    const before = await e2e.nodeClaimsOf(pool);
    expect(before).toHaveLength(3);
    const oldImage = before[0]?.status.imageId ?? '';

    let minReady = Number.POSITIVE_INFINITY;
    let maxDisrupting = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        minReady = Math.min(minReady, (await e2e.podsOf('web')).filter(isReady).length);
        const claims = await e2e.nodeClaimsOf(pool);
        maxDisrupting = Math.max(
          maxDisrupting,
          claims
            .filter((c) => c.deleting || c.annotations['flotilla.io/disruption-command'] !== undefined)
            .filter((c) => before.some((b) => b.name === c.name)).length,
        );
        await sleep(200);
      }
    })();

    // AWS publishes a new image; the user points the EC2NodeClass at it.
    const newImage = await registerImage(
      account.ec2,
      `amazon-eks-node-al2023-x86_64-standard-1.34-v20261201-${id}`,
    );
    await custom.patchClusterCustomObject(
      {
        group: 'karpenter.k8s.aws',
        version: 'v1',
        plural: 'ec2nodeclasses',
        name: e2e.nodeClassName,
        body: { spec: { amiFamily: 'AL2023', amiSelectorTerms: [{ id: newImage }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    await waitFor(
      'every node of the pool on the new image',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.length === 3 && claims.every((c) => c.status.imageId === newImage && !c.deleting)
          ? true
          : undefined;
      },
      { timeoutMs: 240_000 },
    );
    await running('web', 3);
    watching = false;
    await watcher;
    expect(oldImage).not.toBe(newImage);
    expect(minReady).toBeGreaterThanOrEqual(2);
    expect(maxDisrupting).toBe(1);
    const drifted = logLines.filter((l) => l['decision'] === 'drifted' && l['nodePool'] === pool);
    expect(drifted.map((l) => l['reason'])).toEqual(['AMIDrift', 'AMIDrift', 'AMIDrift']);
    const lines = disruptLines(pool);
    expect(lines.filter((l) => l['outcome'] === 'started')).toHaveLength(3);
    expect(lines.filter((l) => l['outcome'] === 'deleted')).toHaveLength(3);
    expect(lines.every((l) => l['method'] === 'drift' && l['reason'] === 'Drifted')).toBe(true);
    expect(await e2e.instancesOf(pool)).toHaveLength(3);
    // Karpenter's Events on its objects: each replacement launched and waited on, once; each
    // drifted node disrupted, on its Node and its NodeClaim.
    const kinds = async (reason: string, name: string) =>
      (await eventsFor(reason, name)).map((e) => [e.involvedObject.kind, e.type, e.count]);
    const after = await e2e.nodeClaimsOf(pool);
    for (const c of after) {
      expect(await kinds('DisruptionLaunching', c.name)).toEqual([['NodeClaim', 'Normal', 1]]);
      expect(await kinds('DisruptionWaitingReadiness', c.name)).toEqual([['NodeClaim', 'Normal', 1]]);
    }
    for (const c of before) {
      expect(await kinds('DisruptionTerminating', c.name)).toEqual([['NodeClaim', 'Normal', 1]]);
      expect(await kinds('DisruptionTerminating', c.status.nodeName ?? '')).toEqual([['Node', 'Normal', 1]]);
      expect(await kinds('DisruptionLaunching', c.name)).toEqual([]);
    }
  }, 360_000);

  it('a do-not-disrupt pod keeps its drifted node until the annotation goes', async () => {
    const pool = await e2e.createPool('keep', 'keep', { instanceTypes: ['m5.large'] });
    await e2e.deploy('keep', 'keeper', 1, '1500m', {
      annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
    });
    await running('keeper', 1);
    const [claim] = await e2e.nodeClaimsOf(pool);
    // The user changes the template: every node of the pool drifts.
    await editPool(pool, (spec) => {
      spec.template.metadata.labels['team'] = 'web';
    });
    await waitFor(
      'the NodeClaim Drifted',
      async () => {
        const [c] = await e2e.nodeClaimsOf(pool);
        return c?.status.conditions.some(
          (x) => x.type === 'Drifted' && x.status === 'True' && x.reason === 'NodePoolDrifted',
        )
          ? true
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    await waitFor(
      'a DisruptionBlocked event',
      async () => ((await eventsFor('DisruptionBlocked', claim?.name ?? '')).length > 0 ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    await sleep(6_000);
    const still = await e2e.nodeClaimsOf(pool);
    expect(still.map((c) => [c.name, c.deleting])).toEqual([[claim?.name, false]]);

    // Without the annotation, drift replaces the node.
    await e2e.editDeployment('keeper', (deployment) => {
      delete deployment.spec?.template.metadata?.annotations?.['karpenter.sh/do-not-disrupt'];
    });
    await waitFor(
      'the drifted NodeClaim replaced',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.length === 1 && claims[0]?.name !== claim?.name && !claims[0]?.deleting
          ? true
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    await running('keeper', 1);
  }, 240_000);

  it('a pass killed between creating the replacement and marking the candidate loses nothing; the next pass finishes it', async () => {
    await pauseDisruption();
    const pool = await e2e.createPool('crash', 'crash', {
      instanceTypes: ['m5.large'],
      disruption: { consolidateAfter: 'Never' },
    });
    await e2e.deploy('crash', 'steady', 1, '1500m');
    await running('steady', 1);
    // kube-scheduler may bind the pod before Flotilla has registered and initialized the
    // NodeClaim; until then it is no candidate, and its node's name is not on it.
    const original = await waitFor(
      'the NodeClaim initialized',
      async () => {
        const [claim] = await e2e.nodeClaimsOf(pool);
        const initialized = claim?.status.conditions.some(
          (c) => c.type === 'Initialized' && c.status === 'True',
        );
        return initialized && claim?.status.nodeName !== undefined ? claim : undefined;
      },
      { timeoutMs: 60_000 },
    );
    await editPool(pool, (spec) => {
      spec.template.metadata.labels['release'] = 'next';
    });
    // With the invocation's deadline too near for a command to finish, a pass starts none.
    const early = await disruptionPass(`deadline-${id}`, {}, { deadlineMs: () => Date.now() + 5_000 });
    expect(early.decisions).toEqual([]);
    expect(
      logLines.filter((l) => l['decision'] === 'disruptionPass' && l['holder'] === `deadline-${id}`),
    ).toEqual([expect.objectContaining({ reason: 'deadline', commands: 0 })]);
    // The invocation dies as it taints this test's Node (after the replacement NodeClaim was
    // created), holding its lease: a short TTL stands in for the Lambda timeout.
    const killed = new Error('invocation killed');
    const { cluster } = e2e.env;
    const dying: Cluster = {
      ...cluster,
      patchNode: async (name, patch) => {
        const tainting = patch.addTaints?.some((t) => t.key === 'karpenter.sh/disrupted') ?? false;
        if (tainting && name === original?.status.nodeName) throw killed;
        return cluster.patchNode(name, patch);
      },
    };
    const leases = new DynamoLeaseStore(disruptionAws.dynamodb, 'flotilla-state');
    const holding: LeaseStore = {
      ...leases,
      acquire: leases.acquire.bind(leases),
      renew: leases.renew.bind(leases),
      isHeld: leases.isHeld.bind(leases),
      release: async () => undefined,
    };
    await expect(
      disruptionPass(`crash-${id}`, { cluster: dying, leases: holding }, { leaseTtlSeconds: 3 }),
    ).rejects.toBe(killed);
    // The candidate carries the command's record, naming the replacement that now exists.
    const claimsAfter = (await e2e.env.cluster.nodeClaims()).items;
    const candidate = claimsAfter.find((c) => c.name === original?.name);
    expect(candidate?.deleting).toBe(false);
    const record = decodeCommand(candidate?.annotations[COMMAND_ANNOTATION] ?? '');
    expect(record).toMatchObject({ method: 'drift', candidates: [original?.name] });
    const replacementName = 'replacements' in record ? record.replacements[0] : undefined;
    const replacement = claimsAfter.find((c) => c.name === replacementName);
    expect(replacement?.nodePoolName).toBe(pool);

    await sleep(3_500);
    disruptionOn = true;
    await waitFor(
      'the candidate deleted once its replacement initialized',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.length === 1 && claims[0]?.name === replacement?.name ? true : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const [pod] = await running('steady', 1);
    const [kept] = await e2e.nodeClaimsOf(pool);
    // The replacement is not left idle: the pod runs there.
    expect(pod?.spec?.nodeName).toBe(kept?.status.nodeName);
    expect(controllerErrors.filter((e) => e !== killed)).toEqual([]);
  }, 240_000);

  it('consolidation: a Deployment scaled from 30 to 3 replicas ends on fewer, cheaper nodes, all pods Running and the PDB kept', async () => {
    const pool = await e2e.createPool('shrink', 'shrink', {
      instanceTypes: ['m5.large', 'm5.xlarge', 'm5.2xlarge'],
      disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '10s' },
    });
    await e2e.deploy('shrink', 'shrink', 30, '250m');
    await e2e.podDisruptionBudget('shrink', 2);
    await running('shrink', 30);
    const cost = async () => {
      const claims = await e2e.nodeClaimsOf(pool);
      const prices = new Map(
        logLines
          .filter((l) => l['decision'] === 'launch' && l['outcome'] === 'launched')
          .map((l) => [l['nodeClaim'], Number(l['pricePerHour'])]),
      );
      return claims.filter((c) => !c.deleting).reduce((sum, c) => sum + (prices.get(c.name) ?? 0), 0);
    };
    const nodesBefore = (await e2e.nodeClaimsOf(pool)).length;
    const costBefore = await cost();
    await scale('shrink', 3);
    // The PDB (minAvailable 2) is watched throughout.
    let fewestReady = 3;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const ready = (await e2e.podsOf('shrink')).filter(isReady).length;
        if (ready < fewestReady) fewestReady = ready;
        await sleep(250);
      }
    })();
    await running('shrink', 3);
    await waitFor(
      'consolidation settled on one m5.large',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        const live = claims.filter((c) => !c.deleting);
        const types = live.map((c) => c.labels['node.kubernetes.io/instance-type']);
        return claims.length === 1 && types[0] === 'm5.large' ? true : undefined;
      },
      { timeoutMs: 300_000 },
    );
    await running('shrink', 3);
    watching = false;
    await watch;
    expect((await e2e.nodeClaimsOf(pool)).length).toBeLessThan(nodesBefore);
    expect(await cost()).toBeLessThan(costBefore);
    expect(fewestReady).toBeGreaterThanOrEqual(2);
    const lines = disruptLines(pool).filter((l) => l['reason'] === 'Underutilized');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines.filter((l) => l['outcome'] === 'started' || l['outcome'] === 'deleted')) {
      expect(Number(line['pricePerHourAfter']), JSON.stringify(lines)).toBeLessThan(
        Number(line['pricePerHourBefore']),
      );
    }
    // The line that starts a command names the policy that allowed it.
    expect(
      lines.some((l) => String(l['policy']).startsWith('WhenEmptyOrUnderutilized, min savings 0%')),
    ).toBe(true);
    expect(controllerErrors).toEqual([]);
  }, 420_000);

  it('consolidation: a node made pointless by a cheaper offering is replaced, the replacement running before the node goes', async () => {
    const pool = await e2e.createPool('cheaper', 'cheaper', {
      instanceTypes: ['m5.xlarge'],
      disruption: { consolidateAfter: '10s' },
    });
    await e2e.deploy('cheaper', 'small', 1, '500m');
    const [before] = await running('small', 1);
    const [original] = await e2e.nodeClaimsOf(pool);
    expect(original?.labels['node.kubernetes.io/instance-type']).toBe('m5.xlarge');
    // The user allows a smaller type: the m5.xlarge still matches (no drift), but an m5.large costs half.
    await editPool(pool, (spec) => {
      const template = spec.template as unknown as {
        spec: { requirements: { key: string; values: string[] }[] };
      };
      for (const r of template.spec.requirements) {
        if (r.key === 'node.kubernetes.io/instance-type') r.values = ['m5.large', 'm5.xlarge'];
      }
    });
    await waitFor(
      'the m5.xlarge replaced by an m5.large',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.length === 1 && claims[0]?.labels['node.kubernetes.io/instance-type'] === 'm5.large'
          ? true
          : undefined;
      },
      { timeoutMs: 240_000 },
    );
    const [after] = await running('small', 1);
    const [replacement] = await e2e.nodeClaimsOf(pool);
    expect(after?.spec?.nodeName).toBe(replacement?.status.nodeName);
    expect(after?.spec?.nodeName).not.toBe(before?.spec?.nodeName);
    // Replacement first: the replacement initialized before the command deleted the old node.
    const initializedAt = logLines.findIndex(
      (l) => l['decision'] === 'initialize' && l['nodeClaim'] === replacement?.name,
    );
    const deletedAt = logLines.findIndex(
      (l) =>
        l['decision'] === 'disrupt' &&
        l['outcome'] === 'deleted' &&
        (l['candidates'] as { nodeClaim: string }[]).some((c) => c.nodeClaim === original?.name),
    );
    expect(initializedAt).toBeGreaterThanOrEqual(0);
    expect(deletedAt).toBeGreaterThan(initializedAt);
    expect(logLines[deletedAt]).toMatchObject({ reason: 'Underutilized', action: 'replace' });
    expect(controllerErrors).toEqual([]);
  }, 300_000);

  it('expireAfter: 5m replaces a node forcefully, launching for its pods', async () => {
    const pool = agingPool;
    // The NodeClaim launched for the pod at the start of this file.
    const first = logLines.find(
      (l) => l['decision'] === 'launch' && l['outcome'] === 'launched' && l['nodePool'] === pool,
    )?.['nodeClaim'];
    expect(first).toBeDefined();
    await waitFor(
      'the expired NodeClaim replaced',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.some((c) => c.name !== first && !c.deleting) && !claims.some((c) => c.name === first)
          ? true
          : undefined;
      },
      { timeoutMs: 330_000 },
    );
    await running('aging', 1);
    const line = logLines.find(
      (l) =>
        l['decision'] === 'disrupt' &&
        l['method'] === 'expiration' &&
        (l['candidates'] as { nodeClaim: string }[])[0]?.nodeClaim === first,
    );
    expect(line, JSON.stringify(disruptLines(pool))).toMatchObject({
      reason: 'Expired',
      action: 'replace',
      outcome: 'deleted',
    });
    // Not before expireAfter: 5 minutes after the NodeClaim was created, which the launch line
    // follows within seconds.
    const launchedAt = logLines.find((l) => l['decision'] === 'launch' && l['nodeClaim'] === first)?.['time'];
    expect(Date.parse(String(line?.['time'])) - Date.parse(String(launchedAt))).toBeGreaterThanOrEqual(
      5 * 60_000 - 10_000,
    );
    await scale('aging', 0);
  }, 360_000);
});
