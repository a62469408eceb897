import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { catalogFunction } from '../../infra/functions.ts';
import { FUTURE_FUNCTIONS, makeStack } from './stacks.ts';

const findings = (scope: Parameters<AwsSolutionsChecks['validateScope']>[0]) =>
  new AwsSolutionsChecks(undefined, { verbose: true })
    .validateScope(scope)
    .violations.map(
      (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );

describe('cdk-nag AwsSolutions checks', () => {
  it('find nothing unacknowledged in the default cluster', () => {
    expect(findings(makeStack().stack)).toEqual([]);
  });

  it('find nothing unacknowledged with every kind of Lambda, in a VPC, with an alarm topic', () => {
    const { stack } = makeStack(
      { functions: [catalogFunction, ...FUTURE_FUNCTIONS] },
      { vpc: true, alarmTopic: true },
    );
    // The test VPC itself is not Flotilla's; check only the construct.
    expect(findings(stack.node.findChild('Flotilla'))).toEqual([]);
  });

  it('find nothing unacknowledged in a shadow stack', () => {
    expect(findings(makeStack({ mode: 'shadow' }).stack)).toEqual([]);
  });

  it('do report what is not acknowledged (the check is live)', () => {
    const { stack } = makeStack();
    new sqs.Queue(stack, 'Unguarded');
    expect(findings(stack)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^error AwsSolutions-SQS4: Test\/Unguarded/)]),
    );
  });

  it('give a written reason for every acknowledgment', () => {
    const { stack } = makeStack({ functions: [catalogFunction, ...FUTURE_FUNCTIONS] }, { vpc: true });
    const acknowledged = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === 'aws:cdk:acknowledged-rules'))
      .flatMap((m) => Object.entries(m.data as Record<string, string>))
      // CDK acknowledges some of its own CloudFormation-Validate warnings; ours are cdk-nag's.
      .filter(([id]) => id.includes('AwsSolutions-'));
    expect(acknowledged.length).toBeGreaterThan(10);
    for (const [id, reason] of acknowledged) {
      // Only specific rules, and IAM findings only one by one (RuleId[finding]).
      expect(id).toMatch(/AwsSolutions-(IAM4\[Policy::.+\]|IAM5\[Resource::.+\]|L1|SQS3|S1)$/);
      expect(reason.length, id).toBeGreaterThan(40);
    }
  });
});
