// Which capacity types a consolidation replacement may launch with, as Karpenter v1 decides it:
// spot candidates are replaced by spot only when spot-to-spot consolidation is switched on
// (Karpenter's `SpotToSpotConsolidation` feature gate, off by default), and otherwise are only
// deleted; candidates that are not all spot (mixed packages included) are replaced by spot
// whenever the replacement could be spot, so that a spot shortage fails the launch rather than
// launching a pricier on-demand node. That pin holds only while spot is there to pin to (Flotilla's
// rule for a spot shortage): when no cheaper spot offering is available (every one backed off after
// insufficient capacity, or without a price), or a consolidation replacement of the NodePool failed
// within SPOT_RETRY_AFTER_MS, the replacement is on-demand where on-demand is strictly cheaper than
// the candidates, and nothing otherwise. So a long shortage costs one failed spot launch per
// NodePool every SPOT_RETRY_AFTER_MS, not one every ICE back-off, and the NodePool still reaches
// the cheapest on-demand nodes for its pods. Pure.

/**
 * On a NodeClaim: when a consolidation replacement for it (or for the nodes it replaced while spot
 * was short) failed to launch, RFC 3339. Written by the disruption controller.
 */
export const SPOT_FAILED_ANNOTATION = 'flotilla.io/consolidation-replacement-failed-at';
/** How long after a failed consolidation replacement its NodePool's replacements are not pinned to spot. */
export const SPOT_RETRY_AFTER_MS = 30 * 60_000;

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
  /**
   * Whether spot is there to pin to: a cheaper spot offering is available and no consolidation
   * replacement of the NodePool failed recently. @default true
   */
  readonly spotAvailable?: boolean;
}

export const SPOT_TO_SPOT_OFF =
  'spot-to-spot consolidation is off (spotToSpotConsolidation): spot nodes are only deleted';

/**
 * The capacity types a replacement of `candidates` may launch with. A replacement the simulation
 * placed into a free slot of a capacity reservation (its capacity type pinned to `reserved`) goes
 * there, whatever the candidates are: as in Karpenter, whose simulation takes free reservation
 * slots first and prices them near zero. Otherwise spot candidates go to spot (when spot-to-spot
 * consolidation is on, else not at all); any other set goes to spot where the replacement allows
 * it and spot is available, else to on-demand; not to reserved capacity the simulation did not
 * place it in.
 */
export function replacementCapacity(input: CapacityInput): CapacityChoice {
  if (input.allowed.size === 1 && input.allowed.has('reserved')) {
    return { kind: 'capacityTypes', capacityTypes: new Set(['reserved']) };
  }
  const allowed = new Set([...input.allowed].filter((t) => t !== 'reserved'));
  const allSpot = input.candidates.every((t) => t === 'spot');
  if (allSpot && allowed.has('spot')) {
    return input.spotToSpot
      ? { kind: 'capacityTypes', capacityTypes: new Set(['spot']) }
      : { kind: 'invalid', why: SPOT_TO_SPOT_OFF };
  }
  if (allowed.has('spot') && (input.spotAvailable !== false || !allowed.has('on-demand'))) {
    return { kind: 'capacityTypes', capacityTypes: new Set(['spot']) };
  }
  if (allowed.has('spot')) return { kind: 'capacityTypes', capacityTypes: new Set(['on-demand']) };
  return { kind: 'capacityTypes', capacityTypes: allowed };
}

/** When the latest consolidation replacement recorded on `annotations` failed, epoch ms. */
export function spotFailedAtMs(annotations: Readonly<Record<string, string>>): number | undefined {
  const raw = annotations[SPOT_FAILED_ANNOTATION];
  const ms = raw === undefined ? Number.NaN : Date.parse(raw);
  return Number.isFinite(ms) ? ms : undefined;
}
