import type { Pod } from './pod.ts';
import { Requirements } from './requirements.ts';

/** More combinations than this of the volumes' terms are not enumerated (see volumeAlternatives). */
export const MAX_VOLUME_ALTERNATIVES = 64;

/**
 * The node requirements a pod's volumes leave, as alternatives (ORed): every claim must be met,
 * each by one of its terms, so the alternatives are the combinations of one term per claim (each
 * ANDed). `[Requirements.none]` when no claim constrains the node; a claim with a term that asks
 * for nothing constrains nothing. Beyond MAX_VOLUME_ALTERNATIVES combinations, the claims with
 * several terms keep only their first term (a subset of the nodes they admit, never a node they
 * refuse).
 * @throws InvalidRequirementError for a malformed requirement (field `volumeTopology[i]…`).
 */
export function volumeAlternatives(pod: Pod, object: string): readonly Requirements[] {
  let out: Requirements[] = [Requirements.none];
  (pod.volumeTopology ?? []).forEach((v, i) => {
    if (v.terms.length === 0 || v.terms.some((t) => t.length === 0)) return;
    const terms = v.terms.map((t, j) =>
      Requirements.parse(t, { object, field: `volumeTopology[${i}] (claim ${v.claimName}).terms[${j}]` }),
    );
    const usable = out.length * terms.length > MAX_VOLUME_ALTERNATIVES ? terms.slice(0, 1) : terms;
    out = out.flatMap((alt) => usable.map((t) => alt.intersect(t)));
  });
  return out;
}
