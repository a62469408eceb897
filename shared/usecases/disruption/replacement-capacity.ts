// Which capacity types a consolidation replacement may launch with, as Karpenter v1 decides it:
// spot candidates are replaced by spot only when spot-to-spot consolidation is switched on
// (Karpenter's `SpotToSpotConsolidation` feature gate, off by default), and otherwise are only
// deleted; candidates that are not all spot (mixed packages included) are replaced by spot
// whenever the replacement could be spot, so that a spot shortage fails the launch rather than
// launching a pricier on-demand node. Pure.

/** Why a replacement may not launch, or the capacity types it may launch with. */
export type CapacityChoice =
  | { readonly kind: 'capacityTypes'; readonly capacityTypes: ReadonlySet<string> }
  | { readonly kind: 'invalid'; readonly why: string };

export interface CapacityInput {
  /** The capacity types the replacement's requirements allow. */
  readonly allowed: ReadonlySet<string>;
  /** The candidates' `karpenter.sh/capacity-type` labels. */
  readonly candidates: readonly (string | undefined)[];
  /** Whether spot candidates may be replaced by spot nodes. */
  readonly spotToSpot: boolean;
}

export const SPOT_TO_SPOT_OFF =
  'spot-to-spot consolidation is off (spotToSpotConsolidation): spot nodes are only deleted';

/**
 * The capacity types a replacement of `candidates` may launch with: spot candidates go to spot
 * (when spot-to-spot consolidation is on, else not at all); any other set goes to spot where the
 * replacement allows it; never to reserved capacity.
 */
export function replacementCapacity(input: CapacityInput): CapacityChoice {
  const allowed = new Set([...input.allowed].filter((t) => t !== 'reserved'));
  const allSpot = input.candidates.every((t) => t === 'spot');
  if (allSpot && allowed.has('spot')) {
    return input.spotToSpot
      ? { kind: 'capacityTypes', capacityTypes: new Set(['spot']) }
      : { kind: 'invalid', why: SPOT_TO_SPOT_OFF };
  }
  if (allowed.has('spot')) return { kind: 'capacityTypes', capacityTypes: new Set(['spot']) };
  return { kind: 'capacityTypes', capacityTypes: allowed };
}
