/**
 * Base class of Flotilla's typed errors. Each subclass names one kind of failure; the message
 * says what happened, the offending value, and what to do about it. `cause` keeps the error it
 * translates, if any.
 */
export abstract class FlotillaError extends Error {
  /** Stable machine-readable kind, used in logs and metrics. */
  abstract readonly code: string;

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Input from outside (a manifest, an event, a quantity) is malformed. `object` names what was
 * being read (for example `nodePool "gpu"`) and `field` the path inside it.
 */
export class ValidationError extends FlotillaError {
  readonly code: string = 'ValidationError';

  constructor(
    readonly object: string,
    readonly field: string,
    problem: string,
    options?: { readonly cause?: unknown },
  ) {
    super(`${object}: ${field}: ${problem}`, options);
  }
}

/** A Kubernetes quantity string (`"500m"`, `"2Gi"`) could not be parsed or is out of range. */
export class InvalidQuantityError extends ValidationError {
  override readonly code: string = 'InvalidQuantityError';
}

/**
 * A label requirement is malformed (unknown operator, wrong number of values, non-integer bound)
 * or contradicts another requirement on the same key.
 */
export class InvalidRequirementError extends ValidationError {
  override readonly code: string = 'InvalidRequirementError';
}

/** Exhaustiveness check for switches over discriminated unions. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
