import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DescribeInstancesCommand,
  type EC2Client,
  type Filter,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeInterruptionHandler } from '../../lambdas/interruption/run.ts';
import { makeProvisionerHandler } from '../../lambdas/provisioner/run.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { makeKubeAccess, makeKubeCluster, makeKubeHttp } from '../../shared/adapters/kube/index.ts';
import { Tag } from '../../shared/apis/aws-tags.ts';
import { FlotillaError } from '../../shared/core/errors.ts';
import { podEventVersion } from '../../shared/messages/pod-event.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { Cloud } from '../../shared/ports/cloud.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { setUpInterruption } from '../../shared/usecases/interruption/setup.ts';
import { kube } from '../harness/index.ts';
import { throttleUser } from '../harness/kube/throttled-user.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type LambdaAws, TABLE } from '../integration/aws/cloud-fixture.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// The kill-point matrix: provisioning, termination and garbage collection, each killed before each
// of its side effects in turn (the killed invocation's every later call fails too, as a process
// that died makes none), then the schedules run as they would. Each Lambda runs as deployed (the
// controller group on the API server, its own role on AWS). After every kill: no instance without a
// NodeClaim for longer than a garbage-collection period plus 30 s, no NodeClaim or Node left on a
// finalizer, no pod left Pending, and no NodeClaim with two instances. Throughout, EC2 does not
// list an instance by its NodeClaim tag (the eventual consistency right after a launch, at its
// worst), so only the recorded launch and its ClientToken stand between a resumed launch and a
// second instance.

const e2e = new ProvisionerE2E('faults');
const { id, logLines } = e2e;

/**
 * The Cluster and Cloud calls that change something; the kill falls before one of them. These are
 * the names of the controllers' own calls, which the dying ports intercept: the test itself writes
 * no NodeClaim status, label or finalizer.
 */
const CLUSTER_EFFECTS: readonly (keyof Cluster)[] = [
  'createNodeClaim',
  'patchNodeClaimMetadata',
  'patchNodeClaimStatus',
  'deleteNodeClaim',
  'patchNode',
  'deleteNode',
  'evictPod',
  'deletePod',
];
const CLOUD_EFFECTS: readonly (keyof Cloud)[] = ['launch', 'create', 'delete'];

class Killed extends Error {
  constructor(readonly before: string) {
    super(`invocation killed before ${before}`);
  }
}

/** One invocation that dies before its `killAt`-th side effect, or before the first one so named. */
class Dying {
  private count = 0;
  dead: Killed | undefined;
  readonly done: string[] = [];

  /**
   * The count of the side effect to die before, or the label of one to die before the first of: a
   * call's name, with `:finalizer` when it removes a finalizer (`patchNode:finalizer`, say).
   */
  constructor(private readonly killAt: number | string) {}

  wrap<T extends object>(target: T, effects: readonly (keyof T)[]): T {
    return new Proxy(target, {
      get: (object, property) => {
        const value = Reflect.get(object, property) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          if (this.dead !== undefined) throw this.dead;
          if (effects.includes(property as keyof T)) {
            this.count += 1;
            const removes = (args[1] as { removeFinalizers?: readonly string[] } | undefined)
              ?.removeFinalizers;
            const label = `${String(property)}${(removes?.length ?? 0) > 0 ? ':finalizer' : ''}`;
            if (this.count === this.killAt || label === this.killAt) {
              this.dead = new Killed(label);
              throw this.dead;
            }
            this.done.push(label);
          }
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        };
      },
    });
  }
}

let collector: LambdaAws;
let terminator: LambdaAws;
const errors: unknown[] = [];
/** NodeClaims a killed termination owns until it died (the background loop leaves them alone). */
const underTest = new Set<string>();
let stopping = false;
let loops: Promise<void>[] = [];
let runs = 0;
/** While a killed provisioner run is under way, the schedule does not run the provisioner. */
let provisionerPaused = false;
let scheduledRun: Promise<unknown> | undefined;
/** While the garbage-collection kill points are played, the schedule does not collect. */
let collectorPaused = true;

/** EC2 lists nothing by a NodeClaim tag (reads by id and other filters answer as usual). */
function lagTagLookups(): void {
  e2e.env.account.lambdaEc2.middlewareStack.add(
    (next, context) => async (args) => {
      const filters = (args.input as { Filters?: Filter[] }).Filters ?? [];
      return context.commandName === 'DescribeInstancesCommand' &&
        filters.some((f) => f.Name === `tag:${Tag.nodeClaim}`)
        ? { response: {}, output: { $metadata: {}, Reservations: [] } }
        : next(args);
    },
    { step: 'initialize', name: 'lagging-tag-lookups' },
  );
}

