import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type PlanFile, PlanInputError } from '../../../shared/cli/plan/input.ts';
import { type PlanResult, planFromSnapshot } from '../../../shared/cli/plan/plan.ts';
import { flotilla } from './flotilla.ts';

// `flotilla plan` on a hand-made snapshot (test/fixtures/plan): which NodeClaims, from which
// NodePool, with which pods, and what a bad input file is told.

const fixtures = path.resolve(import.meta.dirname, '../../fixtures/plan');
const clusterPath = path.join(fixtures, 'cluster.yaml');
const poolsPath = path.join(fixtures, 'nodepools.yaml');
const read = (file: string): PlanFile => ({ path: file, text: fs.readFileSync(file, 'utf8') });
const ZONES = ['us-west-2a', 'us-west-2b', 'us-west-2c'];
const options = { region: 'us-west-2', zones: ZONES };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-plan-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A copy of a fixture with one text replaced (which must occur). */
function variant(file: string, from: string, to: string): string {
  const text = fs.readFileSync(file, 'utf8');
  expect(text).toContain(from);
  const out = path.join(tmp, `${path.basename(file, '.yaml')}-${fs.readdirSync(tmp).length}.yaml`);
  fs.writeFileSync(out, text.replace(from, to));
  return out;
}

/** The 1-based line of the first occurrence of `text` in `file`. */
function lineOf(file: string, text: string): number {
  return (
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .findIndex((l) => l.includes(text)) + 1
  );
}

/** `flotilla <args>` through the command's entry, in this process. */
const run = (...args: string[]) => flotilla(args);

const claimOf = (plan: PlanResult, pod: string) => plan.nodeClaims.find((c) => c.pods.includes(pod));

