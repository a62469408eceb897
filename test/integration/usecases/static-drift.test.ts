import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { makeLaunchRequester } from '../../../shared/adapters/aws/follow-up.ts';
import { makeSqsTerminationQueue } from '../../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import { disrupt } from '../../../shared/usecases/disruption/controller.ts';
import { ProvisionerE2E } from '../../e2e/provisioner-fixture.ts';
import { waitFor } from '../../harness/proc.ts';
import { TABLE } from '../aws/cloud-fixture.ts';
import { CLUSTER } from '../aws/fixtures.ts';
import { asLambda } from '../aws/lambda-cold-start.ts';

// StaticDrift on the real servers: the shared kube-apiserver (kube-scheduler and the node simulator
// playing kubelet) and moto, the disruption pass running as the disruption Lambda and the
// provisioner as its own (the flotilla:controller group on the API server, each role's policy on
// every AWS call). The test applies what a user applies: a static NodePool, then an edit of its
// template's labels; Flotilla's provisioner, lifecycle and disruption do the rest.

const e2e = new ProvisionerE2E('sdrift');
const { id, logger } = e2e;
const karpenter = { group: 'karpenter.sh', version: 'v1' };

/** One disruption pass as the Lambda runs it, limited to `pool` (the API server is shared). */
function pass(pool: string, holder: string) {
  const { server, cluster, account } = e2e.env;
  const aws = account.as('disruption');
  return asLambda(server, 'disruption', () =>
    disrupt(
      {
        cluster,
        cloud: aws.cloud,
        leases: new DynamoLeaseStore(aws.dynamodb, TABLE),
        clock: systemClock,
        sleep: (ms) => sleep(ms),
        logger,
        terminationQueue: makeSqsTerminationQueue(aws.sqs, account.stack.queueUrls.termination),
        requestLaunch: makeLaunchRequester({
          sqs: aws.sqs,
          queueUrl: account.stack.queueUrls.podEvents,
          clusterName: CLUSTER,
          clock: systemClock,
        }),
      },
      { holder, leaseName: `disruption#${id}`, nodePools: (name) => name === pool },
    ),
  );
}

/** A user's edit of a NodePool's template labels (retried on a conflict with a status write). */
async function relabel(name: string, value: string): Promise<void> {
  const { custom } = e2e.env;
  for (let attempt = 1; ; attempt++) {
    const pool = (await custom.getClusterCustomObject({ ...karpenter, plural: 'nodepools', name })) as {
      spec: { template: { metadata?: { labels?: Record<string, string> } } };
    };
    pool.spec.template.metadata = {
      ...pool.spec.template.metadata,
      labels: { ...pool.spec.template.metadata?.labels, release: value },
    };
    try {
      await custom.replaceClusterCustomObject({ ...karpenter, plural: 'nodepools', name, body: pool });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
    }
  }
}

const initialized = (c: Awaited<ReturnType<typeof e2e.nodeClaimsOf>>[number]) =>
  !c.deleting &&
  c.status.nodeName !== undefined &&
  c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True');

async function eventsFor(reason: string, name: string) {
  const events = await e2e.env.core.listNamespacedEvent({ namespace: 'default' });
  return events.items.filter((e) => e.reason === reason && e.involvedObject.name === name);
}

describe('StaticDrift on the real servers, as the Lambdas', () => {
  it('replaces a drifted static node by a new one, launched and initialized before the old one goes', async () => {
    const pool = await e2e.createPool('sdrift', 'fixed', { instanceTypes: ['m5.large'], replicas: 1 });
    await asLambda(e2e.env.server, 'provisioner', () => e2e.run(`replicas-${id}`));
    const [original] = await waitFor(
      'the replica initialized',
      async () => {
        const all = await e2e.nodeClaimsOf(pool);
        return all.length === 1 && all.every(initialized) ? all : undefined;
      },
      { timeoutMs: 120_000 },
    );

    // The user changes the template: the pool's hash changes and its node drifts.
    await relabel(pool, 'next');
    const started = await pass(pool, `start-${id}`);
    expect(started.decisions).toEqual([
      expect.objectContaining({
        method: 'static-drift',
        reason: 'Drifted',
        action: 'replace',
        outcome: 'started',
      }),
    ]);
    const [replacement] = started.decisions[0]?.replacements ?? [];
    expect(started.decisions[0]?.candidates.map((c) => c.nodeClaim)).toEqual([original?.name]);
    // The drifted node stays while its replacement comes up, and the provisioner's static pass
    // (which launches the replacement) does not take either for a surplus.
    const launched = await asLambda(e2e.env.server, 'provisioner', () => e2e.run(`replacement-${id}`));
    expect(launched.kind === 'provisioned' ? (launched.staticDeleted ?? []) : []).toEqual([]);
    const both = await waitFor(
      'the replacement initialized beside the drifted node',
      async () => {
        const all = await e2e.nodeClaimsOf(pool);
        return all.length === 2 && all.every(initialized) ? all : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(both.map((c) => c.name).sort()).toEqual([original?.name, replacement?.nodeClaim].sort());
    expect(both.find((c) => c.name === replacement?.nodeClaim)?.labels['release']).toBe('next');

    const finished = await pass(pool, `finish-${id}`);
    expect(finished.decisions).toEqual([
      expect.objectContaining({ method: 'static-drift', action: 'replace', outcome: 'deleted' }),
    ]);
    const after = await e2e.nodeClaimsOf(pool);
    expect(after.filter((c) => !c.deleting).map((c) => c.name)).toEqual([replacement?.nodeClaim]);
    expect(after.find((c) => c.name === original?.name)?.deleting ?? true).toBe(true);
    expect(await eventsFor('DisruptionLaunching', original?.name ?? '')).toHaveLength(1);
    expect(await eventsFor('DisruptionTerminating', original?.name ?? '')).toHaveLength(1);
  }, 300_000);
});
