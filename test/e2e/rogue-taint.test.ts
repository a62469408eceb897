import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlotillaError } from '../../shared/core/errors.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { disruptionLambdaPass } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// Karpenter's chaos case: a controller taints every new node of a NodePool `NoExecute`, with a
// taint no pod tolerates, as soon as it sees the node join (and so sometimes just after
// kube-scheduler has bound pods to it, which the taint then evicts). Without a guard every node
// launched for the pods is useless and the pods ask for another. Two NodePools, one with 1
// replica and one with 100, side by side for 5 minutes; the provisioner, termination and
// disruption Lambdas run as deployed (the controller group on the API server, their own roles on
// AWS) on compressed schedules, and emptiness reclaims the useless nodes (consolidateAfter 20 s).
// The guard must hold each pool to at most 3 launches in those 5 minutes. No other harness file
// runs beside this one: their pending pods would otherwise share every provisioner run of this
// case. It has a vitest project of its own (harness-soak, see vitest.config.ts) that runs beside
// the unit tests, which use no server, so the five minutes are not added to the run's wall time.

const e2e = new ProvisionerE2E('rogue');
const { id, logLines } = e2e;

const ROGUE_TAINT = { key: 'chaos.example.com/rogue', value: 'true', effect: 'NoExecute' };
const WINDOW_MS = 5 * 60_000;
const roguePools: { pool: string; replicas: number }[] = [];
let startedAt = 0;
let stopping = false;
let loops: Promise<void>[] = [];
const errors: unknown[] = [];
/** Nodes the rogue controller tainted, and how long after it first saw them. */
const tainted = new Map<string, number>();

/** One pool runs 1 replica, the other 100 (one m5.4xlarge holds them all). */
const CASES = [
  { group: 'one', replicas: 1, type: 'm5.large', cpu: '1500m' },
  { group: 'many', replicas: 100, type: 'm5.4xlarge', cpu: '10m' },
] as const;

beforeAll(async () => {
  for (const { group, replicas, type } of CASES) {
    const pool = await e2e.createPool(group, group, {
      instanceTypes: [type],
      disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: '20s' },
    });
    roguePools.push({ pool, replicas });
  }
  // The five minutes count from the Deployments' creation; the Lambdas start once kube-scheduler
  // has found no node for their pods.
  startedAt = Date.now();
  await Promise.all(
    CASES.map(({ group, replicas, cpu }) => e2e.deploy(group, `rogue-${group}`, replicas, cpu)),
  );
  startLoops();
});

afterAll(async () => {
  stopping = true;
  await Promise.all(loops);
});

const mine = (pool: string | undefined) => pool?.startsWith(`prov-${id}-`) === true;

function startLoops(): void {
  const { server } = e2e.env;
  const termination = e2e.terminationLambda();
  let runs = 0;
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
    // The rogue controller: lists this file's Nodes and taints each new one. A merge patch
    // replaces the whole taint list, so it carries the resourceVersion it read: a Node that
    // changed meanwhile (Flotilla lifting karpenter.sh/unregistered, say) answers 409, and the
    // next tick reads it again. Without it the patch could put back a taint another writer
    // removed, and the Node would never initialize.
    loop(100, async () => {
      for (const { pool } of roguePools) {
        for (const node of await e2e.nodesOf(pool)) {
          const name = node.metadata?.name ?? '';
          if ((node.spec?.taints ?? []).some((t) => t.key === ROGUE_TAINT.key)) continue;
          try {
            await e2e.env.core.patchNode(
              {
                name,
                body: {
                  metadata: { resourceVersion: node.metadata?.resourceVersion },
                  spec: { taints: [...(node.spec?.taints ?? []), ROGUE_TAINT] },
                },
              },
              setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
            );
          } catch (error) {
            if (Number((error as { code?: unknown }).code) === 409) continue;
            throw error;
          }
          const created = Date.parse(String(node.metadata?.creationTimestamp ?? ''));
          tainted.set(name, Date.now() - created);
        }
      }
    }),
    // The provisioner, on pending pods (the shim's trigger, compressed).
    loop(500, async () => {
      runs += 1;
      if ((await e2e.pendingPods()).length === 0) return;
      await asLambda(server, 'provisioner', () => e2e.run(`run-${runs}-${id}`, { batchMaxMs: 1_000 }));
    }),
    // Termination of the NodeClaims emptiness deletes.
    loop(500, async () => {
      const { cluster } = e2e.env;
      const deleting = (await cluster.nodeClaims()).items.filter((c) => c.deleting && mine(c.nodePoolName));
      await Promise.all(
        deleting.map((c) => asLambda(server, 'termination', () => termination.terminate(c.name))),
      );
    }),
    // Disruption every 2 s, validating emptiness after 3 s (Karpenter's 15 s, compressed).
    loop(2_000, async () => {
      runs += 1;
      await disruptionLambdaPass(e2e, mine, `disrupt-${runs}-${id}`, { options: { validationMs: 3_000 } });
    }),
  ];
}

