import { CloudWatchClient, PutMetricAlarmCommand, SetAlarmStateCommand } from '@aws-sdk/client-cloudwatch';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeAlarmReader } from '../../shared/adapters/aws/alarms.ts';
import { ROLLOUT_ALARMS_ANNOTATION } from '../../shared/usecases/disruption/rollout-alarms.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { awsClientConfig } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import { disruptionLambdaPass, relabelNodePool } from './disruption-lambda.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// Rollouts that stop on an alarm, end to end: a user's NodePool names a CloudWatch alarm in its
// `flotilla.io/rollout-alarms` annotation, then changes its template so that its node drifts. The
// disruption pass runs as the disruption Lambda (the controller group on the API server, its own
// role on every AWS call, CloudWatch's DescribeAlarms included): while the alarm (in moto) is in
// ALARM the drifted node stays and the NodePool says why; once it is OK the replacement starts.

const e2e = new ProvisionerE2E('alarms');
const { id } = e2e;
const ALARM = `web-5xx-${id}`;
let pool = '';
let cloudWatch: CloudWatchClient;

/** What the user's alarm does (CloudWatch, played with the account's own credentials). */
const setAlarm = (state: 'OK' | 'ALARM') =>
  cloudWatch.send(new SetAlarmStateCommand({ AlarmName: ALARM, StateValue: state, StateReason: 'e2e' }));

beforeAll(async () => {
  cloudWatch = new CloudWatchClient(awsClientConfig(e2e.env.server));
  await cloudWatch.send(
    new PutMetricAlarmCommand({
      AlarmName: ALARM,
      Namespace: 'Web',
      MetricName: 'HTTPCode_5XX',
      Statistic: 'Sum',
      Period: 60,
      EvaluationPeriods: 1,
      Threshold: 10,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    }),
  );
  pool = await e2e.createPool('web', 'web', { instanceTypes: ['m5.large'] });
  await e2e.env.custom.patchClusterCustomObject(
    {
      group: 'karpenter.sh',
      version: 'v1',
      plural: 'nodepools',
      name: pool,
      body: { metadata: { annotations: { [ROLLOUT_ALARMS_ANNOTATION]: ALARM } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await e2e.deploy('web', 'web', 1, '1500m');
  await e2e.run(`run-${id}`);
  await e2e.allRunning('web', 1);
}, 180_000);

/** One disruption pass over this file's NodePool, reading the alarms as the Lambda does. */
const pass = (holder: string) =>
  disruptionLambdaPass(e2e, pool, `${holder}-${id}`, {
    alarms: makeAlarmReader(new CloudWatchClient(awsConfigAs(e2e.env.server, 'disruption'))),
    options: { validationMs: 1_000 },
  });

const rolloutPaused = async () =>
  (await e2e.env.cluster.nodePools()).items
    .find((p) => p.pool.name === pool)
    ?.conditions.find((c) => c.type === 'RolloutPaused');

const poolEvents = async (reason: string) =>
  (await e2e.env.core.listNamespacedEvent({ namespace: 'default' })).items.filter(
    (e) => e.reason === reason && e.involvedObject.name === pool,
  );

describe('rollouts that stop on a CloudWatch alarm', () => {
  it('a drifted node stays while the alarm is in ALARM, and is replaced once it is OK', async () => {
    await setAlarm('ALARM');
    await relabelNodePool(e2e, pool, 'release', 'two');

    const held = await pass('held');
    expect(held.decisions).toEqual([]);
    const drifted = (await e2e.env.cluster.nodeClaims()).items.filter(
      (c) =>
        c.nodePoolName === pool &&
        c.status.conditions.some((x) => x.type === 'Drifted' && x.status === 'True'),
    );
    expect(drifted).toHaveLength(1);
    expect(await rolloutPaused()).toMatchObject({ status: 'True', reason: 'AlarmFiring' });
    expect((await rolloutPaused())?.message).toContain(`${ALARM} in ALARM`);
    expect(await poolEvents('RolloutPaused')).toHaveLength(1);
    expect(e2e.logLines.filter((l) => l['decision'] === 'rolloutHold' && l['nodePool'] === pool)).toEqual([
      expect.objectContaining({ action: 'start', reason: 'AlarmFiring', alarms: [ALARM] }),
    ]);

    await setAlarm('OK');
    // Its node initialized (the lifecycle's loop takes the taints' leaving): a pass leaves a node
    // not yet initialized alone, alarm or not.
    await waitFor(
      'the drifted NodeClaim initialized',
      async () =>
        (await e2e.env.cluster.nodeClaims()).items.some(
          (c) =>
            c.nodePoolName === pool &&
            c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
        )
          ? true
          : undefined,
      { timeoutMs: 60_000 },
    );
    const resumed = await pass('resumed');
    // On a failure, say what the pass did and logged (a skipped pass, a blocked node).
    const passLines = () =>
      JSON.stringify({
        resumed,
        lines: e2e.logLines.filter((l) => String(l['holder'] ?? '').startsWith('resumed-')).slice(-10),
      });
    expect(resumed.decisions[0], passLines()).toMatchObject({ method: 'drift', reason: 'Drifted' });
    expect(await rolloutPaused()).toMatchObject({ status: 'False', reason: 'AlarmsClear' });
    expect(await poolEvents('RolloutResumed')).toHaveLength(1);
  }, 120_000);
});
