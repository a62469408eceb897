import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import {
  LAUNCH_BACKOFF_ANNOTATION,
  reconcileLaunchBackoff,
} from '../../../shared/usecases/runaway-guard/index.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { defaultPoolYaml } from './scenarios.ts';

// The runaway guard against a rogue controller that taints every new node NoExecute with a taint
// no pod tolerates (Karpenter's chaos test): without it every provisioning run launches another
// node for the same pods; with it the NodePool pauses (1 min, 2, 4, …) and probes one node at a
// time, the empty tainted nodes go through emptiness, and launches resume once a node hosts pods.

const MINUTE = 60_000;

const scenario = (replicas: number, runawayGuard = true) => `name: rogue-taint
duration: 16m
settings: { runawayGuard: ${runawayGuard} }
bootDelay: 45s
${defaultPoolYaml([
  '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, c6i] }',
  '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [4xlarge] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
])}workloads:
  - kind: Deployment
    name: web
    replicas: ${replicas}
    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: 100m, memory: 128Mi } }
events:
  - { kind: RogueTaint, at: 0s, until: 10m, key: chaos.example.com/rogue, effect: NoExecute }
`;

const minutes = (r: SimulationRecord, atMs: number) => (atMs - r.scenario.startMs) / MINUTE;
const backoffs = (r: SimulationRecord) => r.decisions.filter((d) => d['decision'] === 'launchBackoff');

describe.each([1, 100])('a rogue NoExecute taint on every new node, %i replicas', (replicas) => {
  const record = simulate(parseScenario(scenario(replicas), 'rogue-taint.yaml'));

  it('launches at most 3 nodes in 5 minutes', async () => {
    const r = await record;
    expect(r.launches.filter((l) => minutes(r, l.atMs) < 5).length).toBeLessThanOrEqual(3);
    // Without the guard a node a minute (the pending-pods schedule) would have launched.
    expect(r.launches.filter((l) => minutes(r, l.atMs) < 10).length).toBeLessThanOrEqual(4);
  });

  it('pauses the NodePool longer after each failed node, naming the taint, and says when it resumes', async () => {
    const r = await record;
    const starts = backoffs(r).filter((d) => d['action'] === 'start');
    expect(starts.length).toBeGreaterThanOrEqual(2);
    expect(starts.map((d) => d['reason'])).toEqual(starts.map(() => 'UnexpectedTaint'));
    expect(starts.map((d) => d['backoffSeconds'])).toEqual(starts.map((_, i) => 60 * 2 ** i));
    expect(String(starts[0]?.['detail'])).toContain('chaos.example.com/rogue:NoExecute');
    expect(
      backoffs(r).filter((d) => d['action'] === 'end' && d['reason'] === 'expired').length,
    ).toBeGreaterThan(0);
    // The rogue controller stops at 10 minutes: the next node hosts the pods and the count resets.
    expect(backoffs(r).at(-1)).toMatchObject({ action: 'end', reason: 'recovered', failures: 0 });
    // While paused, the pods are told why.
    expect(
      r.decisions.some(
        (d) => d['decision'] === 'unschedulable' && String(d['reason']).includes('launches paused until'),
      ),
    ).toBe(true);
  });

  it('reclaims the empty tainted nodes and runs every pod once the taint is gone', async () => {
    const r = await record;
    const failed = new Set(backoffs(r).flatMap((d) => (d['action'] === 'start' ? [d['nodeClaim']] : [])));
    const emptied = new Set(r.terminations.filter((t) => t.reason === 'empty').map((t) => t.nodeClaim));
    for (const claim of failed) expect(emptied.has(claim as string)).toBe(true);
    expect(r.samples.at(-1)).toMatchObject({ runningPods: replicas, pendingPods: 0, nodes: 1 });
  });
});

describe('the same rogue taint with the stack`s runawayGuard off, as Karpenter', () => {
  const record = simulate(parseScenario(scenario(1, false), 'rogue-taint.yaml'));

  it('pauses nothing: a node a provisioning run while the taint lasts, no launch back-off', async () => {
    const r = await record;
    expect(backoffs(r)).toEqual([]);
    expect(r.decisions.some((d) => String(d['reason']).includes('launches paused'))).toBe(false);
    // With the guard on, at most 4 in 10 minutes (above).
    expect(r.launches.filter((l) => minutes(r, l.atMs) < 10).length).toBeGreaterThan(6);
    expect(r.samples.at(-1)).toMatchObject({ runningPods: 1, pendingPods: 0 });
  });
});

