// Flotilla's own dollar limit on a NodePool: the annotation `flotilla.io/max-cost-per-hour`, a
// number of US dollars per hour ("12.5" or "$12.50"), read so GitOps owns it and never written back.
// A value that does not parse, or one on a static NodePool (whose size is spec.replicas, as
// Karpenter allows static pools no limit but nodes), is kept as the problem it is: the pool then
// launches nothing and says why, rather than launching as if it had no limit.
import type { NodePool } from '../core/index.ts';

export const COST_LIMIT_ANNOTATION = 'flotilla.io/max-cost-per-hour';

/** The largest dollar limit read: above it a typo (an extra digit group) is more likely. */
const MAX_USD_PER_HOUR = 10_000_000;

/** A NodePool's dollar limit from its annotations, or undefined when it names none. */
export function parseCostLimit(
  annotations: Readonly<Record<string, string>> | undefined,
  isStatic: boolean,
): NodePool['costLimit'] {
  const raw = annotations?.[COST_LIMIT_ANNOTATION];
  if (raw === undefined) return undefined;
  const quoted = `annotation ${COST_LIMIT_ANNOTATION} ${JSON.stringify(raw.slice(0, 60))}`;
  const problem = (why: string) => ({
    problem: `${quoted} ${why}; the NodePool launches nothing for pods until it is fixed`,
  });
  if (isStatic) {
    return {
      problem: `${quoted} is not supported on a static NodePool (spec.replicas); the NodePool launches nothing until it is removed`,
    };
  }
  const text = raw.trim().replace(/^\$/, '');
  if (!/^\d+(\.\d+)?$/.test(text)) return problem('is not a number of US dollars per hour');
  const usdPerHour = Number(text);
  if (usdPerHour > MAX_USD_PER_HOUR) return problem(`is over ${MAX_USD_PER_HOUR} US dollars per hour`);
  return { usdPerHour };
}
