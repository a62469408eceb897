import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import type { InterruptionMessage } from '../../shared/messages/interruption-event.ts';
import { setUpInterruption } from '../../shared/usecases/interruption/setup.ts';
import { waitFor } from '../harness/proc.ts';
import { forgeSummary, honestSummary, summaryCluster, tampered } from '../harness/summary-attack.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// An attacker holding the shim's role publishes the cluster summary an honest shim would, with one
// live NodeClaim (its instance running, its Node Ready) listed under the providerID of an instance
// that does not exist, launched long ago. Garbage collection reads its NodeClaims from that
// summary; it deletes a NodeClaim only when the API server's NodeClaim is still to be collected
// and EC2 has no instance of its providerID, so the NodeClaim lives. An interruption event for
// that other instance does not delete it either.

const e2e = new ProvisionerE2E('summary-attack-gc');

const NOWHERE_ID = 'i-0123456789abcdef0';
const NOWHERE = `aws:///us-east-1a/${NOWHERE_ID}`;
const LONG_AGO = '2020-01-01T00:00:00Z';

async function instanceState(instanceId: string): Promise<string | undefined> {
  const out = await e2e.env.account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

const instanceOf = (providerId: string | undefined) => /\/(i-[0-9a-z]+)$/.exec(providerId ?? '')?.[1] ?? '';

/**
 * A NodeClaim Flotilla launched for a pending pod, once its Node is Ready and the pod runs there.
 * The pod is a Deployment's, not a bare one: kube-controller-manager's taint-eviction controller
 * may see the pod bound to the new Node before it sees `karpenter.sh/unregistered` lifted (two
 * watches, no order between them) and delete it; the Deployment makes another.
 */
async function liveNodeClaim(group: string) {
  const pool = await e2e.createPool(group, group, { instanceTypes: ['m5.large'] });
  await e2e.deploy(group, `victim-${group}`, 1, '500m');
  await asLambda(e2e.env.server, 'provisioner', () => e2e.run(`${group}-${e2e.id}`));
  await e2e.allRunning(`victim-${group}`, 1);
  const claim = await waitFor(
    'the NodeClaim initialized',
    async () =>
      (await e2e.nodeClaimsOf(pool)).find((c) =>
        c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
      ),
    { timeoutMs: 60_000 },
  );
  const node = await e2e.env.cluster.node(claim.status.nodeName ?? '');
  expect(node?.ready).toBe(true);
  const instanceId = instanceOf(claim.status.providerId);
  expect(await instanceState(instanceId)).toBe('running');
  return { claim, instanceId };
}

/** Publishes, as the shim's role can, the honest summary with `name` under `providerID`, launched long ago. */
async function forgeProviderId(name: string, providerID: string): Promise<void> {
  const { server, kc } = e2e.env;
  await forgeSummary(
    server,
    tampered(await honestSummary(kc), (doc) => {
      const claim = doc.head.nodeClaims.find((c) => c['metadata']?.['name'] === name);
      if (claim === undefined) throw new Error(`the summary has no NodeClaim ${name}`);
      claim['status']['providerID'] = providerID;
      claim['metadata']['creationTimestamp'] = LONG_AGO;
      for (const c of claim['status']['conditions'] ?? []) c['lastTransitionTime'] = LONG_AGO;
    }),
  );
}

describe('garbage collection and interruption with a forged cluster summary', () => {
  it('garbage collection keeps a live NodeClaim the summary lists with the providerID of an instance that does not exist', async () => {
    const { server, cluster } = e2e.env;
    const { claim, instanceId } = await liveNodeClaim('gc');
    await forgeProviderId(claim.name, NOWHERE);
    const listed = summaryCluster(server, 'garbage-collector', cluster, e2e.logger);
    // The garbage collector's list of NodeClaims is the forged one.
    expect((await listed.nodeClaims()).items.find((c) => c.name === claim.name)?.status.providerId).toBe(
      NOWHERE,
    );

    const result = await asLambda(server, 'garbage-collector', () =>
      e2e.garbageCollector({ cluster: listed }).pass(),
    );

    expect(result.deletedNodeClaims).not.toContain(claim.name);
    expect(result.terminated).not.toContain(instanceId);
    const after = await cluster.nodeClaim(claim.name);
    expect(after?.uid).toBe(claim.uid);
    expect(after?.deleting).toBe(false);
    expect(await instanceState(instanceId)).toBe('running');
    expect(listed.summaryUse().fromSummary).toBeGreaterThan(0);
    expect(e2e.logLines).toContainEqual(
      expect.objectContaining({
        message: 'nodeClaim not collected',
        nodeClaim: claim.name,
        listedInstanceId: NOWHERE_ID,
      }),
    );
  });

  it('an interruption of an instance that does not exist keeps the live NodeClaim the summary maps to it', async () => {
    const { server, cluster, account } = e2e.env;
    const { claim, instanceId } = await liveNodeClaim('int');
    await forgeProviderId(claim.name, NOWHERE);
    const listed = summaryCluster(server, 'interruption', cluster, e2e.logger);
    const aws = account.as('interruption');
    const deps = setUpInterruption({
      cluster: listed,
      cloud: aws.cloud,
      terminationQueue: makeSqsTerminationQueue(aws.sqs, account.stack.queueUrls.termination),
      logger: e2e.logger,
      metrics: e2e.metrics,
    });
    const message: InterruptionMessage = {
      kind: 'spotInterruption',
      eventId: `forged-${e2e.id}`,
      instanceIds: [NOWHERE_ID],
      detailType: 'EC2 Spot Instance Interruption Warning',
      source: 'aws.ec2',
      time: new Date().toISOString(),
    };
    await asLambda(server, 'interruption', async () => deps.handle(message, await deps.indexNodeClaims()));

    const after = await cluster.nodeClaim(claim.name);
    expect(after?.deleting).toBe(false);
    expect(await instanceState(instanceId)).toBe('running');
    expect(e2e.logLines).toContainEqual(
      expect.objectContaining({ action: 'noNodeClaim', instanceId: NOWHERE_ID }),
    );
  });
});
