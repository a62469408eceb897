import { DescribeInstanceStatusCommand, type EC2Client, type InstanceStatus } from '@aws-sdk/client-ec2';
import type { ImpairedInstance, ImpairedInstanceReader } from '../../ports/instance-status.ts';
import { call } from './errors.ts';

/** Statuses per page: EC2's largest, so 2,000 running instances are two requests. */
const PAGE_SIZE = 1000;

/**
 * The failed checks of one status entry and the earliest time EC2 says they failed; undefined
 * when neither the instance nor the system check is impaired.
 */
export function toImpairedInstance(status: InstanceStatus): ImpairedInstance | undefined {
  const checks: string[] = [];
  let sinceMs: number | undefined;
  for (const [name, summary] of [
    ['instanceStatus', status.InstanceStatus],
    ['systemStatus', status.SystemStatus],
  ] as const) {
    if (summary?.Status !== 'impaired') continue;
    checks.push(name);
    for (const detail of summary.Details ?? []) {
      const at = detail.ImpairedSince?.getTime();
      if (detail.Status === 'failed' && at !== undefined && (sinceMs === undefined || at < sinceMs))
        sinceMs = at;
    }
  }
  if (checks.length === 0 || status.InstanceId === undefined) return undefined;
  return {
    instanceId: status.InstanceId,
    checks,
    ...(sinceMs === undefined ? {} : { impairedSinceMs: sinceMs }),
  };
}

/**
 * Reads EC2's status checks of the running instances in one paged DescribeInstanceStatus (no
 * filter: the call takes no tag filter, and its status filters cannot ask for "instance or system
 * impaired" in one request) and keeps the impaired ones among `instanceIds` (this cluster's).
 * Scheduled events (instance-stop, instance-retirement) are left to the interruption Lambda,
 * which receives them from AWS Health.
 */
export function makeImpairedInstanceReader(ec2: EC2Client): ImpairedInstanceReader {
  return async (instanceIds) => {
    const impaired: ImpairedInstance[] = [];
    let nextToken: string | undefined;
    do {
      const page = await call('ec2:DescribeInstanceStatus', () =>
        ec2.send(
          new DescribeInstanceStatusCommand({
            MaxResults: PAGE_SIZE,
            ...(nextToken === undefined ? {} : { NextToken: nextToken }),
          }),
        ),
      );
      for (const status of page.InstanceStatuses ?? []) {
        if (status.InstanceId === undefined || !instanceIds.has(status.InstanceId)) continue;
        const found = toImpairedInstance(status);
        if (found !== undefined) impaired.push(found);
      }
      nextToken = page.NextToken || undefined;
    } while (nextToken !== undefined);
    return impaired;
  };
}