const mine = (pool: string | undefined) => pool?.startsWith(`prov-${id}-`) === true;

/** Tagged instances no NodeClaim names, for the garbage-collection case. */
let orphans = { ids: [] as string[], launchedAt: 0 };

beforeAll(async () => {
  collector = e2e.env.account.as('garbage-collector');
  terminator = e2e.env.termination;
  lagTagLookups();
  // What a crashed launch leaves behind, launched when the file starts so that they are 30 s old
  // by the time the garbage-collection case runs.
  const { account } = e2e.env;
  const pool = `prov-${id}-orphans`;
  const launched = await account.ec2.send(
    new RunInstancesCommand({
      ImageId: account.amis.amd64,
      InstanceType: 't3.micro',
      MinCount: 2,
      MaxCount: 2,
      SubnetId: account.network.subnets[0]?.id,
      TagSpecifications: [
        {
          ResourceType: 'instance',
          Tags: [
            { Key: Tag.cluster(CLUSTER), Value: 'owned' },
            { Key: Tag.clusterName, Value: CLUSTER },
            { Key: Tag.nodePool, Value: pool },
            { Key: Tag.nodeClass, Value: e2e.nodeClassName },
            { Key: Tag.nodeClaim, Value: `ghost-${id}` },
          ],
        },
      ],
    }),
  );

  orphans = { ids: (launched.Instances ?? []).map((i) => i.InstanceId ?? ''), launchedAt: Date.now() };
  startSchedules();
});

afterAll(async () => {
  stopping = true;
  await Promise.all(loops);
});

/**
 * What Flotilla logged since line `from` (its decisions, warnings and errors) and the schedules'
 * latest errors: the story a failed wait tells with its message.
 */
function whatHappened(from: number): string {
  const lines = e2e.logLines
    .slice(from)
    .filter((l) => l['decision'] !== undefined || l['level'] === 'warn' || l['level'] === 'error');
  return [
    `logged since (${lines.length} lines, the last 20):`,
    ...lines.slice(-20).map((l) => JSON.stringify(l).slice(0, 400)),
    `schedule errors (${errors.length}, the last 5): ${errors
      .slice(-5)
      .map((e) => (e instanceof Error ? e.message : String(e)))
      .join('; ')}`,
  ].join('\n');
}

/** The app's pods as the API server has them with their Events, the Nodes, and the node simulator's problems. */
async function podsAndNodes(app: string): Promise<string> {
  const pods = await e2e.podsOf(app);
  const nodes = await e2e.env.core.listNode();
  const events = await e2e.env.core.listNamespacedEvent({ namespace: e2e.namespace });
  const mine = events.items.filter((e) => e.involvedObject?.name?.startsWith(`${app}-`) === true);
  return [
    `events: ${mine
      .map(
        (e) =>
          `${e.involvedObject?.name} ${e.lastTimestamp?.toISOString() ?? e.eventTime ?? ''} ${e.source?.component ?? e.reportingComponent ?? ''} ${e.reason}: ${e.message} (x${e.count ?? 1})`,
      )
      .join(' | ')}`,
    `pods: ${JSON.stringify(pods.map((p) => ({ name: p.metadata?.name, nodeName: p.spec?.nodeName, status: p.status })))}`,
    `nodes: ${JSON.stringify(
      nodes.items.map((n) => ({
        name: n.metadata?.name,
        deleting: n.metadata?.deletionTimestamp !== undefined,
        taints: n.spec?.taints,
        ready: n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
      })),
    )}`,
    `node simulator problems (the last 3): ${e2e.env.simulator
      .problems()
      .slice(-3)
      .map((e) => (e instanceof Error ? e.message : String(e)))
      .join('; ')}`,
  ].join('\n');
}

/** The schedules, compressed: provisioner, termination and garbage collector. */
/** The Cluster adapter the schedules use (the throttled one during the storm). */
let scheduleCluster: Cluster | undefined;

