import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  InvalidRequirementError,
  type NodeSelectorRequirement,
  type Operator,
  Requirement,
  Requirements,
} from '../../../shared/core/index.ts';

const src = { object: 'nodePool "default"', field: 'spec.template.spec.requirements' };
const req = (key: string, operator: Operator, values?: string[], minValues?: number): Requirement =>
  Requirement.parse(
    {
      key,
      operator,
      ...(values === undefined ? {} : { values }),
      ...(minValues === undefined ? {} : { minValues }),
    },
    src,
  );

describe('Requirement operators', () => {
  it.each([
    // operator, values, label value (undefined = absent), admitted
    ['In', ['a', 'b'], 'a', true],
    ['In', ['a', 'b'], 'c', false],
    ['In', ['a'], undefined, false],
    ['NotIn', ['a'], 'a', false],
    ['NotIn', ['a'], 'b', true],
    ['NotIn', ['a'], undefined, true],
    ['Exists', undefined, 'x', true],
    ['Exists', undefined, undefined, false],
    ['DoesNotExist', undefined, undefined, true],
    ['DoesNotExist', undefined, 'x', false],
    ['Gt', ['4'], '5', true],
    ['Gt', ['4'], '4', false],
    ['Gt', ['4'], 'abc', false],
    ['Gt', ['4'], undefined, false],
    ['Lt', ['4'], '3', true],
    ['Lt', ['4'], '4', false],
    ['Gte', ['4'], '4', true],
    ['Gte', ['4'], '3', false],
    ['Lte', ['4'], '4', true],
    ['Lte', ['4'], '5', false],
  ] as const)('%s %j admits %j: %s', (op, values, label, admitted) => {
    expect(req('k', op, values === undefined ? undefined : [...values]).admits(label)).toBe(admitted);
  });

  it.each([
    [{ key: 'k', operator: 'Foo' }, /unknown operator "Foo"/],
    [{ key: 'k', operator: 'In', values: [] }, /needs at least one value/],
    [{ key: 'k', operator: 'Gt', values: ['a'] }, /exactly one integer/],
    [{ key: 'k', operator: 'Lt', values: ['1', '2'] }, /exactly one integer/],
    [{ key: 'k', operator: 'Exists', values: ['x'] }, /takes no values/],
    [{ key: 'k', operator: 'In', values: ['a'], minValues: 2 }, /fewer than minValues/],
    [{ key: 'k', operator: 'Exists', minValues: 0 }, /minValues 0/],
  ])('rejects %j', (raw, message) => {
    expect(() => Requirement.parse(raw as unknown as NodeSelectorRequirement, src)).toThrow(
      InvalidRequirementError,
    );
    expect(() => Requirement.parse(raw as unknown as NodeSelectorRequirement, src)).toThrow(message);
  });

  it('names the object and field of a bad requirement', () => {
    try {
      Requirements.parse(
        [
          { key: 'a', operator: 'Exists' },
          { key: 'k', operator: 'Bogus' as Operator },
        ],
        src,
      );
      expect.unreachable();
    } catch (e) {
      const err = e as InvalidRequirementError;
      expect(err.object).toBe('nodePool "default"');
      expect(err.field).toBe('spec.template.spec.requirements[1]');
    }
  });

  it.each([
    [
      [
        { key: 'z', operator: 'In', values: ['a'] },
        { key: 'z', operator: 'In', values: ['b'] },
      ],
    ],
    [
      [
        { key: 'z', operator: 'In', values: ['a'] },
        { key: 'z', operator: 'DoesNotExist' },
      ],
    ],
    [
      [
        { key: 'c', operator: 'Gt', values: ['8'] },
        { key: 'c', operator: 'Lt', values: ['9'] },
      ],
    ],
    [
      [
        { key: 'c', operator: 'Exists' },
        { key: 'c', operator: 'DoesNotExist' },
      ],
    ],
  ] as const)('rejects contradictory requirements %j when asked to', (list) => {
    expect(() => Requirements.parse(list as unknown as NodeSelectorRequirement[], src, true)).toThrow(
      InvalidRequirementError,
    );
    expect(() => Requirements.parse(list as unknown as NodeSelectorRequirement[], src, true)).toThrow(
      /\[1\]/,
    );
    expect(Requirements.parse(list as unknown as NodeSelectorRequirement[], src).firstEmpty()).toBeDefined();
  });
});

