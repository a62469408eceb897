import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeInstancesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PolicyV1Api,
  type V1Deployment,
  type V1Pod,
  type V1PodSpec,
  type V1Toleration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, expect } from 'vitest';
import { makeEc2CatalogSource } from '../../shared/adapters/aws/catalog-source.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeFollowUpScheduler } from '../../shared/adapters/aws/follow-up.ts';
import { makeImpairedInstanceReader } from '../../shared/adapters/aws/instance-status.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import { Finalizer } from '../../shared/core/index.ts';
import { type ManualClock, makeManualClock, systemClock } from '../../shared/ports/clock.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import {
  type GarbageCollector,
  type GarbageCollectorPorts,
  setUpGarbageCollector,
} from '../../shared/usecases/garbage-collection/setup.ts';
import { reconcileNodeClasses } from '../../shared/usecases/nodeclass/nodeclass.ts';
import type { ClaimOutcome, ProvisionResult } from '../../shared/usecases/provisioning/provision.ts';
import {
  type Provisioner,
  type ProvisionerConfig,
  type ProvisionerPorts,
  setUpProvisioner,
} from '../../shared/usecases/provisioning/setup.ts';
import type { TerminationSweepDeps } from '../../shared/usecases/termination/driver.ts';
import { relayViaQueue, viaQueue } from '../../shared/usecases/termination/handover.ts';
import { setUpTermination, type TerminationSetupPorts } from '../../shared/usecases/termination/setup.ts';
import { quietMetrics, recordingMetrics } from '../fixtures/metrics.ts';
import { terminateThroughFlotilla } from '../harness/cleanup.ts';
import { kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { NodeSimulator } from '../harness/node-sim.ts';
import { waitFor } from '../harness/proc.ts';
import { type LambdaAws, setUpAccount, TABLE } from '../integration/aws/cloud-fixture.ts';
import { CLUSTER, nodeClassObject, silentLogger } from '../integration/aws/fixtures.ts';

// The end-to-end set-up shared by the provisioner e2e files: moto with a fresh account (the stack
// deployed) and the offering catalog, the shared API server with an EC2NodeClass as a user applies
// it (no status: Flotilla's controllers write it), the node simulator playing kubelet, and the
// provisioner Lambda, set up as its handler sets it up (setUpProvisioner), whose controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePool status)
// running every 500 ms. Flotilla's code runs as the stack ships it: its Kubernetes client as the
// flotilla:controller group, its AWS calls with the provisioner's role (the IAM check holds them to
// its policy). Everything a file creates is scoped by a run id: NodePools carry the template label
// and taint `flotilla-e2e/run=<id>`, and only that file's pods select and tolerate them, because
// the API server is shared with other test files.

export const RUN_LABEL = 'flotilla-e2e/run';
/** Each test's pools and pods also share a group label, so tests never use each other's nodes. */
export const GROUP_LABEL = 'flotilla-e2e/group';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
const karpenter = { group: 'karpenter.sh', version: 'v1' };
const LIFECYCLE_EVERY_MS = 500;
const ignore = () => undefined;

export interface PoolSpec {
  readonly instanceTypes: readonly string[];
  /** @default ['on-demand'] */
  readonly capacityTypes?: readonly string[];
  readonly weight?: number;
  readonly taints?: readonly { key: string; value?: string; effect: string }[];
  readonly startupTaints?: readonly { key: string; value?: string; effect: string }[];
  readonly limits?: Record<string, string>;
  /** More NodePool requirements. */
  readonly requirements?: readonly { key: string; operator: string; values?: string[] }[];
  /** The template's terminationGracePeriod (e.g. `20s`). */
  readonly terminationGracePeriod?: string;
  /** @default '720h' */
  readonly expireAfter?: string;
  /** `spec.disruption` as a user writes it (the API server fills in the defaults). */
  readonly disruption?: Record<string, unknown>;
  /** `spec.replicas`: a static NodePool. */
  readonly replicas?: number;
  /** The EC2NodeClass it refers to. @default this file's own */
  readonly nodeClassName?: string;
  /** The NodePool's annotations, as a user writes them. */
  readonly annotations?: Record<string, string>;
}

/** How a test pod differs from the plain one (1 container, `cpu` and 128Mi requested). */
export interface PodExtras {
  readonly tolerations?: readonly V1Toleration[];
  /** NVIDIA GPUs requested (and limited to). */
  readonly gpus?: number;
  /** A zone topology spread (maxSkew 1, DoNotSchedule) over the pods with the same labels. */
  readonly spreadOverZones?: boolean;
  /** More node selector labels. */
  readonly nodeSelector?: Record<string, string>;
  /** Pod annotations (e.g. `karpenter.sh/do-not-disrupt`); Deployments only. */
  readonly annotations?: Record<string, string>;
  /** @default 0 */
  readonly terminationGracePeriodSeconds?: number;
}

interface Env {
  /** A cluster user's (and kubelet's) kubeconfig: test set-up only. */
  readonly kc: KubeConfig;
  /** Flotilla's own kubeconfig (the flotilla:controller group). */
  readonly controllerKc: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly custom: CustomObjectsApi;
  /** Flotilla's Cluster adapter, as the controller identity. */
  readonly cluster: Cluster;
  readonly account: Awaited<ReturnType<typeof setUpAccount>>;
  /** The termination Lambda's AWS clients (the drain at teardown, and tests that terminate). */
  readonly termination: LambdaAws;
  /** The clock of the AWS adapters (offering cache, ICE back-offs); it stands still. */
  readonly awsClock: ManualClock;
  readonly simulator: NodeSimulator;
  readonly server: Moto;
  /** Flotilla's kubeconfig file (for handlers, which read KUBECONFIG). */
  readonly controllerKubeconfigPath: string;
}

/** Counts calls of one SDK command on `client` until `stop()`. */
export function countCalls(client: EC2Client, commandName: string): { count(): number; stop(): void } {
  let count = 0;
  const name = `count-${commandName}-${randomBytes(3).toString('hex')}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === commandName) count += 1;
      return next(args);
    },
    { step: 'initialize', name },
  );
  return { count: () => count, stop: () => client.middlewareStack.remove(name) };
}

export function launched(claims: readonly ClaimOutcome[]) {
  return claims.flatMap((c) => (c.kind === 'launched' ? [c] : []));
}

/** The provisioner e2e world of one test file; its hooks are registered on creation. */
export class ProvisionerE2E {
  readonly id = randomBytes(3).toString('hex');
  readonly namespace: string;
  readonly nodeClassName = `prov-${this.id}`;
  readonly runToleration: V1Toleration = {
    key: RUN_LABEL,
    operator: 'Equal',
    value: this.id,
    effect: 'NoSchedule',
  };
  /** Every log line of provisioning and of the lifecycle, parsed. */
  readonly logLines: Record<string, unknown>[] = [];
  readonly logger = makeLogger({}, { level: 'info', sink: (line) => this.logLines.push(JSON.parse(line)) });
  /** The metrics of the decisions of provisioning, the lifecycle and termination, kept. */
  readonly metrics = recordingMetrics({ cluster: CLUSTER });
  /** Errors of lifecycle passes (each pass is retried by the next). */
  readonly lifecycleErrors: unknown[] = [];
  private readonly createdPools: string[] = [];
  private readonly createdNodeClasses: string[] = [];
  /** The bare pods this run made (`createPod`), by name, to make again after a taint eviction. */
  private readonly barePods = new Map<string, { readonly app: string; readonly body: V1Pod }>();
  private state: Env | undefined;
  private lifecycleTimer: NodeJS.Timeout | undefined;
  private lifecyclePass: Promise<void> | undefined;
  private passes = 0;

  /**
   * @param options.lifecycleLoop run the NodeClaim lifecycle every 500 ms as a controller would;
   *   off when the test drives it through the provisioner Lambda's handler. @default true
   */
  constructor(
    prefix: string,
    private readonly options: { readonly lifecycleLoop?: boolean } = {},
  ) {
    this.namespace = `${prefix}-${this.id}`;
    beforeAll(() => this.setUp());
    afterAll(() => this.tearDown());
  }

  get env(): Env {
    if (this.state === undefined) throw new Error('the e2e fixture is used before its beforeAll ran');
    return this.state;
  }

  private async setUp(): Promise<void> {
    const [server, cube] = await Promise.all([moto(), kube()]);
    const kc = cube.userKubeConfig;
    await resetMoto(server);
    const awsClock = makeManualClock(new Date());
    const account = await setUpAccount(server, awsClock);
    const catalog = await makeEc2CatalogSource({
      ec2: account.ec2,
      region: 'us-east-1',
      clock: awsClock,
      logger: silentLogger,
    }).fetchCatalog();
    await account.cloud.offeringCache.writeCatalog(catalog);

    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const cluster = makeKubeCluster({
      connection: cube.controllerConnection(),
      logger: silentLogger,
      callTimeoutMs: 15_000,
    });
    await core.createNamespace({ body: { metadata: { name: this.namespace } } });
    const nodeClass = nodeClassObject({ tags: { team: 'platform' } }, this.nodeClassName);
    delete (nodeClass['metadata'] as Record<string, unknown>)['generation'];
    await custom.createClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      body: nodeClass,
    });
    const simulator = NodeSimulator.start({ ec2: account.ec2, kubeConfig: kc, clusterName: CLUSTER });
    this.state = {
      kc,
      controllerKc: cube.controllerKubeConfig,
      core,
      apps: kc.makeApiClient(AppsV1Api),
      custom,
      cluster,
      account,
      termination: account.as('termination'),
      awsClock,
      simulator,
      server,
      controllerKubeconfigPath: cube.controllerKubeconfigPath,
    };
    if (this.options.lifecycleLoop ?? true) this.scheduleLifecycle();
  }

  private scheduleLifecycle(): void {
    this.lifecycleTimer = setTimeout(async () => {
      this.lifecyclePass = this.controllersPass().then(ignore, (error: unknown) => {
        this.lifecycleErrors.push(error);
      });
      await this.lifecyclePass;
      if (this.lifecycleTimer !== undefined) this.scheduleLifecycle();
    }, LIFECYCLE_EVERY_MS);
  }

  /** One controllers pass of the provisioner Lambda (EC2NodeClasses, NodeClaims, NodePools). */
  controllersPass() {
    this.passes += 1;
    return this.provisioner().controllersPass(`controllers-${this.id}-${this.passes}`, new Date());
  }

  private async tearDown(): Promise<void> {
    if (this.lifecycleTimer !== undefined) clearTimeout(this.lifecycleTimer);
    this.lifecycleTimer = undefined;
    await this.lifecyclePass;
    if (this.state === undefined) return;
    const { core, custom, cluster, simulator, termination, account } = this.state;
    // What a user does to uninstall: delete the workloads, the NodePools and the EC2NodeClass; then
    // Flotilla's termination and NodeClass controller finish (the node simulator stays up, so a
    // terminated instance's Node goes away as in a cluster).
    await core.deleteNamespace({ name: this.namespace }).catch(ignore);
    for (const pool of this.createdPools) {
      await custom.deleteClusterCustomObject({ ...karpenter, plural: 'nodepools', name: pool }).catch(ignore);
    }
    const classNames = [this.nodeClassName, ...this.createdNodeClasses];
    for (const name of classNames) {
      await custom
        .deleteClusterCustomObject({
          group: 'karpenter.k8s.aws',
          version: 'v1',
          plural: 'ec2nodeclasses',
          name,
        })
        .catch(ignore);
    }
    await terminateThroughFlotilla(
      { cluster, cloud: termination.cloud, logger: silentLogger, metrics: quietMetrics },
      // This run's NodeClaims: its NodePools', and the standalone ones it made with its label.
      (claim) =>
        claim.nodePoolName === undefined
          ? claim.labels[RUN_LABEL] === this.id
          : this.createdPools.includes(claim.nodePoolName),
    );
    const nodeClasses = (await cluster.nodeClasses()).items.filter((c) => classNames.includes(c.name));
    await reconcileNodeClasses(
      {
        cluster,
        resolver: account.resolver,
        leases: this.leases(),
        clock: systemClock,
        logger: silentLogger,
        metrics: quietMetrics,
      },
      { holder: `teardown-${this.id}`, scope: 'all' },
      { nodeClasses, nodeClaims: (await cluster.nodeClaims()).items },
    );
    await simulator.stop();
    const events = await core.listNamespacedEvent({ namespace: 'default' }).catch(() => ({ items: [] }));
    for (const e of events.items) {
      if (e.involvedObject.name?.includes(this.id)) {
        await core
          .deleteNamespacedEvent({ namespace: 'default', name: e.metadata?.name ?? '' })
          .catch(ignore);
      }
    }
  }

  /**
   * Another EC2NodeClass of this run (`nodeClassObject` with `spec` over its defaults), as a user
   * applies it; removed with the file's own at teardown.
   */
  async createNodeClass(suffix: string, spec: Record<string, unknown>): Promise<string> {
    const name = `prov-${this.id}-${suffix}`;
    this.createdNodeClasses.push(name);
    const body = nodeClassObject(spec, name);
    delete (body['metadata'] as Record<string, unknown>)['generation'];
    await this.env.custom.createClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      body,
    });
    return name;
  }

  /** A NodePool of this run, as a user applies it (Flotilla's controllers write its status). */
  async createPool(group: string, suffix: string, spec: PoolSpec): Promise<string> {
    const name = `prov-${this.id}-${suffix}`;
    this.createdPools.push(name);
    await this.env.custom.createClusterCustomObject({
      ...karpenter,
      plural: 'nodepools',
      body: {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: { name, ...(spec.annotations === undefined ? {} : { annotations: spec.annotations }) },
        spec: {
          ...(spec.weight === undefined ? {} : { weight: spec.weight }),
          ...(spec.replicas === undefined ? {} : { replicas: spec.replicas }),
          ...(spec.limits === undefined ? {} : { limits: spec.limits }),
          ...(spec.disruption === undefined ? {} : { disruption: spec.disruption }),
          template: {
            metadata: { labels: { [RUN_LABEL]: this.id, [GROUP_LABEL]: group } },
            spec: {
              nodeClassRef: {
                group: 'karpenter.k8s.aws',
                kind: 'EC2NodeClass',
                name: spec.nodeClassName ?? this.nodeClassName,
              },
              requirements: [
                {
                  key: 'karpenter.sh/capacity-type',
                  operator: 'In',
                  values: [...(spec.capacityTypes ?? ['on-demand'])],
                },
                { key: 'node.kubernetes.io/instance-type', operator: 'In', values: [...spec.instanceTypes] },
                ...(spec.requirements ?? []),
              ],
              taints: [{ key: RUN_LABEL, value: this.id, effect: 'NoSchedule' }, ...(spec.taints ?? [])],
              ...(spec.startupTaints === undefined ? {} : { startupTaints: spec.startupTaints }),
              expireAfter: spec.expireAfter ?? '720h',
              ...(spec.terminationGracePeriod === undefined
                ? {}
                : { terminationGracePeriod: spec.terminationGracePeriod }),
            },
          },
        },
      },
    });
    return name;
  }

  /** The spec of a pod of `group` requesting `cpu`, tolerating this run's taint. */
  podSpec(group: string, labels: Record<string, string>, cpu: string, extras: PodExtras = {}): V1PodSpec {
    const gpus = extras.gpus === undefined ? {} : { 'nvidia.com/gpu': String(extras.gpus) };
    return {
      nodeSelector: { [RUN_LABEL]: this.id, [GROUP_LABEL]: group, ...extras.nodeSelector },
      tolerations: [this.runToleration, ...(extras.tolerations ?? [])],
      terminationGracePeriodSeconds: extras.terminationGracePeriodSeconds ?? 0,
      ...(extras.spreadOverZones
        ? {
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: ZONE_LABEL,
                whenUnsatisfiable: 'DoNotSchedule',
                labelSelector: { matchLabels: labels },
              },
            ],
          }
        : {}),
      containers: [
        {
          name: 'app',
          image: 'public.ecr.aws/docker/library/busybox:stable',
          resources: {
            requests: { cpu, memory: '128Mi', ...gpus },
            ...(extras.gpus ? { limits: gpus } : {}),
          },
        },
      ],
    };
  }

  /** A Deployment of `replicas` pods requesting `cpu` each; resolves once kube-scheduler gave up on all. */
  async deploy(
    group: string,
    name: string,
    replicas: number,
    cpu: string,
    extras: PodExtras = {},
  ): Promise<void> {
    const labels = { app: name };
    await this.env.apps.createNamespacedDeployment({
      namespace: this.namespace,
      body: {
        metadata: { name, namespace: this.namespace },
        spec: {
          replicas,
          selector: { matchLabels: labels },
          template: {
            metadata: {
              labels,
              ...(extras.annotations === undefined ? {} : { annotations: extras.annotations }),
            },
            spec: this.podSpec(group, labels, cpu, extras),
          },
        },
      },
    });
    await this.unschedulable(`app=${name}`, replicas);
  }

  /**
   * A user's edit of a Deployment: read, edit, replace, and on a 409 (the deployment controller
   * wrote its status in between) read and edit again, as `kubectl edit` and `kubectl scale` do.
   */
  async editDeployment(name: string, edit: (deployment: V1Deployment) => void): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.env.apps.readNamespacedDeployment({ name, namespace: this.namespace });
      edit(current);
      try {
        await this.env.apps.replaceNamespacedDeployment({ name, namespace: this.namespace, body: current });
        return;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (Number(code) !== 409 || attempt >= 10) throw error;
      }
    }
  }

  /** `kubectl scale deployment <name> --replicas=<replicas>`. */
  async scale(name: string, replicas: number): Promise<void> {
    await this.editDeployment(name, (deployment) => {
      if (deployment.spec === undefined) throw new Error(`deployment ${name} has no spec`);
      deployment.spec.replicas = replicas;
    });
  }

  /** A bare pod labelled `app=<app>`; resolves once kube-scheduler marked it Unschedulable. */
  async createPod(group: string, app: string, name: string, cpu: string): Promise<void> {
    const labels = { app };
    const body: V1Pod = {
      metadata: { name, namespace: this.namespace, labels },
      spec: this.podSpec(group, labels, cpu),
    };
    this.barePods.set(name, { app, body });
    await this.env.core.createNamespacedPod({ namespace: this.namespace, body });
    await this.unschedulable(`metadata.name=${name}`, 1, true);
  }

  /**
   * Makes again, as its user would, each bare pod of `app` that kube-controller-manager's
   * taint-eviction controller deleted: it learns of Node taints and pod bindings on two watches
   * with no order between them (kubernetes/kubernetes#119862), so a pod bound the moment
   * `karpenter.sh/unregistered:NoExecute` is lifted can be deleted, and a bare pod has no owner to
   * make it again. Only a pod with its TaintManagerEviction Event is made again.
   */
  private async remakeEvictedBarePods(app: string, present: readonly V1Pod[]): Promise<void> {
    const mine = [...this.barePods].filter(
      ([name, pod]) => pod.app === app && !present.some((p) => p.metadata?.name === name),
    );
    if (mine.length === 0) return;
    const evicted = new Set(await this.taintEvictions(app));
    for (const [name, pod] of mine) {
      if (!evicted.has(name)) continue;
      await this.env.core
        .createNamespacedPod({ namespace: this.namespace, body: structuredClone(pod.body) })
        .catch((error: unknown) => {
          // Still terminating (409): the next look makes it again.
          if ((error as { code?: number }).code !== 409) throw error;
        });
    }
  }

  /** A PodDisruptionBudget named `app` keeping `minAvailable` pods labelled `app=<app>`. */
  async podDisruptionBudget(app: string, minAvailable: number): Promise<void> {
    await this.env.kc.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: this.namespace,
      body: { metadata: { name: app }, spec: { minAvailable, selector: { matchLabels: { app } } } },
    });
  }

  /** The pods of this run (all of them, or those `selector` picks) kube-scheduler marked Unschedulable. */
  async pendingPods(selector: { labelSelector?: string; fieldSelector?: string } = {}) {
    const pods = await this.env.core.listNamespacedPod({ namespace: this.namespace, ...selector });
    return pods.items.filter((p) =>
      p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'),
    );
  }

  /**
   * What a kubelet of this file's NodePools of `group` puts on its Node besides a NodePool's labels:
   * the run and group labels, and the run's taint.
   */
  nodeMarks(group: string) {
    return {
      labels: { [RUN_LABEL]: this.id, [GROUP_LABEL]: group },
      taints: [{ key: RUN_LABEL, value: this.id, effect: 'NoSchedule' }],
    };
  }

  private async unschedulable(selector: string, count: number, byField = false): Promise<void> {
    await waitFor(
      `${count} pods (${selector}) marked Unschedulable`,
      async () => {
        const pending = await this.pendingPods(
          byField ? { fieldSelector: selector } : { labelSelector: selector },
        );
        return pending.length === count ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
  }

  /**
   * The provisioner Lambda set up as its handler sets it up, on this world's real adapters (the
   * provisioner's role, the controller identity): this file's lease and short batching windows,
   * and Karpenter's NodeOverlay and StaticCapacity gates on (the overlay and static NodePool tests
   * need them; both are off by default), unless `config` says otherwise, and `ports` in place of
   * the world's.
   */
  provisioner(config: ProvisionerConfig = {}, ports: Partial<ProvisionerPorts> = {}): Provisioner {
    const { cluster, account } = this.env;
    return setUpProvisioner(
      {
        cluster,
        cloud: account.cloud,
        leases: this.leases(),
        clock: systemClock,
        sleep: (ms) => sleep(ms),
        logger: this.logger,
        metrics: this.metrics,
        nodeClassResolver: account.resolver,
        ...ports,
      },
      {
        leaseName: `provisioner#${this.id}`,
        batchIdleMs: 300,
        batchMaxMs: 3_000,
        nodeOverlay: true,
        staticCapacity: true,
        ...config,
      },
    );
  }

  /**
   * The provisioner as its Lambda's handler sets it up with the stack's queues: termination
   * requests, and delayed follow-ups on `podEventQueueUrl`, sent with the provisioner's role.
   */
  queuedProvisioner(podEventQueueUrl: string, config: ProvisionerConfig = {}): Provisioner {
    const { account } = this.env;
    const own = account.as('provisioner');
    const leases = this.leases();
    const terminationQueue = makeSqsTerminationQueue(own.sqs, account.stack.queueUrls.termination);
    return this.provisioner(config, {
      leases,
      requestTermination: (nodeClaim) => terminationQueue.enqueue({ nodeClaim }, 0),
      relayDeletion: relayViaQueue(terminationQueue),
      scheduleFollowUp: makeFollowUpScheduler({
        sqs: own.sqs,
        queueUrl: podEventQueueUrl,
        clusterName: CLUSTER,
        leases,
        clock: systemClock,
        logger: this.logger,
      }),
    });
  }

  /**
   * The termination Lambda as its handler sets it up, with its role and the stack's termination
   * queue, in short invocations (a drain spans several of them as a long one spans Lambda timeouts),
   * with `ports` in place of those (a cluster or cloud that dies, say). Its sweep takes this file's
   * NodeClaims only: the API server is shared with other test files, whose NodeClaims the full sweep
   * (sweepTerminations) would also pass over.
   */
  terminationLambda(ports: Partial<TerminationSetupPorts> = {}): TerminationSweepDeps {
    const { cluster, termination, account } = this.env;
    return {
      ...setUpTermination(
        {
          cluster,
          cloud: termination.cloud,
          logger: this.logger,
          metrics: this.metrics,
          terminationQueue: makeSqsTerminationQueue(termination.sqs, account.stack.queueUrls.termination),
          clock: systemClock,
          sleep: (ms) => sleep(ms),
          ...ports,
        },
        { budgetMs: 3_000 },
      ),
      terminatingNodeClaims: async () =>
        (await cluster.nodeClaims()).items
          .filter(
            (c) =>
              c.deleting && c.finalizers.includes(Finalizer.termination) && c.labels[RUN_LABEL] === this.id,
          )
          .map((c) => c.name),
    };
  }

  /**
   * The garbage-collector Lambda as its handler sets it up, with its role (EC2, the stack's
   * termination queue for the NodeClaims it deletes, DescribeInstanceStatus for node repair) and
   * node repair on, with `ports` in place of those (the cluster summary's reads, say).
   */
  garbageCollector(ports: Partial<GarbageCollectorPorts> = {}): GarbageCollector {
    const { cluster, account } = this.env;
    const collector = account.as('garbage-collector');
    return setUpGarbageCollector(
      {
        cluster,
        cloud: collector.cloud,
        logger: this.logger,
        metrics: this.metrics,
        clock: systemClock,
        requestTermination: viaQueue(
          makeSqsTerminationQueue(collector.sqs, account.stack.queueUrls.termination),
        ),
        impairedInstances: makeImpairedInstanceReader(collector.ec2),
        ...ports,
      },
      { nodeRepair: true },
    );
  }

  /** One provisioning run, in-process, as the Lambda's schedule runs it. */
  run(
    holder: string,
    config: ProvisionerConfig = {},
    ports: Partial<ProvisionerPorts> = {},
  ): Promise<ProvisionResult> {
    return this.provisioner(config, ports).provision(holder, 'schedule');
  }

  /** The real DynamoDB lease store (on moto) the runs use, with the provisioner's role. */
  leases(): DynamoLeaseStore {
    return new DynamoLeaseStore(this.provisionerDynamo(), TABLE);
  }

  private provisionerAws: LambdaAws | undefined;

  private provisionerDynamo() {
    this.provisionerAws ??= this.env.account.as('provisioner');
    return this.provisionerAws.dynamodb;
  }

  /** Flotilla's FailedScheduling Events for pods named `<app>-…`, once there are `count`. */
  async failedSchedulingEvents(app: string, count: number) {
    return waitFor(
      `${count} FailedScheduling events from flotilla for ${app}`,
      async () => {
        const list = await this.env.core.listNamespacedEvent({ namespace: this.namespace });
        const ours = list.items.filter(
          (e) =>
            e.reason === 'FailedScheduling' &&
            e.source?.component === 'flotilla' &&
            e.involvedObject.name?.startsWith(`${app}-`),
        );
        return ours.length >= count ? ours : undefined;
      },
      { timeoutMs: 15_000 },
    );
  }

  async podsOf(app: string) {
    return (await this.env.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `app=${app}` }))
      .items;
  }

  /**
   * Pods of `app` that kube-controller-manager's taint-eviction controller deleted, by its Events
   * (reason `TaintManagerEviction`): the controller can handle a pod's binding before the Node
   * update that lifted a NoExecute taint (`karpenter.sh/unregistered`), and deletes a pod that
   * kube-scheduler bound rightly (kubernetes/kubernetes#119862). The pod's owner makes it again.
   */
  async taintEvictions(app: string): Promise<string[]> {
    const events = await this.env.core.listNamespacedEvent({
      namespace: this.namespace,
      fieldSelector: 'reason=TaintManagerEviction',
    });
    const names = events.items
      .filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name?.startsWith(`${app}-`) === true)
      .map((e) => e.involvedObject.name ?? '');
    return [...new Set(names)].sort();
  }

  /**
   * Fails unless `nodes` is `needed`, or up to one more for each pod of `app` a taint eviction
   * deleted (`taintEvictions`): the new pod its owner makes waits while the deleted one still holds
   * its Node's room, which the provisioner counts as kube-scheduler (and Karpenter) does, and may
   * get a node of its own. A failure says `story()` when given.
   */
  async expectNodesFor(app: string, nodes: number, needed: number, story?: () => string): Promise<void> {
    const evicted = await this.taintEvictions(app);
    if (nodes >= needed && nodes <= needed + evicted.length) return;
    expect.fail(
      `${nodes} nodes for ${needed} pods of ${app}, pods deleted by taint eviction: ${JSON.stringify(evicted)}${story === undefined ? '' : `\n${story()}`}`,
    );
  }

  async allRunning(app: string, count: number) {
    return waitFor(
      `${count} pods of ${app} Running`,
      async () => {
        const pods = await this.podsOf(app);
        if (pods.length < count) await this.remakeEvictedBarePods(app, pods);
        return pods.length === count && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
      },
      { timeoutMs: 90_000 },
    );
  }

  async instancesOf(pool: string) {
    const out = await this.env.account.ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:karpenter.sh/nodepool', Values: [pool] },
          { Name: 'instance-state-name', Values: ['pending', 'running'] },
        ],
      }),
    );
    return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
  }

  async nodeClaimsOf(pool: string) {
    return (await this.env.cluster.nodeClaims()).items.filter((c) => c.nodePoolName === pool);
  }

  async nodeOf(nodeName: string) {
    return this.env.core.readNode({ name: nodeName });
  }

  async nodePoolOfNode(nodeName: string) {
    return (await this.nodeOf(nodeName)).metadata?.labels?.['karpenter.sh/nodepool'];
  }

  async nodesOf(pool: string) {
    return (await this.env.core.listNode({ labelSelector: `karpenter.sh/nodepool=${pool}` })).items;
  }
}