function startSchedules(): void {
  if (loops.length > 0) return;
  const { server } = e2e.env;
  const clusterNow = () => scheduleCluster ?? e2e.env.cluster;
  const loop = async (everyMs: number, work: () => Promise<unknown>) => {
    while (!stopping) {
      try {
        await work();
      } catch (error) {
        errors.push(error);
      }
      await sleep(everyMs);
    }
  };
  loops = [
    loop(500, async () => {
      runs += 1;
      if (provisionerPaused) return;
      // The whole iteration, checks included, is what a pause waits for: a run started after the
      // pause by an iteration already past the check would race the test's own run.
      scheduledRun = (async () => {
        if ((await e2e.pendingPods()).length > 0 || (await unlaunched()) > 0) {
          await asLambda(server, 'provisioner', () =>
            e2e.run(`run-${runs}-${id}`, { batchMaxMs: 1_000 }, { cluster: clusterNow() }),
          );
        }
      })().finally(() => {
        scheduledRun = undefined;
      });
      await scheduledRun;
    }),
    loop(500, async () => {
      const cluster = clusterNow();
      const terminating = (await cluster.nodeClaims()).items.filter(
        (c) => c.deleting && mine(c.nodePoolName) && !underTest.has(c.name),
      );
      await Promise.all(
        terminating.map((c) =>
          asLambda(server, 'termination', () => e2e.terminationLambda({ cluster }).terminate(c.name)),
        ),
      );
    }),
    loop(2_000, async () => {
      if (collectorPaused) return;
      await asLambda(server, 'garbage-collector', () =>
        e2e.garbageCollector({ cluster: clusterNow() }).pass(),
      );
    }),
  ];
}

async function unlaunched(): Promise<number> {
  return (await e2e.env.cluster.nodeClaims()).items.filter(
    (c) => mine(c.nodePoolName) && !c.deleting && c.status.providerId === undefined,
  ).length;
}

/** Live instances of `pool` by NodeClaim tag, and the NodeClaims of the pool. */
async function invariants(pool: string): Promise<void> {
  const instances = await e2e.instancesOf(pool);
  const claims = await e2e.nodeClaimsOf(pool);
  const byClaim = new Map<string, string[]>();
  for (const i of instances) {
    const claim = i.Tags?.find((t) => t.Key === Tag.nodeClaim)?.Value ?? '';
    byClaim.set(claim, [...(byClaim.get(claim) ?? []), i.InstanceId ?? '']);
  }
  // 0 NodeClaims with two instances.
  expect([...byClaim.entries()].filter(([, ids]) => ids.length > 1)).toEqual([]);
  // Every instance has its NodeClaim.
  const names = new Set(claims.map((c) => c.name));
  expect([...byClaim.keys()].filter((name) => !names.has(name))).toEqual([]);
  // No NodeClaim or Node left deleting.
  expect(claims.filter((c) => c.deleting).map((c) => c.name)).toEqual([]);
  expect((await e2e.nodesOf(pool)).filter((n) => n.metadata?.deletionTimestamp !== undefined)).toEqual([]);
}

