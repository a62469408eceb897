import { expect, it } from 'vitest';
import { makeInterruptionHandler } from '../../lambdas/interruption/run.ts';
import { makeInstanceHealthReader } from '../../shared/adapters/aws/instance-status.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { Annotation, NodeClaimConditionType, parseInstanceId } from '../../shared/core/index.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { setUpInterruption } from '../../shared/usecases/interruption/setup.ts';
import { SCHEDULED_EVENT } from '../harness/lambda-triggers.ts';
import { setInstanceHealth } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// EC2's instance status poll end to end: three nodes Flotilla launched for a Deployment, EC2 (the
// harness answering DescribeInstanceStatus's health filters, as moto reports every instance
// healthy) reporting one instance's status check failed for 3 minutes, one instance's retirement
// scheduled and one system check failed for 30 s, and an instance of another cluster impaired. The
// interruption Lambda's schedule runs the poll as that Lambda: the controller group on the API
// server, its own role on AWS (DescribeInstanceStatus held to its synthesized policy).

const e2e = new ProvisionerE2E('status');
const MIN = 60_000;

it('replaces a failed instance forcefully and a retiring one gracefully, and leaves the rest', async () => {
  const { server, account } = e2e.env;
  const pool = await e2e.createPool('status', 'status', {
    instanceTypes: ['m5.large'],
    capacityTypes: ['on-demand'],
  });
  // One pod of 1500m per m5.large (1.93 cpu allocatable): three nodes.
  await e2e.deploy('status', 'status', 3, '1500m');
  await e2e.run(`status-${e2e.id}`);
  await e2e.allRunning('status', 3);
  const claims = (await e2e.nodeClaimsOf(pool)).sort((a, b) => a.name.localeCompare(b.name));
  expect(claims).toHaveLength(3);
  const [broken, retiring, flaky] = claims.map((c) => ({
    name: c.name,
    instanceId: parseInstanceId(c.status.providerId) ?? '',
  })) as [
    { name: string; instanceId: string },
    { name: string; instanceId: string },
    { name: string; instanceId: string },
  ];
  const ago = (ms: number) => new Date(Date.now() - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await setInstanceHealth(server.endpoint, {
    [broken.instanceId]: { instanceStatus: { status: 'impaired', impairedSince: ago(3 * MIN) } },
    [retiring.instanceId]: {
      events: [{ code: 'instance-retirement', description: 'The instance is running on degraded hardware' }],
    },
    [flaky.instanceId]: { systemStatus: { status: 'impaired', impairedSince: ago(30_000) } },
    'i-0another0cluster0': { systemStatus: { status: 'impaired', impairedSince: ago(10 * MIN) } },
  });

  const aws = account.as('interruption');
  const handler = makeInterruptionHandler(
    setUpInterruption({
      cluster: e2e.env.cluster,
      cloud: aws.cloud,
      terminationQueue: makeSqsTerminationQueue(aws.sqs, account.stack.queueUrls.termination),
      logger: e2e.logger,
      metrics: e2e.metrics,
      readHealth: makeInstanceHealthReader(aws.ec2),
      clock: systemClock,
    }),
  );
  const result = await asLambda(server, 'interruption', () => handler(SCHEDULED_EVENT));
  expect(result).toMatchObject({ kind: 'polled', reported: 4 });
  if (!('outcomes' in result)) throw new Error('the schedule runs the poll');
  expect([...result.outcomes].sort((a, b) => (a.nodeClaim ?? '').localeCompare(b.nodeClaim ?? ''))).toEqual(
    [
      { instanceId: broken.instanceId, nodeClaim: broken.name, action: 'forcefulTermination' },
      { instanceId: retiring.instanceId, nodeClaim: retiring.name, action: 'cordonAndDrain' },
    ].sort((a, b) => a.nodeClaim.localeCompare(b.nodeClaim)),
  );

  const read = async (name: string) => {
    const claim = await e2e.env.cluster.nodeClaim(name);
    if (claim === undefined) throw new Error(`NodeClaim ${name} is gone`);
    return claim;
  };
  const b = await read(broken.name);
  expect(b.deleting).toBe(true);
  expect(b.annotations[Annotation.terminationTimestamp]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  expect(b.status.conditions.find((c) => c.type === NodeClaimConditionType.disruptionReason)).toMatchObject({
    status: 'True',
    reason: 'InstanceStatusFailure',
  });
  const r = await read(retiring.name);
  expect(r.deleting).toBe(true);
  expect(r.annotations[Annotation.terminationTimestamp]).toBeUndefined();
  expect(r.status.conditions.find((c) => c.type === NodeClaimConditionType.disruptionReason)).toMatchObject({
    reason: 'ScheduledEvent',
  });
  expect((await read(flaky.name)).deleting).toBe(false);
  await setInstanceHealth(server.endpoint, {});
}, 240_000);