describe('rogue taint', () => {
  it('a controller tainting every new node NoExecute: at most 3 nodes launched in 5 minutes for 1 and for 100 replicas, and the empty ones reclaimed', async () => {
    // Progress while the five minutes run.
    while (Date.now() < startedAt + WINDOW_MS) {
      await sleep(Math.min(60_000, startedAt + WINDOW_MS - Date.now()));
      const launches = roguePools.map(
        ({ pool, replicas }) => `${replicas} replicas: ${launchedIn(pool, Date.now()).length} launched`,
      );
      progress(`rogue taint, ${Math.round((Date.now() - startedAt) / 1000)} s: ${launches.join(', ')}`);
    }
    const end = startedAt + WINDOW_MS;
    for (const { pool, replicas } of roguePools) {
      const launched = launchedIn(pool, end);
      const backoffs = logLines.filter(
        (l) =>
          l['decision'] === 'launchBackoff' &&
          l['nodePool'] === pool &&
          l['action'] === 'start' &&
          Date.parse(String(l['time'])) <= end,
      );
      const at = (l: Record<string, unknown>) =>
        `${Math.round((Date.parse(String(l['time'])) - startedAt) / 1000)} s`;
      progress(
        `rogue taint, ${replicas} replicas: ${launched.length} nodes launched in 5 minutes (${launched.map((l) => `${String(l['nodeClaim'])} at ${at(l)} by ${String(l['holder'])}`).join(', ')}), launches paused ${backoffs.length} times (${backoffs.map((b) => `${b['backoffSeconds']}s after ${b['reason']} of ${String(b['nodeClaim'])} at ${at(b)}`).join(', ')})`,
      );
      expect(launched.length).toBeGreaterThan(0);
      expect(launched.length).toBeLessThanOrEqual(3);
      expect(backoffs.length).toBeGreaterThan(0);
      // The NodePool says why (its LaunchBackoff condition: True while paused, False once a pause
      // has ended), and so do its Events.
      const status = (await e2e.env.cluster.nodePools()).items.find((p) => p.pool.name === pool);
      expect(status?.conditions.find((c) => c.type === 'LaunchBackoff')?.reason).toBeDefined();
      const events = await e2e.env.core.listNamespacedEvent({ namespace: 'default' });
      expect(events.items.some((e) => e.reason === 'LaunchBackoff' && e.involvedObject.name === pool)).toBe(
        true,
      );
      // Reclaimed: every rogue-tainted node but the newest goes once it has been empty for
      // consolidateAfter (20 s).
      await waitFor(
        `the rogue-tainted nodes of ${pool} reclaimed`,
        async () => ((await e2e.nodesOf(pool)).length <= 1 ? true : undefined),
        { timeoutMs: 120_000 },
      );
      const reclaimed = logLines.filter(
        (l) => l['decision'] === 'disrupt' && l['reason'] === 'Empty' && JSON.stringify(l).includes(pool),
      );
      expect(reclaimed.length).toBeGreaterThan(0);
      // Every node reclaimed in the window counted as a failure: termination removes a Node within
      // seconds, so the guard must not depend on a provisioner run coming in between.
      const reclaimedClaims = reclaimed
        .filter((l) => Date.parse(String(l['time'])) <= end)
        // One emptiness command can take both pools' nodes.
        .flatMap((l) =>
          (l['candidates'] as { nodeClaim: string; nodePool: string }[])
            .filter((c) => c.nodePool === pool)
            .map((c) => c.nodeClaim),
        );
      const counted = new Set(
        logLines
          .filter(
            (l) => l['decision'] === 'launchBackoff' && l['nodePool'] === pool && l['action'] === 'start',
          )
          .map((l) => String(l['nodeClaim'])),
      );
      expect(reclaimedClaims.filter((c) => !counted.has(c))).toEqual([]);
    }
    const delays = [...tainted.values()].sort((a, b) => a - b);
    progress(
      `rogue taint: ${tainted.size} nodes tainted, ${delays[0] ?? 0}-${delays.at(-1) ?? 0} ms after they were created`,
    );
    // A failed invocation failed with a typed error, and the next one went on.
    expect(errors.filter((e) => !(e instanceof FlotillaError))).toEqual([]);
  }, 600_000);
});

/** The launch decision lines of `pool` up to `untilMs`. */
function launchedIn(pool: string, untilMs: number) {
  return logLines.filter(
    (l) =>
      l['decision'] === 'launch' &&
      l['outcome'] === 'launched' &&
      l['nodePool'] === pool &&
      Date.parse(String(l['time'])) <= untilMs,
  );
}
