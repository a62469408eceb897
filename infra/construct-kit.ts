import { CfnOutput, Validations } from 'aws-cdk-lib';
import type { Construct, IConstruct } from 'constructs';

// Helpers shared by the parts of FlotillaCluster (infra/flotilla-cluster.ts).
//
// The parts (queues, rules, schedules, identities, policies, functions) build their resources
// into the scope they are given, the FlotillaCluster itself, with the construct ids the cluster
// always used; they are not child constructs. A child construct would add its id to every
// resource's path, and so change every logical ID: CloudFormation would replace the state table,
// the queues and the roles of a deployed stack on its next update.

/** Acknowledges cdk-nag findings (`RuleId` or `RuleId[finding]`) on `scope` and its children, with the reason. */
export function acknowledge(scope: IConstruct, ids: readonly string[], reason: string): void {
  for (const id of ids) Validations.of(scope).acknowledge({ id, reason });
}

/**
 * A stack output keyed `<scope id><id>` (e.g. `FlotillaStateTableName`), without a hash suffix, so
 * that scripts can find it by a name that does not change.
 */
export function addOutput(scope: Construct, id: string, value: string, description: string): void {
  new CfnOutput(scope, id, { value, description }).overrideLogicalId(`${scope.node.id}${id}`);
}

/** `pod-events` → `PodEvents`, `podEvents` → `PodEvents`. */
export function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value ${String(value)}`);
}
