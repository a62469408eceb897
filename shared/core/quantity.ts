import { InvalidQuantityError } from './errors.ts';

/** Where a quantity came from, for error messages: `object` e.g. `pod "default/web-1"`, `field` its path. */
export interface QuantitySource {
  readonly object: string;
  readonly field: string;
  /**
   * What a negative quantity becomes: an error (the API server refuses negative requests,
   * capacities and allocatables of pods and Nodes) or zero (custom resources such as NodeClaims
   * and NodePool limits, whose schema admits a sign, where a negative amount means none).
   * @default 'reject'
   */
  readonly negative?: 'reject' | 'zero';
}

/**
 * The largest amount a quantity converts to. Kubernetes accepts quantities far beyond it (`8Ei`,
 * `1e20`); such amounts are more than any node has, so they saturate here instead of failing the
 * object: a pod that asks for them fits nowhere, a node that offers them has room for anything.
 */
export const QUANTITY_MAX = Number.MAX_SAFE_INTEGER;

/**
 * How to scale a quantity into an integer: `milli` gives thousandths (cpu → millicores), `base`
 * gives whole base units (memory → bytes, pods → count, nvidia.com/gpu → devices).
 */
export type QuantityScale = 'milli' | 'base';

const BINARY_SUFFIX: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_SUFFIX: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY_PATTERN =
  /^([+-]?)(\d+\.?\d*|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([eE][+-]?\d+)|(n|u|m|k|M|G|T|P|E)?)$/;

/** The sign of a Kubernetes quantity (`"500m"` 1, `"-1Gi"` -1, `"0"` 0), or undefined when `text` is none. */
export function quantitySign(text: string): -1 | 0 | 1 | undefined {
  const match = QUANTITY_PATTERN.exec(text);
  if (match === null) return undefined;
  if (!/[1-9]/.test(match[2] ?? '')) return 0;
  return match[1] === '-' ? -1 : 1;
}

/** The number of a percentage such as `"5%"` or `"7.5%"`, or undefined when `text` is not one. */
export function parsePercent(text: string): number | undefined {
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)%$/.exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * Parses a Kubernetes quantity (`"500m"`, `"2Gi"`, `"1.5"`, `"1e3"`, `"100Ki"`) into a
 * non-negative integer in base units, or thousandths of them with `scale: 'milli'`. The
 * arithmetic is exact (BigInt); a fractional result is rounded up, as Kubernetes does when it
 * scales a quantity (`"0.1m"` of cpu is 1 millicore). Amounts above QUANTITY_MAX saturate there.
 *
 * @throws InvalidQuantityError naming `source.object` and `source.field` when the string is not a
 *   quantity, or is negative and `source.negative` is not `'zero'`.
 */
export function parseQuantity(value: string | number, scale: QuantityScale, source: QuantitySource): number {
  const text = typeof value === 'number' ? numberToText(value) : value.trim();
  const match = QUANTITY_PATTERN.exec(text);
  if (match === null) {
    throw new InvalidQuantityError(
      source.object,
      source.field,
      `${JSON.stringify(value)} is not a Kubernetes quantity (examples: "500m", "2Gi", "1.5", "1e3")`,
    );
  }
  const [, sign = '', digits = '', binary, exponent, decimal = ''] = match;
  const [whole = '', fraction = ''] = digits.split('.');
  let numerator = BigInt(`${whole}${fraction}` || '0');
  let denominator = 10n ** BigInt(fraction.length);
  let power10 = scale === 'milli' ? 3 : 0;
  if (binary !== undefined) {
    numerator *= 2n ** BigInt(BINARY_SUFFIX[binary] ?? 0);
  } else if (exponent !== undefined) {
    power10 += Number.parseInt(exponent.slice(1), 10);
  } else {
    power10 += DECIMAL_SUFFIX[decimal] ?? 0;
  }
  if (sign === '-' && numerator !== 0n) {
    if (source.negative === 'zero') return 0;
    throw new InvalidQuantityError(
      source.object,
      source.field,
      `${JSON.stringify(value)} is negative; resource quantities must be zero or more`,
    );
  }
  if (numerator === 0n) return 0;
  // The amount is below 10^magnitude: far out, no exact arithmetic is needed (and none is done
  // on an exponent such as 1e-999999999): it saturates, or is a sliver that rounds up to 1.
  const magnitude = numerator.toString().length - (denominator.toString().length - 1) + power10;
  if (magnitude > 20) return QUANTITY_MAX;
  if (magnitude < 0) return 1;
  if (power10 >= 0) numerator *= 10n ** BigInt(power10);
  else denominator *= 10n ** BigInt(-power10);
  const result = (numerator + denominator - 1n) / denominator;
  return result > BigInt(QUANTITY_MAX) ? QUANTITY_MAX : Number(result);
}

function numberToText(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  // Exponent notation from String() is accepted by the grammar; keep it exact.
  return String(value);
}

/** Kubernetes' binary suffixes, largest first. */
export const BINARY_UNITS: readonly (readonly [string, number])[] = [
  ['Ei', 2 ** 60],
  ['Pi', 2 ** 50],
  ['Ti', 2 ** 40],
  ['Gi', 2 ** 30],
  ['Mi', 2 ** 20],
  ['Ki', 2 ** 10],
];

/**
 * Formats an integer resource amount for humans, exactly, so that no comparison of two amounts
 * reads differently from the numbers: cpu millicores as cores when whole or tenths (`2`, `1.5`),
 * else millicores (`1850m`, `250m`); byte-valued resources with the largest binary suffix that
 * states the amount exactly in at most one decimal (`3.5Gi`, `2000Mi`), else bytes; others as
 * plain numbers.
 */
export function formatQuantity(resource: string, amount: number): string {
  if (resource === 'cpu') {
    if (amount % 1000 === 0 || (amount > 1000 && amount % 100 === 0)) return String(amount / 1000);
    return `${amount}m`;
  }
  if (resource === 'memory' || resource === 'ephemeral-storage' || resource.endsWith('-storage')) {
    for (const [suffix, unit] of BINARY_UNITS) {
      if (amount >= unit && Number.isInteger((amount * 10) / unit))
        return `${(amount * 10) / unit / 10}${suffix}`;
    }
    return String(amount);
  }
  return String(amount);
}
