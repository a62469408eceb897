import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_CLUSTER_SIZE } from '../../infra/cluster-size.ts';
import { makeS3SummarySource } from '../../shared/adapters/aws/summary-source.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import { summaryLimitsFor } from '../../shared/ports/summary.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER, STACK_NAMES } from '../harness/aws/stack.ts';
import { type DelayProxy, startDelayProxy } from '../harness/delay-proxy.ts';
import { type Kube, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { summaryCluster } from '../harness/summary-attack.ts';
import { silentLogger } from './aws/fixtures.ts';

// A shim whose watches fall behind: what it receives from the API server arrives late (a network
// fault injected below TLS between the shim and the real API server), while it keeps publishing.
// Its summary must then look as old as what it has received, by S3's clock: a Lambda reads the API
// server instead. Before the fault, the same shim's summary is used.

const id = randomBytes(3).toString('hex');
const namespace = `behind-${id}`;
const nodeName = `behind-${id}`;
const claimName = `behind-${id}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/**
 * How late the shim gets what the API server sends: less than its idle timeout (60 s), so its
 * watches go on, only late, and more than the age the test's Lambda accepts (MAX_AGE_MS).
 */
const DELAY_MS = 45_000;
const MAX_AGE_MS = 40_000;

let server: Moto;
let cube: Kube;
let core: CoreV1Api;
let proxy: DelayProxy;
let shim: ShimProcess | undefined;
let churn: NodeJS.Timeout | undefined;
let kubeconfigDir = '';

beforeAll(async () => {
  [server, cube] = await Promise.all([moto(), kube()]);
  await resetMoto(server);
  const stack = await deployStack(server);
  core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // The shim's own kubeconfig, its server's address replaced by the proxy's.
  const original = fs.readFileSync(cube.shimKubeconfigPath, 'utf8');
  const serverUrl = new URL(/server:\s*(\S+)/.exec(original)?.[1] ?? '');
  proxy = await startDelayProxy({ host: serverUrl.hostname, port: Number(serverUrl.port) });
  kubeconfigDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-behind-'));
  const kubeconfigPath = path.join(kubeconfigDir, 'shim.kubeconfig');
  fs.writeFileSync(kubeconfigPath, original.replace(serverUrl.host, proxy.address));
  shim = await startShimProcess({
    server,
    kubeconfigPath,
    clusterName: STACK_CLUSTER,
    queueUrl: stack.queueUrls.podEvents,
  });
});

afterAll(async () => {
  if (churn !== undefined) clearInterval(churn);
  shim?.stop();
  await proxy?.close();
  fs.rmSync(kubeconfigDir, { recursive: true, force: true });
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  await core?.deleteNode({ name: nodeName }).catch(() => undefined);
  // Its finalizer keeps it, deleting, until a termination sweep finds no instance of it.
  await makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger })
    .deleteNodeClaim(claimName)
    .catch(() => undefined);
});

it('keeps its summary current while nothing changes for minutes', async () => {
  // No churn yet: every kind is quiet, and its watch proves it current by bookmarks alone.
  const quiet = summaryCluster(
    server,
    'provisioner',
    makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger }),
    silentLogger,
  );
  const stale: number[] = [];
  // Past the first minute, which the shim's first lists alone prove current.
  for (let look = 0; look < 8; look++) {
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const before = quiet.summaryUse().fromSummary;
    await quiet.nodeInfos();
    if (quiet.summaryUse().fromSummary === before) stale.push(look);
  }
  expect(stale, 'looks at which the quiet summary was not used').toEqual([]);
}, 300_000);

it('marks its summary stale once its watches fall behind, though lines keep arriving', async () => {
  const controller = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
  const lambda = summaryCluster(server, 'provisioner', controller, silentLogger);
  await waitFor(
    'a summary the provisioner reads',
    async () => {
      const before = lambda.summaryUse().fromSummary;
      await lambda.nodeInfos();
      return lambda.summaryUse().fromSummary > before ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 2_000 },
  );

  // Every kind changes all along (a pod created, a Node annotated as its kubelet would, a
  // NodeClaim annotated through Flotilla's own adapter), so the shim's watches keep sending lines,
  // only late once the fault begins.
  await core.createNode({ body: { metadata: { name: nodeName }, spec: {} } });
  await controller.createNodeClaim({
    name: claimName,
    nodePool: { name: `behind-${id}`, uid: '00000000-0000-0000-0000-000000000000' },
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: `behind-${id}` },
    labels: {},
    annotations: {},
    requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
    requests: { cpu: 1000 },
    taints: [],
    startupTaints: [],
  });
  let n = 0;
  churn = setInterval(() => {
    n += 1;
    const mark = { 'example.com/churn': String(n) };
    void core
      .patchNode({ name: nodeName, body: { metadata: { annotations: mark } } }, mergePatch)
      .catch(() => undefined);
    void controller.patchNodeClaimMetadata(claimName, { annotations: mark }).catch(() => undefined);
    void core
      .createNamespacedPod({
        namespace,
        body: {
          metadata: { name: `churn-${n}` },
          spec: { containers: [{ name: 'app', image: 'public.ecr.aws/docker/library/busybox:stable' }] },
        },
      })
      .catch(() => undefined);
  }, 3_000);
  proxy.setDelay(DELAY_MS);
  const delayedAt = Date.now();

  // Once every stream is late, the summary is refused at every look for most of a minute: a watch
  // that falls behind proves nothing of the time its late lines arrive.
  const late = summaryCluster(server, 'provisioner', controller, silentLogger, { maxAgeMs: MAX_AGE_MS });
  await new Promise((resolve) => setTimeout(resolve, DELAY_MS + 15_000));
  const used: number[] = [];
  for (let look = 0; look < 10; look++) {
    const before = late.summaryUse().fromSummary;
    await late.nodeInfos();
    if (late.summaryUse().fromSummary > before) used.push(look);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  }
  expect(used, 'looks at which the late summary was used').toEqual([]);
  // It went on publishing meanwhile (S3 dates the latest document after the fault began), and
  // that document says how far behind its watches are.
  const latest = await makeS3SummarySource({
    s3: new S3Client({ ...awsConfigAs(server, 'provisioner'), forcePathStyle: true }),
    bucket: STACK_NAMES.summaryBucket,
    cluster: STACK_CLUSTER,
    limits: summaryLimitsFor(DEFAULT_CLUSTER_SIZE),
  }).read();
  expect(latest?.publishedAtMs).toBeGreaterThan(delayedAt + DELAY_MS);
  expect((latest?.publishedAtMs ?? 0) - (latest?.currentAtMs ?? 0)).toBeGreaterThanOrEqual(DELAY_MS - 5_000);
}, 300_000);
