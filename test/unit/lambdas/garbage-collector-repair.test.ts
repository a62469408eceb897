import { describe, expect, it } from 'vitest';
import { nodeRepairSwitch } from '../../../lambdas/common/wiring.ts';
import {
  GarbageCollectionStepsFailedError,
  makeGarbageCollectorHandler,
} from '../../../lambdas/garbage-collector/run.ts';
import { toImpairedInstance } from '../../../shared/adapters/aws/instance-status.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { NodeRepairResult } from '../../../shared/usecases/node-repair/repair.ts';

// Node repair's wiring in the garbage collector: the switch as the environment carries it, the
// repair pass after the collection pass, and EC2's status entries read as impaired instances.

const scheduled = {
  version: '0',
  id: '5c1d3a4e-9b7f-4f0e-8a51-2f6d8e9a0b12',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-27T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/flotilla-prod-eu-garbage-collection'],
  detail: {},
};

const collected = { terminated: [], deletedNodeClaims: [], failed: [] };

describe('FLOTILLA_NODE_REPAIR', () => {
  it.each([
    [undefined, false],
    ['false', false],
    ['true', true],
  ])('%s reads as %s', (value, on) => {
    expect(nodeRepairSwitch.parse(value)).toBe(on);
  });

  it.each(['TRUE', 'yes', '1', ''])('refuses %j instead of reading it as off', (value) => {
    const parsed = nodeRepairSwitch.safeParse(value);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe('must be "true" or "false"');
  });
});

describe('garbage collector with node repair', () => {
  const handler = (repair: NodeRepairResult) => {
    const order: string[] = [];
    const h = makeGarbageCollectorHandler({
      logger: makeLogger({}, { sink: () => undefined }),
      pass: async () => {
        order.push('collect');
        return collected;
      },
      repair: async () => {
        order.push('repair');
        return repair;
      },
    });
    return { h, order };
  };

  it('runs the repair pass after the collection pass and returns both', async () => {
    const repair = { repaired: ['default-abc'], blocked: [], unblocked: [], failed: [] };
    const { h, order } = handler(repair);
    expect(await h(scheduled)).toEqual({ ...collected, repair });
    expect(order).toEqual(['collect', 'repair']);
  });

  it('fails the invocation when a repair step failed, naming it', async () => {
    const cause = new Error('Forbidden');
    const { h } = handler({
      repaired: [],
      blocked: [],
      unblocked: [],
      failed: [{ step: 'repair default-x', error: cause }],
    });
    const error = await h(scheduled).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GarbageCollectionStepsFailedError);
    expect((error as Error).message).toContain('repair default-x');
    expect((error as Error).cause).toBe(cause);
  });
});

describe('toImpairedInstance', () => {
  const since = new Date('2026-11-27T09:40:00Z');
  it('takes impaired instance and system checks with the earliest ImpairedSince of the failed details', () => {
    expect(
      toImpairedInstance({
        InstanceId: 'i-0a',
        InstanceStatus: {
          Status: 'impaired',
          Details: [
            { Name: 'reachability', Status: 'failed', ImpairedSince: new Date('2026-11-27T09:45:00Z') },
          ],
        },
        SystemStatus: {
          Status: 'impaired',
          Details: [{ Name: 'reachability', Status: 'failed', ImpairedSince: since }],
        },
      }),
    ).toEqual({
      instanceId: 'i-0a',
      checks: ['instanceStatus', 'systemStatus'],
      impairedSinceMs: since.getTime(),
    });
  });

  it('keeps an impaired report without a time as such, and leaves healthy or initializing ones out', () => {
    expect(toImpairedInstance({ InstanceId: 'i-0b', SystemStatus: { Status: 'impaired' } })).toEqual({
      instanceId: 'i-0b',
      checks: ['systemStatus'],
    });
    expect(
      toImpairedInstance({
        InstanceId: 'i-0c',
        InstanceStatus: { Status: 'ok', Details: [{ Name: 'reachability', Status: 'passed' }] },
        SystemStatus: { Status: 'initializing' },
      }),
    ).toBeUndefined();
  });
});