describe('kill-point matrix', () => {
  it('garbage collection killed before each side effect: the orphan is terminated by the next pass, within its period plus 30 s', async () => {
    const { account, server, cluster } = e2e.env;
    const { ids, launchedAt } = orphans;

    const killPoints: string[] = [];
    for (let k = 1; ; k++) {
      await sleep(Math.max(0, launchedAt + 31_000 - Date.now()));
      const dying = new Dying(k);
      const result = await asLambda(server, 'garbage-collector', () =>
        e2e
          .garbageCollector({
            cluster: dying.wrap(cluster, CLUSTER_EFFECTS),
            cloud: dying.wrap(collector.cloud, CLOUD_EFFECTS),
          })
          .pass(),
      );
      if (dying.dead === undefined) {
        // The pass outlived every kill point, so it collected what the killed passes left.
        expect(result.failed).toEqual([]);
        break;
      }
      killPoints.push(dying.dead.before);
      progress(`garbage collection killed before side effect ${k}: ${dying.dead.before}`);
    }
    // Before TerminateInstances, then before the orphan's Node is deleted (node-sim registered one).
    expect(killPoints).toEqual(['delete', 'deleteNode']);
    const live = await account.ec2.send(
      new DescribeInstancesCommand({
        InstanceIds: ids,
        Filters: [{ Name: 'instance-state-name', Values: ['pending', 'running'] }],
      }),
    );
    expect((live.Reservations ?? []).flatMap((r) => r.Instances ?? [])).toEqual([]);
    // Within a garbage-collection period (2 min) of turning 30 s old.
    expect(Date.now() - launchedAt).toBeLessThan(30_000 + 120_000);
    const collected = logLines.filter(
      (l) => l['decision'] === 'collect' && ids.includes(String(l['instanceId'])),
    );
    expect(collected.map((l) => l['reason'])).toEqual(['orphaned instance', 'orphaned instance']);
  }, 120_000);

  it('provisioning killed before each side effect: the next runs launch exactly one instance per NodeClaim and the pod runs', async () => {
    const { server, cluster, account } = e2e.env;
    const pool = await e2e.createPool('prov', 'prov', { instanceTypes: ['m5.large'] });
    collectorPaused = false;
    const killPoints: string[] = [];
    for (let k = 1; k <= 12; k++) {
      const app = `prov-${k}`;
      // One pod per node (1.5 of m5.large's 2 vCPUs), so every kill point has its own launch. The
      // schedule waits while the killed run has the pod to itself. A one-replica Deployment, as a
      // user runs it: kube-controller-manager's taint eviction can delete a pod bound just after
      // `karpenter.sh/unregistered` went (its view of the Node lags under load), and the
      // ReplicaSet then makes another.
      provisionerPaused = true;
      await scheduledRun;
      await e2e.deploy('prov', app, 1, '1500m');
      const linesBefore = e2e.logLines.length;
      const dying = new Dying(k);
      const outcome = await asLambda(server, 'provisioner', () =>
        e2e.run(
          `killed-${k}-${id}`,
          { leaseTtlSeconds: 2, batchIdleMs: 100, batchMaxMs: 500 },
          { cluster: dying.wrap(cluster, CLUSTER_EFFECTS), cloud: dying.wrap(account.cloud, CLOUD_EFFECTS) },
        ),
      )
        .then((result) => (result.kind === 'skipped' ? `skipped: ${result.why}` : result.kind))
        .catch((error: unknown) => {
          if (!(error instanceof Killed)) throw error;
          return 'killed';
        })
        .finally(() => {
          provisionerPaused = false;
        });
      if (dying.dead !== undefined) {
        killPoints.push(`${dying.dead.before} after [${dying.done.join(', ')}]`);
        progress(`provisioning killed before side effect ${k}: ${killPoints.at(-1)}`);
      } else {
        progress(`provisioning run ${k} outlived its kill point: ${outcome}`);
      }
      await waitFor(
        `the pod of ${app} Running after a run killed at side effect ${k}`,
        async () => ((await e2e.podsOf(app)).some((p) => p.status?.phase === 'Running') ? true : undefined),
        { timeoutMs: 90_000 },
      ).catch(async (error: unknown) => {
        throw new Error(
          `${(error as Error).message}\n${whatHappened(linesBefore)}\n${await podsAndNodes(app)}`,
          { cause: error },
        );
      });
      await invariants(pool);
      if (dying.dead === undefined) break;
    }
    // Before the NodeClaim, its launch record, CreateFleet, the labels and the status at least.
    expect(killPoints.length).toBeGreaterThanOrEqual(5);
    expect(killPoints.map((p) => p.split(' ')[0]).slice(0, 5)).toEqual([
      'createNodeClaim',
      'patchNodeClaimMetadata',
      'launch',
      'patchNodeClaimMetadata',
      'patchNodeClaimStatus',
    ]);
    expect(errors).toEqual([]);
  }, 900_000);

  it('termination killed before each side effect: the node drains, its instance and both finalizers go, and the pod runs again', async () => {
    const { server, cluster, custom } = e2e.env;
    const pool = await e2e.createPool('term', 'term', { instanceTypes: ['m5.large'] });
    const replicas = 12;
    await e2e.deploy('term', 'term', replicas, '1500m');
    await e2e.allRunning('term', replicas);
    const killPoints: string[] = [];
    const deleted: string[] = [];
    /** Deletes a NodeClaim with a running pod and terminates it, killed as `killAt` says. */
    const killOnce = async (killAt: number | string): Promise<boolean> => {
      // A pod an earlier termination evicted may still be on its way to a new node.
      const claim = await waitFor(
        `a NodeClaim with a running pod for kill point ${killAt}`,
        async () => {
          const claims = (await e2e.nodeClaimsOf(pool)).filter(
            (c) => !c.deleting && !deleted.includes(c.name),
          );
          const nodes = new Set(
            (await e2e.podsOf('term'))
              .filter((p) => p.status?.phase === 'Running')
              .map((p) => p.spec?.nodeName),
          );
          return claims.find((c) => nodes.has(c.status.nodeName));
        },
        { timeoutMs: 90_000 },
      );
      underTest.add(claim.name);
      deleted.push(claim.name);
      // A user deletes the NodeClaim.
      await custom.deleteClusterCustomObject({
        group: 'karpenter.sh',
        version: 'v1',
        plural: 'nodeclaims',
        name: claim.name,
      });
      const dying = new Dying(killAt);
      let finished = false;
      for (let pass = 0; pass < 60 && dying.dead === undefined && !finished; pass++) {
        const result = await asLambda(server, 'termination', () =>
          e2e
            .terminationLambda({
              cluster: dying.wrap(cluster, CLUSTER_EFFECTS),
              cloud: dying.wrap(terminator.cloud, CLOUD_EFFECTS),
            })
            .terminate(claim.name),
        ).catch((error: unknown) => {
          if (error instanceof Killed) return undefined;
          throw error;
        });
        finished = result === undefined || result.kind !== 'continue';
        if (!finished) await sleep(500);
      }
      underTest.delete(claim.name);
      if (dying.dead === undefined) return false;
      killPoints.push(`${dying.dead.before} after [${dying.done.join(', ')}]`);
      progress(`termination killed before side effect ${killAt}: ${killPoints.at(-1)}`);
      return true;
    };
    // The drain (Node deleted, tainted, pod evicted), TerminateInstances and both finalizers (the
    // Node's and the NodeClaim's removals, apart from the NodeClaim's other metadata patches).
    const wanted = [
      'deleteNode',
      'patchNode',
      'evictPod',
      'delete',
      'patchNode:finalizer',
      'patchNodeClaimMetadata:finalizer',
    ];
    for (let k = 1; k <= replicas && (await killOnce(k)); k++);
    // A termination's effects vary in number (a pod evicted again, a status written again): one
    // that ended before the count ran out is killed before the first of each effect not yet met.
    for (const effect of wanted) {
      if (!killPoints.some((p) => p.startsWith(`${effect} `))) await killOnce(effect);
    }
    await waitFor(
      'every deleted NodeClaim, its Node and its instance gone',
      async () => {
        const left = (await e2e.nodeClaimsOf(pool)).filter((c) => deleted.includes(c.name));
        const instances = await e2e.instancesOf(pool);
        const tagged = instances.filter((i) =>
          deleted.includes(i.Tags?.find((t) => t.Key === Tag.nodeClaim)?.Value ?? ''),
        );
        return left.length === 0 && tagged.length === 0 ? true : undefined;
      },
      { timeoutMs: 120_000 },
    );
    await e2e.allRunning('term', replicas);
    await invariants(pool);
    const before = killPoints.map((p) => p.split(' ')[0]);
    for (const effect of wanted) {
      expect(before).toContain(effect);
    }
    expect(errors).toEqual([]);
  }, 900_000);
});

