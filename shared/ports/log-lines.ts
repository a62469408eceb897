import { FlotillaError } from '../core/index.ts';

// The lines a shadow stack's Lambdas logged, read back from where they are kept (CloudWatch Logs):
// the shadow comparison's input, as the text of each line (the comparison parses them).

/** Which lines to read: a shadow stack's (`shadow: true`) lines of these decision kinds, in a window. */
export interface ShadowLineQuery {
  /** Epoch milliseconds, inclusive. */
  readonly fromMs: number;
  /** Epoch milliseconds, exclusive. @default now */
  readonly toMs?: number;
  /** The `decision` values wanted; lines of other kinds may be left out by the store. */
  readonly decisions: readonly string[];
}

/** Where a shadow stack's lines are read from. */
export interface ShadowLineSource {
  /** Every shadow line the query asks for; `progress` hears the running count as pages arrive. */
  read(query: ShadowLineQuery, progress?: (lines: number) => void): Promise<string[]>;
}

/** The lines could not be read (the store refused, or is not there); `cause` says what it answered. */
export class ShadowLinesError extends FlotillaError {
  readonly code = 'ShadowLinesError';
}
