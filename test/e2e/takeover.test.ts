import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  type Instance,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
} from '@kubernetes/client-node';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { makeTerminationHandler } from '../../lambdas/termination/run.ts';
import { main } from '../../shared/cli/main.ts';
import { awsClientConfig, kube } from '../harness/index.ts';
import { withKarpenterCrds } from '../harness/karpenter-crds.ts';
import type { KarpenterLine } from '../harness/kube/crds.ts';
import { waitFor } from '../harness/proc.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { consumeQueue, disruptionLambdaPass, relabelNodePool } from './disruption-lambda.ts';
import { GROUP_LABEL, type PoolSpec, ProvisionerE2E, RUN_LABEL } from './provisioner-fixture.ts';
import { auditedVerbs, auditOffset, startShadowStack } from './shadow-stack.ts';

// Taking over a cluster Karpenter ran, on the CRDs of Karpenter's own Helm chart: v1.14 with v1.14
// manifests, and v1.15 with v1.15 ones (no consolidateAfter, an Unhealthy budget, the open kubelet
// map with a field only AL2023 passes through, enclaveOptions). Set-up plays Karpenter before
// Flotilla runs: its EC2NodeClass and NodePool status, two on-demand
// m5.large instances it launched with its tags, their NodeClaims as it writes them (its hash
// annotations, v3 and v6, its finalizer, labels and status) and the registration it does on their
// Nodes; a Deployment runs on them. Then Flotilla runs as deployed (the provisioner's controllers
// and runs, disruption passes, garbage collection, termination) and must adopt every NodeClaim:
// no instance launched or terminated, nothing drifted, its own hashes stamped. A template change
// the user makes afterwards drifts the adopted nodes, and they are replaced as Karpenter would.

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const KARPENTER = { group: 'karpenter.sh', version: 'v1' };
const NODE_CLASSES = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' };

const APP = 'web';

/** The manifests a user of each line applied, over the fixture's NodePool and EC2NodeClass. */
const MANIFESTS: Record<KarpenterLine, { pool: PoolSpec; nodeClass?: Record<string, unknown> }> = {
  'v1.14': { pool: { instanceTypes: ['m5.large'], disruption: { consolidateAfter: '0s' } } },
  'v1.15': {
    pool: {
      instanceTypes: ['m5.large'],
      disruption: { budgets: [{ nodes: '1', reasons: ['Unhealthy'] }, { nodes: '10%' }] },
    },
    nodeClass: {
      kubelet: { maxPods: 29, containerLogMaxSize: '50Mi', evictionHard: { 'memory.available': '5%' } },
      enclaveOptions: { enabled: false },
    },
  },
};

for (const line of ['v1.14', 'v1.15'] as const) {
  describe(`taking over a cluster Karpenter ${line} ran`, () => {
    withKarpenterCrds(line);
    takeover(line, new ProvisionerE2E(`takeover-${line.replace('.', '-')}`, { lifecycleLoop: false }));
  });
}

