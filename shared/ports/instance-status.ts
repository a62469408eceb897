// What EC2's status checks say of instances (DescribeInstanceStatus), for node repair. The AWS
// implementation is shared/adapters/aws/instance-status.ts.

/** An instance EC2 reports impaired. */
export interface ImpairedInstance {
  readonly instanceId: string;
  /** The failed checks: `instanceStatus`, `systemStatus`. */
  readonly checks: readonly string[];
  /** The earliest `ImpairedSince` of the failed checks (epoch ms), when EC2 reports one. */
  readonly impairedSinceMs?: number;
}

/**
 * The instances among `instanceIds` whose instance or system status check EC2 reports impaired.
 * Instances EC2 does not report (stopped, pending, or not in this account) are left out.
 * @throws CloudApiError
 */
export type ImpairedInstanceReader = (
  instanceIds: ReadonlySet<string>,
) => Promise<readonly ImpairedInstance[]>;

/** What EC2's status reports of an instance that calls for its replacement (Karpenter's categories). */
export type InstanceHealthCategory =
  /** The instance status check failed (the instance's own OS or configuration). */
  | 'instanceStatus'
  /** The system status check failed (the host EC2 runs it on). */
  | 'systemStatus'
  /** EC2 scheduled a reboot, maintenance, retirement or stop of the instance. */
  | 'eventStatus';

/** One failed check or scheduled event of an instance. */
export interface InstanceHealthProblem {
  readonly category: InstanceHealthCategory;
  /** The check's name (`reachability`) or the event's code (`instance-retirement`). */
  readonly name: string;
  /** Since when the check fails, when EC2 says (epoch ms); absent for a scheduled event. */
  readonly sinceMs?: number;
}

/** An instance whose status checks fail or that has a scheduled event. */
export interface InstanceHealth {
  readonly instanceId: string;
  readonly problems: readonly InstanceHealthProblem[];
}

/**
 * Every running instance of the account and region whose instance or system status check is
 * impaired, or that has a scheduled reboot, maintenance, retirement or stop event not completed or
 * cancelled: instances of other clusters included (the caller keeps its own).
 * @throws CloudApiError
 */
export type InstanceHealthReader = () => Promise<readonly InstanceHealth[]>;