describe('planFromSnapshot on the hand-made snapshot', async () => {
  const plan = await planFromSnapshot(read(clusterPath), read(poolsPath), options);

  it('plans for the unschedulable pods and the pod kube-scheduler has not seen, not gated or finished ones', () => {
    expect(plan.pendingPods).toBe(10);
    const planned = [...plan.nodeClaims.flatMap((c) => c.pods), ...plan.placements.map((p) => p.pod)];
    const unschedulable = plan.unschedulable.map((u) => u.pod);
    expect([...planned, ...unschedulable].sort()).toEqual([
      'jobs/batch-0',
      'jobs/batch-1',
      'jobs/batch-2',
      'ml/trainer-0',
      'ops/arm-only',
      'ops/cron-tick',
      'shop/web-2',
      'shop/web-3',
      'shop/web-4',
      'shop/web-5',
    ]);
  });

  it('launches one on-demand GPU NodeClaim from the gpu pool for the trainer, with DaemonSet overhead', () => {
    const gpu = plan.nodeClaims.filter((c) => c.nodePool === 'gpu');
    expect(gpu).toHaveLength(1);
    const claim = gpu[0];
    expect(claim?.pods).toEqual(['ml/trainer-0']);
    expect(claim?.capacityType).toBe('on-demand');
    expect(claim?.instanceTypes.length).toBeGreaterThan(0);
    for (const t of claim?.instanceTypes ?? []) expect(t.name).toMatch(/^g[56]\./);
    expect(claim?.instanceTypes[0]?.name).toBe('g6.xlarge');
    // 2 cpu for the trainer plus 100m for node-exporter, which tolerates every taint.
    expect(claim?.requests).toMatchObject({ cpu: 2100, 'nvidia.com/gpu': 1 });
    expect(claim?.taints).toEqual([{ key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' }]);
    expect(claim?.labels).toMatchObject({ workload: 'gpu' });
  });

  it('spreads the web replicas over the zones, one zone per NodeClaim, within maxSkew 1', () => {
    const web = ['shop/web-2', 'shop/web-3', 'shop/web-4', 'shop/web-5'];
    // web-0 and web-1 already run in us-west-2a and us-west-2b.
    const perZone: Record<string, number> = { 'us-west-2a': 1, 'us-west-2b': 1, 'us-west-2c': 0 };
    for (const pod of web) {
      const claim = claimOf(plan, pod);
      expect(claim?.nodePool).toBe('general');
      expect(claim?.zones).toHaveLength(1);
      expect(claim?.fromPods).toEqual([`topology.kubernetes.io/zone In [${claim?.zones[0]}]`]);
      const zone = claim?.zones[0] ?? '';
      perZone[zone] = (perZone[zone] ?? 0) + 1;
    }
    expect(perZone).toEqual({ 'us-west-2a': 2, 'us-west-2b': 2, 'us-west-2c': 2 });
  });

  it('puts the batch pods on general-purpose NodeClaims, spot first, cheapest candidates first', () => {
    for (const pod of ['jobs/batch-0', 'jobs/batch-1', 'jobs/batch-2']) {
      const claim = claimOf(plan, pod);
      expect(claim?.nodePool).toBe('general');
      expect(claim?.capacityType).toBe('spot');
      expect(claim?.requests['cpu']).toBeGreaterThanOrEqual(3100);
      for (const t of claim?.instanceTypes ?? []) expect(t.name).toMatch(/^[cmr]\d/);
    }
    expect(plan.nodeClaims.filter((c) => c.nodePool === 'general')).toHaveLength(7);
    for (const claim of plan.nodeClaims) {
      const prices = claim.instanceTypes.map((t) => t.priceUsdPerHour);
      expect(prices).toEqual([...prices].sort((a, b) => a - b));
      expect(claim.priceUsdPerHour).toBe(prices[0]);
    }
    expect(plan.totalUsdPerHour).toBeCloseTo(
      plan.nodeClaims.reduce((sum, c) => sum + c.priceUsdPerHour, 0),
      10,
    );
  });

  it('fits the small pod on the node that has room, and says why the arm64 pod cannot run', () => {
    expect(plan.placements).toEqual([
      { pod: 'ops/cron-tick', on: 'node ip-10-0-1-10.us-west-2.compute.internal' },
    ]);
    expect(plan.unschedulable).toHaveLength(1);
    expect(plan.unschedulable[0]?.pod).toBe('ops/arm-only');
    expect(plan.unschedulable[0]?.message).toContain(
      'nodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated',
    );
    expect(plan.unschedulable[0]?.message).toContain(
      'nodePool general: pod requires kubernetes.io/arch In [arm64]',
    );
  });

  it('gives the same plan every time', async () => {
    expect(await planFromSnapshot(read(clusterPath), read(poolsPath), options)).toEqual(plan);
  });

  it('only launches in the zones it is given', async () => {
    const two = await planFromSnapshot(read(clusterPath), read(poolsPath), {
      ...options,
      zones: ['us-west-2a', 'us-west-2b'],
    });
    for (const claim of two.nodeClaims)
      for (const z of claim.zones) expect(['us-west-2a', 'us-west-2b']).toContain(z);
  });

  it('leaves out a NodePool whose EC2NodeClass is missing, and says so', async () => {
    const pools = variant(
      poolsPath,
      'name: gpu\nspec:',
      'name: gpu\nspec:\n  weight: 10\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}\n      requirements: []\n---\nkind: Ignored\nmetadata: {name: x}\nspec:',
    );
    const result = await planFromSnapshot(read(clusterPath), read(pools), options);
    expect(result.skippedNodePools).toEqual([
      {
        nodePool: 'gpu',
        reason:
          'it is not Ready (NodeClassNotFound): EC2NodeClass "missing" not found; create it or fix spec.template.spec.nodeClassRef',
      },
    ]);
    expect(result.unschedulable.map((u) => u.pod).sort()).toEqual(['ml/trainer-0', 'ops/arm-only']);
  });
});

describe('flotilla plan', () => {
  it('prints each NodeClaim with its pool, candidates, pods, reason and price, then the total', async () => {
    const { code, out, err } = await run(
      'plan',
      '--cluster',
      clusterPath,
      '--nodepools',
      poolsPath,
      '--zones',
      'a,b,c',
    );
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toMatch(
      /^Plan for 10 pending pods in us-west-2 \(zones us-west-2a, us-west-2b, us-west-2c\)/,
    );
    expect(out).toMatch(/^NodeClaim \d: gpu-\w+ \(nodePool gpu, ec2NodeClass default\)$/m);
    // us-west-2's on-demand price of g6 is us-east-1's, assumed: marked.
    expect(out).toMatch(/^ {2}instance types, cheapest first \(\d+\): g6\.xlarge \$0\.\d{4}\*, /m);
    expect(out).toMatch(/^\* assumed price: /m);
    expect(out).toContain('  pods (1): ml/trainer-0\n');
    expect(out).toContain('the pods require topology.kubernetes.io/zone In [us-west-2c]');
    expect(out).toMatch(/^Total: 8 NodeClaims, \$\d+\.\d{4}\/hour$/m);
    expect(out).toContain('  ops/cron-tick on node ip-10-0-1-10.us-west-2.compute.internal\n');
    expect(out).toContain('Pods that cannot be scheduled (1):\n  ops/arm-only: nodePool gpu: ');
  });

  it('prints the plan as JSON with --output json', async () => {
    const { code, out } = await run(
      'plan',
      `--cluster=${clusterPath}`,
      `--nodepools=${poolsPath}`,
      '--region',
      'us-west-2',
      '--zones',
      'a,b,c',
      '--output',
      'json',
    );
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual(
      JSON.parse(JSON.stringify(await planFromSnapshot(read(clusterPath), read(poolsPath), options))),
    );
  });

  it('names the file, line and field of a malformed quantity and of a bad NodePool requirement', async () => {
    const cluster = variant(clusterPath, 'cpu: 2500m', 'cpu: lots');
    const pools = variant(poolsPath, 'operator: Gt', 'operator: Bigger');
    const { code, out, err } = await run('plan', '--cluster', cluster, '--nodepools', pools);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toContain(
      `${cluster}:${lineOf(cluster, 'cpu: lots')}:11: Pod "shop/search-0": spec.containers[0].resources.requests.cpu: "lots" is not a Kubernetes quantity`,
    );
    expect(err).toContain(
      `${pools}:${lineOf(pools, 'operator: Bigger')}:11: NodePool "general": spec.template.spec.requirements[3].operator: must be one of "In", "NotIn"`,
    );
  });

  it('names the line of a YAML syntax error and refuses a file without NodePools', async () => {
    const broken = path.join(tmp, 'broken.yaml');
    fs.writeFileSync(broken, 'apiVersion: v1\nkind: List\nitems:\n  - kind: Pod\n    kind: Node\n');
    await expect(planFromSnapshot(read(broken), read(poolsPath), options)).rejects.toThrow(
      new RegExp(`^${broken}:5:5: YAML: Map keys must be unique`),
    );
    const noPools = path.join(tmp, 'no-pools.yaml');
    fs.writeFileSync(noPools, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    const error = await planFromSnapshot(read(clusterPath), read(noPools), options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlanInputError);
    expect((error as PlanInputError).problems).toEqual([
      { file: noPools, message: 'no NodePool (karpenter.sh/v1) found' },
    ]);
  });

  it('refuses missing options and unreadable files', async () => {
    const missing = await run('plan', '--cluster', clusterPath);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/^flotilla plan: --cluster and --nodepools are required/);
    const unknown = await run('plan', '--cluster', clusterPath, '--nodepools', poolsPath, '--dry');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown option --dry/);
    const absent = await run('plan', '--cluster', path.join(tmp, 'absent.yaml'), '--nodepools', poolsPath);
    expect(absent.code).toBe(2);
    expect(absent.err).toMatch(/cannot read the --cluster file .*absent\.yaml: ENOENT/);
  });
});

describe('planFromSnapshot with NodeOverlays in the NodePools file', async () => {
  const plain = await planFromSnapshot(read(clusterPath), read(poolsPath), options);
  const claim = plain.nodeClaims.find((c) => c.instanceTypes.length > 1);

  /** The NodePools file with `overlay` appended as one more document. */
  function withOverlay(overlay: string): PlanFile {
    const file = path.join(tmp, `overlay-${fs.readdirSync(tmp).length}.yaml`);
    fs.writeFileSync(file, `${fs.readFileSync(poolsPath, 'utf8').trimEnd()}\n---\n${overlay}`);
    return read(file);
  }

  it('prices the NodeClaims with the overlay applied', async () => {
    const second = claim?.instanceTypes[1]?.name;
    expect(second).toBeDefined();
    const overlay = [
      'apiVersion: karpenter.sh/v1alpha1',
      'kind: NodeOverlay',
      'metadata: {name: savings-plan}',
      'spec:',
      `  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: ["${second}"]}]`,
      '  price: "0.0001"',
      '',
    ].join('\n');
    const plan = await planFromSnapshot(read(clusterPath), withOverlay(overlay), options);
    const same = plan.nodeClaims.find((c) => c.pods.join() === claim?.pods.join());
    expect(same?.instanceTypes[0]).toMatchObject({ name: second, priceUsdPerHour: 0.0001 });
  });

  it('refuses an overlay the cluster would mark invalid, saying why', async () => {
    const overlay = [
      'apiVersion: karpenter.sh/v1alpha1',
      'kind: NodeOverlay',
      'metadata: {name: license}',
      'spec:',
      '  requirements: []',
      '  capacity: {pods: "10"}',
      '',
    ].join('\n');
    const error = await planFromSnapshot(read(clusterPath), withOverlay(overlay), options).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PlanInputError);
    expect(String((error as PlanInputError).problems.map((p) => p.message))).toContain(
      'invalid resource restricted',
    );
  });
});

describe('planFromSnapshot with an EC2NodeClass kubelet map', () => {
  it('refuses a map the EC2NodeClass controller would refuse, at the field', async () => {
    const file = variant(
      poolsPath,
      '  role: KarpenterNodeRole-demo\n',
      '  role: KarpenterNodeRole-demo\n  kubelet:\n    maxPods: vcpus * 4\n    notAField: 1\n',
    );
    const error = await planFromSnapshot(read(clusterPath), read(file), options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlanInputError);
    expect((error as PlanInputError).problems).toEqual([
      {
        file,
        line: lineOf(file, 'notAField'),
        column: 5,
        message:
          'EC2NodeClass "default": spec.kubelet.notAField: is not a kubelet configuration field; remove it',
      },
      {
        file,
        line: lineOf(file, 'maxPods: vcpus'),
        column: 5,
        message: expect.stringContaining(
          'EC2NodeClass "default": spec.kubelet.maxPods: "vcpus * 4" is an expression',
        ),
      },
    ]);
  });

  it('plans as before with upstream kubelet fields an AL2023 class applies', async () => {
    const file = variant(
      poolsPath,
      '  role: KarpenterNodeRole-demo\n',
      '  role: KarpenterNodeRole-demo\n  kubelet:\n    shutdownGracePeriod: 30s\n',
    );
    const plan = await planFromSnapshot(read(clusterPath), read(file), options);
    const plain = await planFromSnapshot(read(clusterPath), read(poolsPath), options);
    expect(plan.nodeClaims.map((c) => c.pods)).toEqual(plain.nodeClaims.map((c) => c.pods));
  });
});
