import type { LineCounter } from 'yaml';
import { FlotillaError, type ValidationError } from '../core/index.ts';
import { offsetOf } from '../validation/positions.ts';

// A scenario's problems and where they are: every problem names the line and column of the field
// it is about (the key of a map entry, or a list item) and is printed as `file:line:column: field:
// message`, one line each.

/** One problem in a scenario file. */
export interface ScenarioProblem {
  readonly line: number;
  readonly column: number;
  /** The field, e.g. `workloads[0].replicas`. */
  readonly field: string;
  readonly message: string;
}

/** A scenario file that cannot be run; the message has one `file:line:column: …` line per problem. */
export class ScenarioError extends FlotillaError {
  readonly code = 'ScenarioInvalid';

  constructor(
    readonly file: string,
    readonly problems: readonly ScenarioProblem[],
  ) {
    super(
      problems
        .map((p) => `${file}:${p.line}:${p.column}: ${p.field === '' ? '' : `${p.field}: `}${p.message}`)
        .join('\n'),
    );
  }
}

/** A scenario file that cannot be read at all (missing, a directory, no permission). */
export class ScenarioFileError extends FlotillaError {
  readonly code = 'ScenarioUnreadable';

  constructor(
    readonly file: string,
    reason: string,
    options?: { readonly cause?: unknown },
  ) {
    super(`${file}: cannot read the scenario: ${reason}`, options);
  }
}

export type Path = readonly (string | number)[];

export function formatPath(p: Path): string {
  let out = '';
  for (const segment of p) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** `spec.template.spec.requirements[0].operator` or `spec.requirements.0.key` as a path. */
function parseField(field: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of field.split('.')) {
    const match = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (match === null) {
      out.push(part);
      continue;
    }
    if (match[1] !== '') out.push(/^\d+$/.test(match[1] ?? '') ? Number(match[1]) : (match[1] ?? ''));
    for (const index of (match[2] ?? '').matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}

/** Where a converter's ValidationError points inside the object it read. */
export function fieldOf(error: ValidationError): (string | number)[] {
  const cause = error.cause as { issues?: { path?: PropertyKey[] }[] } | undefined;
  const issuePath = cause?.issues?.[0]?.path;
  if (Array.isArray(issuePath)) return issuePath.filter((s) => typeof s !== 'symbol') as (string | number)[];
  return parseField(error.field);
}

/** Turns paths into problems at their line and column in the parsed document. */
export function makeLocator(
  contents: unknown,
  lineCounter: LineCounter,
): (p: Path, message: string) => ScenarioProblem {
  return (p, message) => {
    const pos = lineCounter.linePos(offsetOf(contents, p));
    return { line: pos.line, column: pos.col, field: formatPath(p), message };
  };
}

/** Problems in line order, each once. */
export function inFileOrder(problems: readonly ScenarioProblem[]): ScenarioProblem[] {
  const seen = new Set<string>();
  return [...problems]
    .sort((a, b) => a.line - b.line || a.column - b.column)
    .filter((p) => {
      const key = `${p.line}:${p.column}:${p.field}:${p.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}
