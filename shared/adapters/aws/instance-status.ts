import {
  DescribeInstanceStatusCommand,
  type EC2Client,
  type Filter,
  type InstanceStatus,
} from '@aws-sdk/client-ec2';
import type {
  ImpairedInstance,
  ImpairedInstanceReader,
  InstanceHealth,
  InstanceHealthProblem,
  InstanceHealthReader,
} from '../../ports/instance-status.ts';
import { call } from './errors.ts';

/** Statuses per page: EC2's largest. */
const PAGE_SIZE = 1000;

/** An impaired instance check, or an impaired system check (DescribeInstanceStatus ANDs filter names). */
const CHECK_FILTERS: Filter[][] = [
  [{ Name: 'instance-status.status', Values: ['impaired'] }],
  [{ Name: 'system-status.status', Values: ['impaired'] }],
];

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
 * Reads the instances EC2 reports with an impaired instance or system check (the status poll's two
 * check filters, so a healthy account answers nothing) and keeps those among `instanceIds` (this
 * cluster's). Scheduled events are left to the interruption Lambda, which receives them from AWS
 * Health and its own instance status poll.
 */
export function makeImpairedInstanceReader(ec2: EC2Client): ImpairedInstanceReader {
  return async (instanceIds) => {
    const impaired = new Map<string, ImpairedInstance>();
    for (const filters of CHECK_FILTERS) {
      for await (const status of statuses(ec2, filters)) {
        if (status.InstanceId === undefined || !instanceIds.has(status.InstanceId)) continue;
        const found = toImpairedInstance(status);
        if (found !== undefined) impaired.set(found.instanceId, found);
      }
    }
    return [...impaired.values()];
  };
}

/** Every status entry DescribeInstanceStatus answers for `filters`, page by page. */
async function* statuses(ec2: EC2Client, filters: Filter[]): AsyncGenerator<InstanceStatus> {
  let nextToken: string | undefined;
  do {
    const page = await call('ec2:DescribeInstanceStatus', () =>
      ec2.send(
        new DescribeInstanceStatusCommand({
          Filters: filters,
          MaxResults: PAGE_SIZE,
          ...(nextToken === undefined ? {} : { NextToken: nextToken }),
        }),
      ),
    );
    yield* page.InstanceStatuses ?? [];
    nextToken = page.NextToken || undefined;
  } while (nextToken !== undefined);
}

/** The scheduled events that call for vacating an instance, as Karpenter's instance status poll takes them. */
export const SCHEDULED_EVENT_CODES = [
  'instance-reboot',
  'system-reboot',
  'system-maintenance',
  'instance-retirement',
  'instance-stop',
] as const;

/**
 * The filters of the instance status poll: DescribeInstanceStatus ANDs its filter names, so
 * "instance check impaired, or system check impaired, or a scheduled event" takes three requests,
 * each answering only the instances that match (none in a healthy account).
 */
const HEALTH_FILTERS: Filter[][] = [
  ...CHECK_FILTERS,
  [{ Name: 'event.code', Values: [...SCHEDULED_EVENT_CODES] }],
];

/**
 * The failed checks and pending scheduled events of one status entry. An event whose description
 * EC2 has marked `[Completed]` or `[Canceled]` is over and left out.
 */
export function toInstanceHealth(status: InstanceStatus): InstanceHealth | undefined {
  if (status.InstanceId === undefined) return undefined;
  const problems: InstanceHealthProblem[] = [];
  for (const [category, summary] of [
    ['instanceStatus', status.InstanceStatus],
    ['systemStatus', status.SystemStatus],
  ] as const) {
    if (summary?.Status !== 'impaired') continue;
    for (const detail of summary.Details ?? []) {
      if (detail.Status !== 'failed') continue;
      const since = detail.ImpairedSince?.getTime();
      problems.push({
        category,
        name: detail.Name ?? 'reachability',
        ...(since === undefined ? {} : { sinceMs: since }),
      });
    }
  }
  for (const event of status.Events ?? []) {
    const code = event.Code as string | undefined;
    if (code === undefined || !(SCHEDULED_EVENT_CODES as readonly string[]).includes(code)) continue;
    if (/^\[(Completed|Canceled)\]/.test(event.Description ?? '')) continue;
    problems.push({ category: 'eventStatus', name: code });
  }
  return problems.length === 0 ? undefined : { instanceId: status.InstanceId, problems };
}

/** EC2's instance status poll: three filtered, paged DescribeInstanceStatus requests, one entry per instance. */
export function makeInstanceHealthReader(ec2: EC2Client): InstanceHealthReader {
  return async () => {
    const byId = new Map<string, InstanceStatus>();
    for (const filters of HEALTH_FILTERS) {
      for await (const status of statuses(ec2, filters)) {
        if (status.InstanceId !== undefined && !byId.has(status.InstanceId))
          byId.set(status.InstanceId, status);
      }
    }
    return [...byId.values()].flatMap((s) => {
      const health = toInstanceHealth(s);
      return health === undefined ? [] : [health];
    });
  };
}
