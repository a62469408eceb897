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
