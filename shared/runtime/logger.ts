/** Severity of a log line; lines below the logger's level are dropped. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Structured fields of a log line. Values must be JSON-serialisable. */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * The one structured logger: each call writes one JSON line with `level`, `time`, `message` and
 * the given fields. Messages are fixed strings; what varies goes into fields. Metrics do not go
 * through it: they have their own sink beside it (metrics-sink.ts), with its own clock.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  /** The fields it adds to every line (e.g. `cluster`, `lambda`), its children's included. */
  readonly fields: LogFields;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** Where lines go; defaults to standard output (CloudWatch Logs in Lambda). */
  readonly sink?: (line: string) => void;
  /** Clock for the `time` field; defaults to the system clock. */
  readonly now?: () => Date;
}

export function makeLogger(fields: LogFields = {}, options: LoggerOptions = {}): Logger {
  const threshold = rank[options.level ?? 'info'];
  const sink = options.sink ?? ((line: string) => process.stdout.write(`${line}\n`));
  const now = options.now ?? (() => new Date());
  const write = (level: LogLevel, message: string, extra?: LogFields) => {
    if (rank[level] >= threshold) sink(toLogLine(level, now(), message, { ...fields, ...extra }));
  };
  return {
    debug: (message, extra) => write('debug', message, extra),
    info: (message, extra) => write('info', message, extra),
    warn: (message, extra) => write('warn', message, extra),
    error: (message, extra) => write('error', message, extra),
    child: (more) => makeLogger({ ...fields, ...more }, options),
    fields,
  };
}

/**
 * One JSON line as the logger writes it: `level`, `time`, `message`, then `fields`. Errors keep
 * their name, message and cause; bigints become strings.
 */
export function toLogLine(level: LogLevel, time: Date, message: string, fields: LogFields): string {
  return JSON.stringify({ level, time: time.toISOString(), message, ...fields }, errorReplacer);
}

/** Errors serialise as name, message and cause chain instead of `{}`. */
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return {
      name: value.name,
      message: value.message,
      ...(value.cause === undefined ? {} : { cause: value.cause }),
    };
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}
