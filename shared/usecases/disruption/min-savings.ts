// Flotilla's opt-in minimum saving for consolidation, read from the NodePool's annotation. Pure.

/** The NodePool annotation with the least a consolidation command must save, `10%` or `0.1`. */
export const MIN_SAVINGS_ANNOTATION = 'flotilla.io/consolidation-min-savings';
/** Karpenter's rule: any strictly cheaper replacement is taken. */
export const DEFAULT_MIN_SAVINGS = 0;
/**
 * The NodePool's minimum savings as a fraction in [0, 1) (the default when unset), or why the
 * annotation cannot be read.
 */
export function parseMinSavings(
  annotations: Readonly<Record<string, string>> | undefined,
): { readonly kind: 'ok'; readonly value: number } | { readonly kind: 'invalid'; readonly problem: string } {
  const raw = annotations?.[MIN_SAVINGS_ANNOTATION]?.trim();
  if (raw === undefined || raw === '') return { kind: 'ok', value: DEFAULT_MIN_SAVINGS };
  const value = raw.endsWith('%') ? Number(raw.slice(0, -1)) / 100 : Number(raw);
  return Number.isFinite(value) && value >= 0 && value < 1
    ? { kind: 'ok', value }
    : {
        kind: 'invalid',
        problem: `${MIN_SAVINGS_ANNOTATION} "${raw}" is neither a percentage such as 10% nor a fraction in [0, 1): consolidation leaves the NodePool's nodes alone until it is fixed`,
      };
}

/**
 * The NodePool's minimum savings as a fraction in [0, 1). Only for NodePools whose annotation
 * reads (consolidation leaves the others' nodes alone); an unreadable one counts as the largest
 * minimum so that nothing is consolidated on it.
 */
export function minSavings(annotations: Readonly<Record<string, string>> | undefined): number {
  const parsed = parseMinSavings(annotations);
  return parsed.kind === 'ok' ? parsed.value : 1;
}
