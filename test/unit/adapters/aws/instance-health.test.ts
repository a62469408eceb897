import { describe, expect, it } from 'vitest';
import { toInstanceHealth } from '../../../../shared/adapters/aws/instance-status.ts';

// How EC2's DescribeInstanceStatus entries read as the instance status poll's health reports.

describe('toInstanceHealth', () => {
  const since = new Date('2026-12-03T09:40:00Z');

  it('takes each failed check with its time, and the pending scheduled events the poll acts on', () => {
    expect(
      toInstanceHealth({
        InstanceId: 'i-0a',
        InstanceStatus: {
          Status: 'impaired',
          Details: [{ Name: 'reachability', Status: 'failed', ImpairedSince: since }],
        },
        SystemStatus: { Status: 'ok', Details: [{ Name: 'reachability', Status: 'passed' }] },
        Events: [
          { Code: 'system-maintenance', Description: 'Scheduled host maintenance' },
          { Code: 'instance-reboot', Description: '[Completed] Scheduled reboot' },
          { Code: 'instance-stop', Description: '[Canceled] Scheduled stop' },
        ],
      }),
    ).toEqual({
      instanceId: 'i-0a',
      problems: [
        { category: 'instanceStatus', name: 'reachability', sinceMs: since.getTime() },
        { category: 'eventStatus', name: 'system-maintenance' },
      ],
    });
  });

  it('keeps a failed check without a time, and leaves out healthy, initializing and insufficient-data ones', () => {
    expect(
      toInstanceHealth({
        InstanceId: 'i-0b',
        SystemStatus: { Status: 'impaired', Details: [{ Name: 'reachability', Status: 'failed' }] },
      }),
    ).toEqual({ instanceId: 'i-0b', problems: [{ category: 'systemStatus', name: 'reachability' }] });
    for (const Status of ['ok', 'initializing', 'insufficient-data'] as const) {
      expect(
        toInstanceHealth({ InstanceId: 'i-0c', InstanceStatus: { Status }, SystemStatus: { Status } }),
      ).toBeUndefined();
    }
    // An impaired summary whose details are not failed (still initializing) is not a failure yet.
    expect(
      toInstanceHealth({
        InstanceId: 'i-0d',
        InstanceStatus: { Status: 'impaired', Details: [{ Name: 'reachability', Status: 'initializing' }] },
      }),
    ).toBeUndefined();
  });
});