describe('Requirement intersection', () => {
  it.each([
    [req('k', 'In', ['a', 'b']), req('k', 'In', ['b', 'c']), 'k In [b]'],
    [req('k', 'In', ['a', 'b']), req('k', 'NotIn', ['a']), 'k In [b]'],
    [req('k', 'NotIn', ['a']), req('k', 'NotIn', ['b']), 'k NotIn [a, b]'],
    [req('k', 'Exists'), req('k', 'NotIn', ['b']), 'k Exists and k NotIn [b]'],
    [req('k', 'NotIn', ['b']), req('k', 'DoesNotExist'), 'k DoesNotExist'],
    [req('k', 'Gt', ['2']), req('k', 'In', ['1', '3', 'x']), 'k In [3]'],
    [req('k', 'Gt', ['2']), req('k', 'Lt', ['10']), 'k Gt [2] and k Lt [10]'],
    [req('k', 'Gte', ['2']), req('k', 'Lte', ['2']), 'k Gt [1] and k Lt [3]'],
    [req('k', 'In', ['a']), req('k', 'DoesNotExist'), 'k (nothing)'],
  ])('%s ∩ %s = %s', (a, b, expected) => {
    expect(a.intersect(b).toString()).toBe(expected);
    expect(b.intersect(a).toString()).toBe(expected);
  });

  it('keeps the larger minValues', () => {
    expect(req('k', 'Exists', undefined, 3).intersect(req('k', 'In', ['a', 'b', 'c', 'd'])).minValues).toBe(
      3,
    );
  });

  it('a Gt/Lt range that holds no integer is empty', () => {
    expect(
      req('k', 'Gt', ['3'])
        .intersect(req('k', 'Lt', ['4']))
        .isEmpty(),
    ).toBe(true);
    expect(
      req('k', 'Gt', ['3'])
        .intersect(req('k', 'Lt', ['5']))
        .intersect(req('k', 'NotIn', ['4']))
        .isEmpty(),
    ).toBe(true);
  });

  const VALUES = ['a', 'b', 'c', '1', '2', '5', '10'];
  const arbReq = fc.oneof(
    fc.record({
      operator: fc.constantFrom<Operator>('In', 'NotIn'),
      values: fc.uniqueArray(fc.constantFrom(...VALUES), { minLength: 1, maxLength: 4 }),
    }),
    fc.record({ operator: fc.constantFrom<Operator>('Exists', 'DoesNotExist') }),
    fc.record({
      operator: fc.constantFrom<Operator>('Gt', 'Lt', 'Gte', 'Lte'),
      values: fc.constantFrom(['0'], ['2'], ['5'], ['7']).map((v) => [...v]),
    }),
  );
  const arbReqs = fc.array(fc.tuple(fc.constantFrom('x', 'y', 'z'), arbReq), { maxLength: 5 }).map((list) =>
    Requirements.parse(
      list.map(([key, r]) => ({ key, ...r }) as NodeSelectorRequirement),
      src,
    ),
  );

  it('is commutative and agrees with label matching (property)', () => {
    fc.assert(
      fc.property(
        arbReqs,
        arbReqs,
        fc.dictionary(fc.constantFrom('x', 'y', 'z'), fc.constantFrom(...VALUES)),
        (a, b, labels) => {
          const ab = a.intersect(b);
          const ba = b.intersect(a);
          expect(ab.toString()).toBe(ba.toString());
          expect(JSON.stringify(ab.toSelectors())).toBe(JSON.stringify(ba.toSelectors()));
          // Set semantics: a node satisfies a ∩ b exactly when it satisfies a and b.
          expect(ab.matchesLabels(labels)).toBe(a.matchesLabels(labels) && b.matchesLabels(labels));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is associative (property)', () => {
    fc.assert(
      fc.property(arbReqs, arbReqs, arbReqs, (a, b, c) => {
        expect(a.intersect(b).intersect(c).toString()).toBe(a.intersect(b.intersect(c)).toString());
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips through selectors', () => {
    fc.assert(
      fc.property(arbReqs, (a) => {
        const again = Requirements.parse(
          a.toSelectors().filter((s) => !(s.operator === 'In' && (s.values ?? []).length === 0)),
          src,
        );
        if (a.firstEmpty() === undefined) expect(again.toString()).toBe(a.toString());
      }),
      { numRuns: 200 },
    );
  });
});
