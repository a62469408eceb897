import { beforeAll, describe, expect, it } from 'vitest';
import { INTERRUPTION_KINDS, interruptionRulePatterns } from '../../shared/messages/interruption-kinds.ts';
import { makeStack, present, ref } from './stacks.ts';

// Every row of the interruption kinds table yields a rule of the synthesized stack that delivers
// its events to the interruption queue, and every such rule comes from the table.

type Rule = {
  Properties: {
    EventPattern?: { source: string[]; 'detail-type': string[]; detail?: Record<string, string[]> };
    Targets?: { Arn: unknown }[];
  };
};

describe('the interruption rules of the stack', () => {
  let built: ReturnType<typeof makeStack>;
  let rules: Rule['Properties'][];
  beforeAll(() => {
    built = makeStack();
    rules = Object.values(built.template.findResources('AWS::Events::Rule') as Record<string, Rule>)
      .map((r) => r.Properties)
      .filter((p) => p.EventPattern !== undefined)
      // The clean-up's rule on EKS DeleteCluster (stack.test.ts) is not an interruption rule.
      .filter((p) => !p.EventPattern?.source.includes('aws.eks'));
  });

  it.each(INTERRUPTION_KINDS)(
    '$kind has a rule with its source, detail-type and filter, feeding the interruption queue',
    (row) => {
      const matching = rules.filter(
        (p) =>
          p.EventPattern?.source.includes(row.source) &&
          p.EventPattern['detail-type'].includes(row.detailType),
      );
      expect(matching).toHaveLength(1);
      const [rule] = matching;
      for (const [field, values] of Object.entries(row.detailFilter ?? {})) {
        expect(rule?.EventPattern?.detail?.[field]).toEqual(expect.arrayContaining([...values]));
      }
      expect(rule?.Targets).toEqual([
        expect.objectContaining({
          Arn: ref(built.stack, present(built.cluster.queues.interruption).queueArn),
        }),
      ]);
    },
  );

  it('has no event-pattern rule the table does not derive', () => {
    const derived = interruptionRulePatterns().map((r) => ({
      source: [r.source],
      'detail-type': [r.detailType],
      ...(r.detail === undefined ? {} : { detail: r.detail }),
    }));
    expect(rules.map((p) => p.EventPattern)).toEqual(derived);
    expect(built.cluster.interruptionRules).toHaveLength(derived.length);
  });
});