function takeover(line: KarpenterLine, e2e: ProvisionerE2E): void {
  const { id } = e2e;
  let pool = '';
  let karpenterClaims: string[] = [];

  /** Karpenter's writes: an administrator, never refused (the harness's karpenterKubeConfig). */
  async function asKarpenter() {
    const kc = (await kube()).karpenterKubeConfig;
    return { custom: kc.makeApiClient(CustomObjectsApi), core: kc.makeApiClient(CoreV1Api) };
  }

  const stamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const trueCondition = (type: string) => ({
    type,
    status: 'True',
    reason: type,
    message: '',
    lastTransitionTime: stamp(),
  });

  /** The instances of this file's pool that are not terminated, as EC2 describes them. */
  async function liveInstances(): Promise<Instance[]> {
    const ec2 = e2e.env.account.ec2;
    const out = await ec2.send(
      new DescribeInstancesCommand({ Filters: [{ Name: 'tag:karpenter.sh/nodepool', Values: [pool] }] }),
    );
    return (out.Reservations ?? [])
      .flatMap((r) => r.Instances ?? [])
      .filter((i) => !['terminated', 'shutting-down'].includes(i.State?.Name ?? ''));
  }

  /** What Karpenter v1.14 had done for one node: the instance, its NodeClaim, its Node registered. */
  async function karpenterLaunched(index: number, zone: 'us-east-1a' | 'us-east-1b'): Promise<string> {
    const { custom, core } = await asKarpenter();
    const { account } = e2e.env;
    const status = account.nodeClass.status;
    const subnet = status?.subnets.find((s) => s.zone === zone);
    const name = `${pool}-k${index}`;
    const labels = {
      [RUN_LABEL]: id,
      [GROUP_LABEL]: APP,
      'karpenter.sh/nodepool': pool,
      'karpenter.k8s.aws/ec2nodeclass': e2e.nodeClassName,
      'karpenter.sh/capacity-type': 'on-demand',
      'node.kubernetes.io/instance-type': 'm5.large',
      'topology.kubernetes.io/zone': zone,
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
    };
    const nodeConfig = [
      '---',
      'apiVersion: node.eks.aws/v1alpha1',
      'kind: NodeConfig',
      'spec:',
      `  cluster: { name: ${CLUSTER} }`,
      '  kubelet:',
      '    flags:',
      `      - --node-labels=${Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`,
      `      - --register-with-taints=${RUN_LABEL}=${id}:NoSchedule,karpenter.sh/unregistered:NoExecute`,
    ].join('\n');
    // EC2, as Karpenter's CreateFleet left it: its tags on the instance.
    const run = await account.ec2.send(
      new RunInstancesCommand({
        ImageId: account.amis.amd64,
        InstanceType: 'm5.large',
        MinCount: 1,
        MaxCount: 1,
        SubnetId: subnet?.id,
        SecurityGroupIds: status?.securityGroups.map((g) => g.id),
        UserData: Buffer.from(nodeConfig).toString('base64'),
        TagSpecifications: [
          {
            ResourceType: 'instance',
            Tags: [
              { Key: `kubernetes.io/cluster/${CLUSTER}`, Value: 'owned' },
              { Key: 'eks:eks-cluster-name', Value: CLUSTER },
              { Key: 'karpenter.sh/nodepool', Value: pool },
              { Key: 'karpenter.sh/nodeclaim', Value: name },
              { Key: 'karpenter.k8s.aws/ec2nodeclass', Value: e2e.nodeClassName },
              { Key: 'Name', Value: name },
            ],
          },
        ],
      }),
    );
    const instanceId = run.Instances?.[0]?.InstanceId ?? '';
    const providerID = `aws:///${zone}/${instanceId}`;
    const nodePool = (await custom.getClusterCustomObject({
      ...KARPENTER,
      plural: 'nodepools',
      name: pool,
    })) as {
      metadata: { uid: string };
    };
    await custom.createClusterCustomObject({
      ...KARPENTER,
      plural: 'nodeclaims',
      body: {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: {
          name,
          labels,
          annotations: {
            'karpenter.sh/nodepool-hash': '6821555240504101244',
            'karpenter.sh/nodepool-hash-version': 'v3',
            'karpenter.k8s.aws/ec2nodeclass-hash': '13117958216164493468',
            'karpenter.k8s.aws/ec2nodeclass-hash-version': 'v6',
            'karpenter.k8s.aws/tagged': 'true',
          },
          finalizers: ['karpenter.sh/termination'],
          ownerReferences: [
            {
              apiVersion: 'karpenter.sh/v1',
              kind: 'NodePool',
              name: pool,
              uid: nodePool.metadata.uid,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: e2e.nodeClassName },
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
            { key: 'karpenter.sh/nodepool', operator: 'In', values: [pool] },
          ],
          taints: [{ key: RUN_LABEL, value: id, effect: 'NoSchedule' }],
          expireAfter: '720h',
          resources: { requests: { cpu: '1500m', memory: '128Mi', pods: '1' } },
        },
      },
    });
    const capacity = { cpu: '2', memory: '7910Mi', pods: '29', 'ephemeral-storage': '20Gi' };
    const allocatable = { cpu: '1930m', memory: '7134Mi', pods: '29', 'ephemeral-storage': '17Gi' };
    const claimStatus = (conditions: string[], nodeName?: string) =>
      custom.patchClusterCustomObjectStatus(
        {
          ...KARPENTER,
          plural: 'nodeclaims',
          name,
          body: {
            status: {
              providerID,
              imageID: account.amis.amd64,
              capacity,
              allocatable,
              ...(nodeName === undefined ? {} : { nodeName }),
              conditions: conditions.map(trueCondition),
            },
          },
        },
        mergePatch,
      );
    await claimStatus(['Launched']);
    // The kubelet (the node simulator) registers the Node; Karpenter's registration then takes it.
    const node = await waitFor(
      `the Node of ${instanceId}`,
      async () => (await core.listNode()).items.find((n) => n.spec?.providerID === providerID),
      { timeoutMs: 60_000 },
    );
    const nodeName = node.metadata?.name ?? '';
    const taints = (node.spec?.taints ?? []).filter((t) => t.key !== 'karpenter.sh/unregistered');
    await core.patchNode(
      {
        name: nodeName,
        body: {
          metadata: {
            labels: { 'karpenter.sh/registered': 'true', 'karpenter.sh/initialized': 'true' },
            finalizers: ['karpenter.sh/termination'],
            ownerReferences: [
              {
                apiVersion: 'karpenter.sh/v1',
                kind: 'NodeClaim',
                name,
                uid: (
                  (await custom.getClusterCustomObject({ ...KARPENTER, plural: 'nodeclaims', name })) as {
                    metadata: { uid: string };
                  }
                ).metadata.uid,
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: { taints } satisfies V1Node['spec'],
        },
      },
      mergePatch,
    );
    await claimStatus(['Launched', 'Registered', 'Initialized', 'Ready'], nodeName);
    return name;
  }

  beforeAll(async () => {
    const { custom } = await asKarpenter();
    const { account } = e2e.env;
    const manifests = MANIFESTS[line];
    pool = await e2e.createPool(APP, APP, manifests.pool);
    if (manifests.nodeClass !== undefined) {
      // The user's `kubectl apply` of the line's EC2NodeClass fields.
      await e2e.env.custom.patchClusterCustomObject(
        { ...NODE_CLASSES, name: e2e.nodeClassName, body: { spec: manifests.nodeClass } },
        mergePatch,
      );
    }
    // Karpenter's status of the class it resolved (the account's subnets, groups, AMIs and profile)
    // and its own annotations and finalizer on it.
    const generation = (
      (await custom.getClusterCustomObject({ ...NODE_CLASSES, name: e2e.nodeClassName })) as {
        metadata: { generation: number };
      }
    ).metadata.generation;
    await custom.patchClusterCustomObject(
      {
        ...NODE_CLASSES,
        name: e2e.nodeClassName,
        body: {
          metadata: {
            annotations: {
              'karpenter.k8s.aws/ec2nodeclass-hash': '13117958216164493468',
              'karpenter.k8s.aws/ec2nodeclass-hash-version': 'v6',
            },
            finalizers: ['karpenter.k8s.aws/termination'],
          },
        },
      },
      mergePatch,
    );
    const { conditions: _flotillas, ...resolved } = account.nodeClass.status ?? { conditions: [] };
    await custom.patchClusterCustomObjectStatus(
      {
        ...NODE_CLASSES,
        name: e2e.nodeClassName,
        body: {
          status: {
            ...resolved,
            conditions: [
              'SubnetsReady',
              'SecurityGroupsReady',
              'AMIsReady',
              'InstanceProfileReady',
              'ValidationSucceeded',
              'Ready',
            ].map((type) => ({ ...trueCondition(type), observedGeneration: generation })),
          },
        },
      },
      mergePatch,
    );
    await custom.patchClusterCustomObjectStatus(
      {
        ...KARPENTER,
        plural: 'nodepools',
        name: pool,
        body: {
          status: {
            conditions: ['ValidationSucceeded', 'NodeClassReady', 'NodeRegistrationHealthy', 'Ready'].map(
              trueCondition,
            ),
            resources: { cpu: '4', memory: '15820Mi', pods: '58', nodes: '2' },
            nodes: 2,
          },
        },
      },
      mergePatch,
    );
    karpenterClaims = [await karpenterLaunched(1, 'us-east-1a'), await karpenterLaunched(2, 'us-east-1b')];
    // The workload Karpenter launched them for: one 1.5-CPU pod on each.
    await e2e.env.apps.createNamespacedDeployment({
      namespace: e2e.namespace,
      body: {
        metadata: { name: APP },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: APP } },
          template: {
            metadata: { labels: { app: APP } },
            spec: e2e.podSpec(APP, { app: APP }, '1500m'),
          },
        },
      },
    });
    await e2e.allRunning(APP, 2);
  }, 240_000);

  /** Flotilla as deployed, one round of each Lambda's scheduled work over this file's NodePool. */
  async function flotillaRound(round: number): Promise<void> {
    const { server, account } = e2e.env;
    await asLambda(server, 'provisioner', () => e2e.controllersPass());
    await asLambda(server, 'provisioner', () => e2e.run(`takeover-run-${round}-${id}`));
    await disruptionLambdaPass(e2e, pool, `takeover-${round}-${id}`, { options: { validationMs: 2_000 } });
    await asLambda(server, 'garbage-collector', () => e2e.garbageCollector().pass());
    await consumeQueue(
      new SQSClient(awsClientConfig(server)),
      account.stack.queueUrls.termination,
      (messages) =>
        asLambda(server, 'termination', () =>
          makeTerminationHandler(e2e.terminationLambda())({
            Records: messages.map((m) => ({ messageId: m.MessageId ?? '', body: m.Body ?? '' })),
          }),
        ),
    );
  }

  describe('Flotilla deployed in shadow beside it', () => {
    it('changes nothing, on the wire, and its report names what it would launch', async () => {
      const { server, account } = e2e.env;
      const cube = await kube();
      const instancesBefore = (await liveInstances()).map((i) => `${i.InstanceId} ${i.State?.Name}`).sort();
      const claimsBefore = async () =>
        (await e2e.nodeClaimsOf(pool)).map((c) => `${c.name} ${c.resourceVersion}`).sort();
      const claimVersions = await claimsBefore();
      const templates = async () =>
        (await account.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates?.length ?? 0;
      const templatesBefore = await templates();
      // A third replica: with Karpenter stopped, nothing launches for it. Back to two at the end,
      // however this test ends, for the live half to find the cluster as Karpenter left it.
      const pendingOf = () => e2e.pendingPods({ labelSelector: `app=${APP}` });
      onTestFinished(async () => {
        await e2e.scale(APP, 2);
        await waitFor(
          'no replica pending',
          async () => ((await pendingOf()).length === 0 ? true : undefined),
          {
            timeoutMs: 30_000,
          },
        );
      });
      await e2e.scale(APP, 3);
      await waitFor(
        'the third replica pending',
        async () =>
          (await e2e.pendingPods({ labelSelector: `app=${APP}` })).length === 1 ? true : undefined,
        {
          timeoutMs: 30_000,
        },
      );
      const offset = auditOffset(cube);
      const shadow = await startShadowStack(server, cube);
      try {
        await shadow.invoke('catalog');
        await shadow.invoke('provisioner');
        await shadow.invoke('disruption');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await shadow.invoke('disruption');
      } finally {
        shadow.restore();
      }

      // Nothing changed: the API server saw reads only from the shadow group, none refused; EC2 has
      // the same instances and launch templates (every EC2 call was held to the shadow policy,
      // which allows no mutation: a denied call fails this test).
      const requests = auditedVerbs(cube, offset);
      expect(requests.length).toBeGreaterThan(0);
      expect(requests.filter((r) => !['get', 'list', 'watch'].includes(r.verb))).toEqual([]);
      expect(requests.filter((r) => r.code >= 400)).toEqual([]);
      expect((await liveInstances()).map((i) => `${i.InstanceId} ${i.State?.Name}`).sort()).toEqual(
        instancesBefore,
      );
      expect(await claimsBefore()).toEqual(claimVersions);
      expect(await templates()).toBe(templatesBefore);
      expect(shadow.lines.length).toBeGreaterThan(0);
      expect(shadow.lines.filter((l) => l['shadow'] !== true)).toEqual([]);

      // What it would have done: an m5.large (the pool's only type) for the pending replica.
      const pending = (await e2e.pendingPods({ labelSelector: `app=${APP}` })).map(
        (p) => `${p.metadata?.namespace}/${p.metadata?.name}`,
      );
      const launches = shadow.lines.filter((l) => l['decision'] === 'launch');
      expect(launches).toEqual([
        expect.objectContaining({
          outcome: 'launched',
          nodePool: pool,
          instanceType: 'm5.large',
          pods: pending,
        }),
      ]);
      const file = path.join(os.tmpdir(), `shadow-${id}.log`);
      fs.writeFileSync(file, shadow.lines.map((l) => JSON.stringify(l)).join('\n'));
      let out = '';
      const code = await main(['shadow', 'report', '--file', file], {
        out: (t) => {
          out += t;
        },
        err: () => {},
      });
      fs.rmSync(file, { force: true });
      expect(code).toBe(0);
      expect(out).toMatch(
        /Flotilla would have launched m5\.large at \$[\d.]+\/h for pods the live autoscaler did not launch for/,
      );
      const price = Number(launches[0]?.['pricePerHour']);
      expect(out).toContain(`per hour              $${(2 * price).toFixed(2)}`);
    }, 180_000);
  });

  describe('Flotilla deployed live', () => {
    it('adopts every NodeClaim: no instance launched or terminated, none drifted, Flotilla hashes stamped', async () => {
      const before = (await liveInstances()).map((i) => i.InstanceId).sort();
      expect(before).toHaveLength(2);
      for (let round = 1; round <= 3; round++) await flotillaRound(round);

      expect((await liveInstances()).map((i) => i.InstanceId).sort()).toEqual(before);
      const claims = await e2e.nodeClaimsOf(pool);
      expect(claims.map((c) => c.name).sort()).toEqual([...karpenterClaims].sort());
      for (const claim of claims) {
        expect(claim.deleting).toBe(false);
        expect(claim.annotations['karpenter.sh/nodepool-hash-version']).toBe('flotilla-v2');
        expect(claim.annotations['karpenter.k8s.aws/ec2nodeclass-hash-version']).toBe('flotilla-v1');
        expect(claim.status.conditions.find((c) => c.type === 'Drifted')).toBeUndefined();
      }
      const adopted = e2e.logLines.filter((l) => l['decision'] === 'adopted' && l['nodePool'] === pool);
      expect(adopted.map((l) => l['nodeClaim']).sort()).toEqual([...karpenterClaims].sort());
      expect(adopted.every((l) => l['previous'] === 'nodepool=v3 ec2nodeclass=v6')).toBe(true);
      expect(e2e.logLines.filter((l) => l['decision'] === 'launch' || l['decision'] === 'disrupt')).toEqual(
        [],
      );
      await e2e.allRunning(APP, 2);
    }, 180_000);

    it('drifts the adopted nodes on a later template change and replaces them one at a time, as Karpenter would', async () => {
      await relabelNodePool(e2e, pool, 'team', 'web');
      const seen = new Set<string>();
      await waitFor(
        'both adopted NodeClaims replaced by Flotilla',
        async () => {
          await flotillaRound(seen.size + 10);
          const claims = await e2e.nodeClaimsOf(pool);
          for (const c of claims) seen.add(c.name);
          const live = claims.filter((c) => !c.deleting).map((c) => c.name);
          return live.length === 2 && live.every((n) => !karpenterClaims.includes(n)) ? true : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 500 },
      );
      const drifted = e2e.logLines.filter((l) => l['decision'] === 'drifted' && l['nodePool'] === pool);
      expect(drifted.map((l) => l['nodeClaim']).sort()).toEqual([...karpenterClaims].sort());
      expect(drifted.every((l) => l['reason'] === 'NodePoolDrifted')).toBe(true);
      // One node at a time (the default budget, 10% of 2 nodes, rounds up to 1).
      const commands = e2e.logLines.filter(
        (l) => l['decision'] === 'disrupt' && l['outcome'] === 'started' && l['method'] === 'drift',
      );
      expect(commands).toHaveLength(2);
      expect(commands.every((l) => (l['candidates'] as unknown[]).length === 1)).toBe(true);
      await waitFor(
        "the adopted instances terminated, the replacements' running",
        async () => {
          await flotillaRound(99);
          const live = await liveInstances();
          const tags = live.map((i) => i.Tags?.find((t) => t.Key === 'karpenter.sh/nodeclaim')?.Value ?? '');
          return live.length === 2 && tags.every((t) => !karpenterClaims.includes(t)) ? true : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      await e2e.allRunning(APP, 2);
      if (line === 'v1.15') {
        // The v1.15 manifests as stored and as they reach a node Flotilla launched.
        const stored = (await e2e.env.custom.getClusterCustomObject({
          ...KARPENTER,
          plural: 'nodepools',
          name: pool,
        })) as { spec: { disruption: { consolidateAfter?: string } } };
        expect(stored.spec.disruption.consolidateAfter).toBe('0s');
        const [replacement] = await liveInstances();
        const attribute = await e2e.env.account.ec2.send(
          new DescribeInstanceAttributeCommand({
            InstanceId: replacement?.InstanceId ?? '',
            Attribute: 'userData',
          }),
        );
        const userData = Buffer.from(attribute.UserData?.Value ?? '', 'base64').toString('utf8');
        expect(userData).toMatch(/containerLogMaxSize: 50Mi/);
      }
    }, 420_000);
  });
}