describe('reconcileLaunchBackoff', () => {
  async function pausedPool() {
    const clock = makeManualClock(new Date('2026-01-01T00:05:00Z'));
    const cluster = makeMemoryCluster({ clock });
    cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [],
          },
        },
      },
    });
    const pools = (await cluster.nodePools()).items;
    const claim = {
      name: 'default-a',
      uid: 'u',
      nodePoolName: 'default',
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      labels: {},
      annotations: {},
      finalizers: [],
      requirements: [],
      requests: {},
      taints: [],
      startupTaints: [],
      createdAtMs: Date.parse('2026-01-01T00:00:00Z'),
      deleting: true,
      status: { conditions: [] },
    };
    const lines: unknown[] = [];
    const ports = {
      cluster,
      logger: makeLogger({}, { sink: (line) => lines.push(JSON.parse(line)) }),
      metrics: quietMetrics,
    };
    const guard = await reconcileLaunchBackoff(ports, {
      kind: 'lifecycle',
      pools,
      claims: [],
      nodes: async () => [],
      timedOut: [{ claim, reason: 'registration_timeout', message: 'no node registered within 15m' }],
      nowMs: clock.now().getTime(),
    });
    return { clock, cluster, ports, guard, lines, claim };
  }

  it('writes the LaunchBackoff condition (not part of Ready) and a Warning Event on the NodePool', async () => {
    const { cluster, guard } = await pausedPool();
    expect(guard.paused.get('default')).toContain('launches paused until 2026-01-01T00:06:00.000Z');
    const pool = (await cluster.nodePools()).items[0];
    expect(pool?.conditions).toEqual([
      expect.objectContaining({ type: 'LaunchBackoff', status: 'True', reason: 'RegistrationTimeout' }),
    ]);
    expect(JSON.parse(pool?.annotations?.[LAUNCH_BACKOFF_ANNOTATION] ?? '')).toEqual({
      failures: 1,
      lastFailedNodeClaimCreated: '2026-01-01T00:00:00.000Z',
      pausedUntil: '2026-01-01T00:06:00.000Z',
      observedGeneration: 1,
    });
    expect(cluster.events().map((e) => e.event)).toEqual([
      expect.objectContaining({
        subject: expect.objectContaining({ kind: 'NodePool', name: 'default' }),
        reason: 'LaunchBackoff',
        type: 'Warning',
      }),
    ]);
  });

  it('switched off, pauses nothing and clears what it left: annotation gone, condition False, an Event', async () => {
    const { clock, cluster, ports, lines, claim } = await pausedPool();
    const off = async () =>
      reconcileLaunchBackoff(ports, {
        kind: 'lifecycle',
        pools: (await cluster.nodePools()).items,
        claims: [],
        nodes: async () => [],
        // A further failure counts for nothing while the guard is off.
        timedOut: [{ claim, reason: 'launch_timeout', message: 'no instance within 5m' }],
        nowMs: clock.now().getTime(),
        enabled: false,
      });
    const guard = await off();
    expect(guard.paused.size).toBe(0);
    expect(guard.probing.size).toBe(0);
    const pool = (await cluster.nodePools()).items[0];
    expect(pool?.annotations?.[LAUNCH_BACKOFF_ANNOTATION]).toBeUndefined();
    expect(pool?.conditions).toEqual([
      expect.objectContaining({ type: 'LaunchBackoff', status: 'False', reason: 'RunawayGuardOff' }),
    ]);
    expect(cluster.events().map((e) => e.event.reason)).toEqual(['LaunchBackoff', 'LaunchBackoffEnded']);
    expect(
      lines.filter((l) => (l as Record<string, unknown>)['decision'] === 'launchBackoff').at(-1),
    ).toMatchObject({
      action: 'end',
      reason: 'RunawayGuardOff',
      nodePool: 'default',
    });
    // Once cleared, a pass writes nothing more.
    const writes = cluster.events().length;
    await off();
    expect(cluster.events().length).toBe(writes);
    expect((await cluster.nodePools()).items[0]?.conditions).toEqual(pool?.conditions);
  });
});
