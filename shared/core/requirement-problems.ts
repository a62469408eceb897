// What is wrong with one requirement as written, before it becomes a Requirement
// (Requirement.parse): the API server's CRD checks some of it, Flotilla all of it. Pure.

/** The requirement operators Karpenter accepts (Kubernetes' six plus Gte and Lte). */
export const OPERATORS: ReadonlySet<string> = new Set([
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
  'Gt',
  'Lt',
  'Gte',
  'Lte',
]);

/** An integer label value, as Gt, Gte, Lt and Lte compare them. */
export const INTEGER = /^-?\d+$/;

/** A requirement as written (NodeSelectorRequirement), before anything is known of it. */
interface WrittenRequirement {
  readonly key: unknown;
  readonly operator: unknown;
  readonly values?: readonly string[];
  readonly minValues?: number;
}

/** Why `req` is not a requirement Flotilla can read, or undefined when it is one. */
export function requirementProblem(req: WrittenRequirement): string | undefined {
  if (typeof req.key !== 'string' || req.key === '') return 'key must be a non-empty string';
  const op = req.operator as string;
  if (!OPERATORS.has(op)) {
    return `unknown operator ${JSON.stringify(op)}; use one of ${[...OPERATORS].join(', ')}`;
  }
  const values = req.values ?? [];
  const { minValues } = req;
  if (minValues !== undefined && (!Number.isInteger(minValues) || minValues < 1 || minValues > 50)) {
    return `minValues ${minValues} must be an integer from 1 to 50`;
  }
  switch (op) {
    case 'In':
      if (values.length === 0) return 'operator In needs at least one value';
      if (minValues !== undefined && new Set(values).size < minValues) {
        return `operator In lists ${new Set(values).size} values, fewer than minValues ${minValues}`;
      }
      return undefined;
    case 'Exists':
    case 'DoesNotExist':
      return values.length > 0 ? `operator ${op} takes no values` : undefined;
    case 'Gt':
    case 'Gte':
    case 'Lt':
    case 'Lte':
      return values.length !== 1 || !INTEGER.test(values[0] ?? '')
        ? `operator ${op} needs exactly one integer value, got ${JSON.stringify(values)}`
        : undefined;
    default:
      return undefined;
  }
}
