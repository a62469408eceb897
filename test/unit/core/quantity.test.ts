import { describe, expect, it } from 'vitest';
import {
  formatQuantity,
  InvalidQuantityError,
  parseQuantity,
  parseResourceList,
  QUANTITY_MAX,
} from '../../../shared/core/index.ts';

const src = { object: 'pod "default/web"', field: 'spec.containers[0].resources.requests.cpu' };

describe('parseQuantity', () => {
  it.each([
    ['500m', 'milli', 500],
    ['1', 'milli', 1000],
    ['1.5', 'milli', 1500],
    ['0.1m', 'milli', 1],
    ['1e3', 'milli', 1_000_000],
    ['2k', 'milli', 2_000_000],
    ['100Ki', 'base', 102_400],
    ['2Gi', 'base', 2 * 1024 ** 3],
    ['1.5Gi', 'base', 1.5 * 1024 ** 3],
    ['128974848', 'base', 128_974_848],
    ['129e6', 'base', 129_000_000],
    ['129M', 'base', 129_000_000],
    ['123Mi', 'base', 123 * 1024 ** 2],
    ['.5', 'milli', 500],
    ['1E-3', 'milli', 1],
    ['10', 'base', 10],
    ['0', 'base', 0],
    ['-0', 'base', 0],
    ['1n', 'base', 1],
    ['+3', 'base', 3],
  ] as const)('%s (%s) = %d', (text, scale, expected) => {
    expect(parseQuantity(text, scale, src)).toBe(expected);
  });

  it('accepts JSON numbers', () => {
    expect(parseQuantity(2, 'milli', src)).toBe(2000);
    expect(parseQuantity(0.25, 'milli', src)).toBe(250);
  });

  it.each(['', 'abc', '1.2.3', '5 m', 'Gi', '1Qi', '1e', '--1', '1ki'])(
    'rejects %j with a typed error',
    (text) => {
      expect(() => parseQuantity(text, 'base', src)).toThrow(InvalidQuantityError);
    },
  );

  it('rejects negatives and names the object and field', () => {
    try {
      parseQuantity('-1', 'milli', src);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidQuantityError);
      const err = e as InvalidQuantityError;
      expect(err.object).toBe(src.object);
      expect(err.field).toBe(src.field);
      expect(err.message).toContain('negative');
    }
  });

  it.each([
    ['100Ei', 'milli'],
    ['8Ei', 'base'],
    ['1e20', 'base'],
    ['9007199254740993', 'base'],
    ['1e99999999999', 'base'],
    ['123456789012345678901234567890', 'milli'],
  ] as const)(
    'saturates %j (%s) at QUANTITY_MAX instead of refusing it, as the API server accepts it',
    (text, scale) => {
      expect(parseQuantity(text, scale, src)).toBe(QUANTITY_MAX);
    },
  );

  it.each([
    ['1e-99999999999', 'base', 1],
    ['0.000000000000000000000000000000000000000000001', 'milli', 1],
    ['0e5', 'base', 0],
    ['9007199254740991', 'base', 9007199254740991],
    ['1e15', 'base', 1e15],
  ] as const)('%j (%s) is %d: slivers round up, exact values stay exact', (text, scale, amount) => {
    expect(parseQuantity(text, scale, src)).toBe(amount);
  });

  it('reads a negative amount as zero where the source allows it (CRDs admit a sign)', () => {
    expect(parseQuantity('-2Gi', 'base', { ...src, negative: 'zero' })).toBe(0);
    expect(() => parseQuantity('-2Gi', 'base', src)).toThrow(/negative/);
  });

  it('parseResourceList scales cpu to millicores and the rest to base units, naming the field', () => {
    expect(
      parseResourceList({ cpu: '250m', memory: '1Gi', 'nvidia.com/gpu': '1' }, { object: 'x', field: 'r' }),
    ).toEqual({ cpu: 250, memory: 1024 ** 3, 'nvidia.com/gpu': 1 });
    expect(() => parseResourceList({ memory: 'lots' }, { object: 'x', field: 'r' })).toThrow(/x: r\.memory/);
  });

  it.each([
    ['cpu', 192_000, '192'],
    ['cpu', 250, '250m'],
    ['cpu', 1500, '1.5'],
    ['cpu', 1850, '1850m'],
    ['cpu', 1900, '1.9'],
    ['cpu', 0, '0'],
    ['memory', 3 * 1024 ** 3, '3Gi'],
    ['memory', 1536 * 1024 ** 2, '1.5Gi'],
    ['memory', 2000 * 1024 ** 2, '2000Mi'],
    ['memory', 1000, '1000'],
    ['pods', 7, '7'],
  ] as const)('formatQuantity(%s, %d) = %s, never rounded', (name, amount, text) => {
    expect(formatQuantity(name, amount)).toBe(text);
  });
});
