/** Milliseconds of a Go duration such as `1h30m`, `90s`, `500ms`; undefined when malformed. */
export function parseGoDurationMs(text: string): number | undefined {
  const unit: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let at = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * (unit[m[2] ?? ''] ?? 0);
    at = re.lastIndex;
  }
  return at === text.length && text.length > 0 ? Math.round(total) : undefined;
}
