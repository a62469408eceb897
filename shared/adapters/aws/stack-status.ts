import { type CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { call } from './errors.ts';

// A CloudFormation stack's status, by its id: the clean-up Lambda tells the stack's deletion
// (DELETE_IN_PROGRESS) from an update or a rollback that removes its custom resource.

/** The stack's status, or undefined when CloudFormation lists none under that id. */
export function makeStackStatusReader(
  cloudFormation: Pick<CloudFormationClient, 'send'>,
): (stackId: string) => Promise<string | undefined> {
  return async (stackId) => {
    const out = await call('cloudformation:DescribeStacks', () =>
      cloudFormation.send(new DescribeStacksCommand({ StackName: stackId })),
    );
    return out.Stacks?.[0]?.StackStatus;
  };
}