describe('duplicate deliveries', () => {
  /** Invokes `handler` on `bodies` in batches of 10, `concurrency` invocations at a time. */
  async function deliver(
    bodies: readonly string[],
    concurrency: number,
    handler: (event: unknown) => Promise<unknown>,
  ): Promise<void> {
    const batches: string[][] = [];
    for (let i = 0; i < bodies.length; i += 10) batches.push(bodies.slice(i, i + 10));
    let next = 0;
    const worker = async () => {
      while (next < batches.length) {
        const batch = batches[next] ?? [];
        const n = next;
        next += 1;
        await handler({
          Records: batch.map((body, i) => ({ messageId: `m-${n}-${i}`, receiptHandle: `r-${n}-${i}`, body })),
        });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }

  it('1,000 deliveries of the same pod events and of one spot interruption, 10 at a time amid the schedules: one instance per needed node, one drain', async () => {
    const { server, cluster, account } = e2e.env;
    startSchedules();
    const pool = await e2e.createPool('dup', 'dup', { instanceTypes: ['m5.large'], capacityTypes: ['spot'] });
    await e2e.deploy('dup', 'dup', 3, '1500m');
    const pods = await e2e.podsOf('dup');
    const podEvents = Array.from({ length: 1_000 }, (_, i) => {
      const pod = pods[i % pods.length];
      return JSON.stringify({
        version: podEventVersion,
        kind: 'PodUnschedulable',
        cluster: CLUSTER,
        namespace: pod?.metadata?.namespace,
        name: pod?.metadata?.name,
        uid: pod?.metadata?.uid,
        observedAt: new Date().toISOString(),
      });
    });
    const provisioner = makeProvisionerHandler({
      clusterName: CLUSTER,
      logger: e2e.logger,
      metrics: e2e.metrics,
      provision: (holder) => e2e.run(holder, { batchIdleMs: 100, batchMaxMs: 300 }),
    });
    let invocation = 0;
    const podPhase = logLines.length;
    // The pod-event queue's event source mapping runs at most 2 at once.
    await deliver(podEvents, 2, (event) => {
      invocation += 1;
      const n = invocation;
      return asLambda(server, 'provisioner', () => provisioner(event, { awsRequestId: `dup-${n}-${id}` }));
    });
    const running = await e2e.allRunning('dup', 3);
    const madeAgain = await madeAgainAfterEviction('dup', pods, running);
    /** Lines of `message` since `from` (of this test's pool, when the line names one). */
    const count = (message: string, from: number) =>
      logLines
        .slice(from)
        .filter((l) => l['message'] === message && (l['nodePool'] === undefined || l['nodePool'] === pool))
        .length;
    progress(
      `1,000 pod events in 100 provisioner invocations: ${count('launch decided', podPhase)} launches for the 3 pods, ${count('provisioning skipped', podPhase)} runs skipped (lease held or nothing to do), ${madeAgain} pods made again after a taint eviction`,
    );
    // A failure carries the provisioner's lines of this phase: which run planned which pod, and why.
    const provisionerLines = () =>
      JSON.stringify(
        logLines
          .slice(podPhase)
          .filter(
            (l) =>
              l['level'] === 'warn' ||
              (['launch', 'plan'].includes(String(l['decision'])) &&
                (l['nodePool'] === undefined || l['nodePool'] === pool)),
          ),
        null,
        1,
      );
    // One node per pod, and at most one more for each pod made again after a taint eviction.
    await e2e.expectNodesFor('dup', (await e2e.instancesOf(pool)).length, 3, provisionerLines);
    await e2e.expectNodesFor('dup', (await e2e.nodeClaimsOf(pool)).length, 3, provisionerLines);

    // One spot interruption warning for the first pod's node, delivered 1,000 times.
    const target = (await e2e.nodeClaimsOf(pool)).find(
      (c) => c.status.nodeName === running[0]?.spec?.nodeName,
    );
    const instanceId = target?.status.providerId?.split('/').pop() ?? '';
    const warning = JSON.parse(
      readFileSync(new URL('../fixtures/events/spot-interruption.json', import.meta.url), 'utf8'),
    ) as Record<string, unknown> & { detail: Record<string, unknown> };
    const event = JSON.stringify({
      ...warning,
      resources: [`arn:aws:ec2:us-east-1a:instance/${instanceId}`],
      detail: { ...warning.detail, 'instance-id': instanceId },
    });
    const interruptionAws = account.as('interruption');
    const interruption = makeInterruptionHandler(
      setUpInterruption({
        cluster,
        cloud: interruptionAws.cloud,
        terminationQueue: makeSqsTerminationQueue(interruptionAws.sqs, account.stack.queueUrls.termination),
        logger: e2e.logger,
        metrics: e2e.metrics,
        eventLeases: {
          store: new DynamoLeaseStore(interruptionAws.dynamodb, TABLE),
          clusterName: CLUSTER,
          clock: systemClock,
        },
      }),
    );
    let delivery = 0;
    const interruptionPhase = logLines.length;
    await deliver(
      Array.from({ length: 1_000 }, () => event),
      10,
      (batch) => {
        delivery += 1;
        const n = delivery;
        return asLambda(server, 'interruption', () =>
          interruption(batch, { awsRequestId: `int-${n}-${id}` }),
        );
      },
    );
    await waitFor(
      'the interrupted NodeClaim gone and its pod running elsewhere',
      async () => {
        const claims = await e2e.nodeClaimsOf(pool);
        const pods = await e2e.podsOf('dup');
        return claims.every((c) => c.name !== target?.name) &&
          pods.length === 3 &&
          pods.every((p) => p.status?.phase === 'Running')
          ? true
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    progress(
      `1,000 deliveries of one interruption in 100 invocations: ${count('interruption handled', interruptionPhase)} handled, ${count('interruption duplicate', interruptionPhase)} duplicates in a batch, ${count('interruption in progress elsewhere', interruptionPhase)} handed back while another invocation acted`,
    );
    const lines = logLines.filter((l) => l['nodeClaim'] === target?.name);
    // One NodeClaim deleted for the interruption, one drain of its node.
    expect(
      lines.filter((l) => l['decision'] === 'handleInterruption' && l['action'] === 'cordonAndDrain'),
    ).toHaveLength(1);
    expect(lines.filter((l) => l['decision'] === 'taint')).toHaveLength(1);
    expect(
      lines
        .filter((l) => l['decision'] === 'drain' && l['action'] === 'evict')
        .reduce((n, l) => n + Number(l['evicted']), 0),
    ).toBe(1);
    // Exactly one instance per needed node: the three, less the interrupted one, plus its replacement.
    const launchedLines = logLines.filter(
      (l) => l['decision'] === 'launch' && l['outcome'] === 'launched' && l['nodePool'] === pool,
    );
    // Besides: one for each pod a taint eviction made again, in either phase.
    const launchedIds = new Set(launchedLines.map((l) => l['instanceId'])).size;
    await e2e.expectNodesFor('dup', launchedIds, 4, provisionerLines);
    await e2e.expectNodesFor('dup', (await e2e.instancesOf(pool)).length, 3, provisionerLines);
    await invariants(pool);
    expect(errors).toEqual([]);
  }, 600_000);
});

/**
 * How many of `app`'s pods `now` were made after `initial` because kube-controller-manager's
 * taint-eviction controller deleted one (`e2e.taintEvictions`). Such a pod waits while the
 * deleted one still holds its Node's room, which the provisioner counts as kube-scheduler (and
 * Karpenter) does: it is a need of its own and may get a node. Each must have its eviction on
 * record (the controller posts its Event a moment later); a pod made again for any other reason
 * fails the test here.
 */
async function madeAgainAfterEviction(
  app: string,
  initial: readonly V1Pod[],
  now: readonly V1Pod[],
): Promise<number> {
  const first = new Set(initial.map((p) => p.metadata?.uid));
  const added = now.filter((p) => !first.has(p.metadata?.uid)).length;
  if (added === 0) return 0;
  await waitFor(
    `a TaintManagerEviction Event for each of the ${added} pods of ${app} made again`,
    async () => ((await e2e.taintEvictions(app)).length >= added ? true : undefined),
    { timeoutMs: 30_000 },
  );
  return added;
}

describe('throttling storm', () => {
  const LEVEL = `flotilla-throttled-${id}`;

  /** A deterministic uniform [0, 1) (mulberry32), so a storm can be replayed. */
  function seeded(seed: number): () => number {
    let a = seed;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /**
   * Half of the client's EC2 calls answer RequestLimitExceeded, inside the SDK's retries. For a
   * launch or a termination, half of those reached EC2 first (the answer was lost on the way back).
   */
  function storm(
    client: { middlewareStack: EC2Client['middlewareStack'] },
    random: () => number,
    counts: { calls: number; throttled: number },
  ) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        counts.calls += 1;
        if (random() >= 0.5) return next(args);
        counts.throttled += 1;
        const mutating =
          context.commandName === 'CreateFleetCommand' || context.commandName === 'TerminateInstancesCommand';
        if (mutating && random() < 0.5) await next(args);
        throw Object.assign(new Error('Request limit exceeded.'), {
          name: 'RequestLimitExceeded',
          $fault: 'client',
          $metadata: { httpStatusCode: 503 },
        });
      },
      { step: 'finalizeRequest', priority: 'low', name: 'throttling-storm' },
    );
  }

  let unthrottle: () => Promise<void> = async () => undefined;
  afterAll(() => unthrottle());

  it('half of the EC2 calls throttled and the API server answering 429 to a share: every pod placed, nothing orphaned, every error typed', async () => {
    const { kc, account, custom } = e2e.env;
    startSchedules();
    // API Priority and Fairness gives Flotilla's throttled user (the controller group's RBAC) a
    // priority level of a few seats that rejects what does not fit, as a busy API server does.
    unthrottle = await throttleUser(kc, LEVEL, 400);
    const throttled = { kind: 'file', path: (await kube()).throttledKubeconfigPath } as const;
    const kubeLines: Record<string, unknown>[] = [];
    scheduleCluster = makeKubeCluster({
      connection: makeKubeHttp(makeKubeAccess(throttled)),
      logger: makeLogger({}, { level: 'debug', sink: (line) => kubeLines.push(JSON.parse(line)) }),
      callTimeoutMs: 15_000,
    });
    // Other clients of the same priority level keep its seats busy, as on a busy API server: 64
    // requests in flight at all times, each loop sending its next as soon as one returns (batches
    // that waited for their slowest request left seats free for whole moments, and Flotilla's
    // calls could all pass).
    const neighbour = makeKubeCluster({
      connection: makeKubeHttp(makeKubeAccess(throttled)),
      logger: makeLogger({}, { sink: () => undefined }),
    });
    let storming = true;
    const noise = Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        // Lists of every pod hold a seat longer than lists of the few Nodes.
        const read = i % 2 === 0 ? () => neighbour.nodes() : () => neighbour.boundPods();
        while (storming) await read().catch(() => undefined);
      }),
    );
    const random = seeded(15);
    const counts = { calls: 0, throttled: 0 };
    const clients = [account.lambdaEc2, terminator.ec2, collector.ec2];
    for (const client of clients) storm(client, random, counts);
    const errorsBefore = errors.length;
    try {
      const pool = await e2e.createPool('storm', 'storm', { instanceTypes: ['m5.large'] });
      await e2e.deploy('storm', 'storm', 6, '1500m');
      await waitFor(
        '6 pods of storm Running through the storm',
        async () => {
          const pods = await e2e.podsOf('storm');
          return pods.length === 6 && pods.every((p) => p.status?.phase === 'Running') ? true : undefined;
        },
        { timeoutMs: 240_000 },
      );
      // Scaled down, and a user deletes the emptied NodeClaims: termination and garbage collection
      // work through the storm too.
      await e2e.scale('storm', 2);
      await e2e.allRunning('storm', 2);
      // Busy by the Nodes the pods run on, matched to NodeClaims by provider ID: under the storm a
      // pod may run on a Node whose NodeClaim is not registered yet (no status.nodeName).
      const busyNodes = new Set((await e2e.podsOf('storm')).map((p) => p.spec?.nodeName));
      const busy = new Set(
        (await e2e.nodesOf(pool))
          .filter((n) => busyNodes.has(n.metadata?.name))
          .map((n) => n.spec?.providerID),
      );
      const empty = (await e2e.nodeClaimsOf(pool)).filter(
        (c) => !busyNodes.has(c.status.nodeName) && !busy.has(c.status.providerId),
      );
      for (const claim of empty) {
        await custom.deleteClusterCustomObject({
          group: 'karpenter.sh',
          version: 'v1',
          plural: 'nodeclaims',
          name: claim.name,
        });
      }
      const deletedFrom = logLines.length;
      const gone = new Set(empty.map((c) => c.name));
      const goneInstances = new Set(empty.flatMap((c) => c.status.providerId?.split('/').at(-1) ?? []));
      // Those NodeClaims, their instances and Nodes go. The pool may keep more than the two busy
      // nodes: a pod that kube-controller-manager evicts under the storm (a NotReady taint) is a
      // new need, and its node stays; every storm pod ends placed.
      await waitFor(
        'the emptied NodeClaims, their Nodes and instances gone',
        async () => {
          const claims = (await e2e.nodeClaimsOf(pool)).filter((c) => gone.has(c.name));
          const instances = (await e2e.instancesOf(pool)).filter((i) =>
            goneInstances.has(i.InstanceId ?? ''),
          );
          const nodes = (await e2e.nodesOf(pool)).filter((n) =>
            goneInstances.has(n.spec?.providerID?.split('/').at(-1) ?? ''),
          );
          if (claims.length === 0 && instances.length === 0 && nodes.length === 0) return true;
          // Not yet: what is left, for the timeout's message.
          throw new Error(
            `left: NodeClaims ${JSON.stringify(claims.map((c) => [c.name, c.deleting]))}, instances ${JSON.stringify(instances.map((i) => i.InstanceId))}, ${nodes.length} Nodes\n${whatHappened(deletedFrom)}`,
          );
        },
        { timeoutMs: 240_000 },
      );
      const answered429 = () =>
        kubeLines.filter((l) => l['message'] === 'kube call retried' && l['httpStatus'] === 429).length;
      // How many of Flotilla's calls meet a full priority level depends on how the neighbour's
      // requests and the schedules' runs interleave: when none has yet, the storm goes on through
      // more runs until one does, and the cluster is checked after that too.
      await waitFor(
        "one of Flotilla's API requests answered 429 and retried",
        async () => (answered429() > 0 ? true : undefined),
        { timeoutMs: 240_000 },
      );
      await e2e.allRunning('storm', 2);
      await invariants(pool);
      const rejected = answered429();
      progress(
        `throttling storm: ${counts.throttled} of ${counts.calls} EC2 calls throttled, ${rejected} API requests answered 429 and retried, ${errors.length - errorsBefore} invocations failed (typed)`,
      );
      expect(counts.throttled).toBeGreaterThan(0);
      expect(rejected).toBeGreaterThan(0);
      // 0 unhandled errors: an invocation that failed did so with a typed error, and the next one
      // went on.
      const untyped = errors.slice(errorsBefore).filter((e) => !(e instanceof FlotillaError));
      expect(untyped).toEqual([]);
    } finally {
      storming = false;
      await noise;
      for (const client of clients) client.middlewareStack.remove('throttling-storm');
      scheduleCluster = undefined;
    }
  }, 600_000);
});
