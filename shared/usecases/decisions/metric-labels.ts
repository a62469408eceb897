import { findInterruptionKindRow, NO_OP_MESSAGE_TYPE } from '../../messages/interruption-kinds.ts';
import { EMPTY_LABEL } from '../../runtime/metrics.ts';
import type { CommandMethodName } from '../state/command-record.ts';

// Karpenter's label values, from Flotilla's decision vocabulary: what a Karpenter dashboard's
// queries filter on. Pure.

/** A dimension value a decision does not know (a NodeClaim that never launched has no zone). */
export const UNKNOWN_DIMENSION = 'unknown';

/** The `controller` of the scheduling metrics of a provisioning run, as Karpenter names it. */
export const PROVISIONER_CONTROLLER = 'provisioner';

/** Karpenter's reason of a NodeClaim created for pending pods or as a static NodePool's replica. */
export const PROVISIONED_REASON = 'provisioned';

/** Karpenter's pods_drained_total reason for a NodeClaim drained without a DisruptionReason. */
export const FORCEFUL_TERMINATION_REASON = 'Forceful Termination';

/**
 * A disruption reason (`Underutilized`, `Expired`, …) as Karpenter's decision, eligible-node and
 * disrupted-NodeClaim metrics write it: lower case.
 */
export function disruptionReasonLabel(reason: string): string {
  return reason.toLowerCase();
}

/** Karpenter's `consolidation_type` of a disruption method: empty, single, multi, or none (drift, expiration). */
export function consolidationTypeOf(method: CommandMethodName): string {
  switch (method) {
    case 'emptiness':
      return 'empty';
    case 'single-node':
      return 'single';
    case 'multi-node':
      return 'multi';
    case 'repack':
      return 'repack';
    case 'schedule':
    case 'drift':
    case 'static-drift':
    case 'expiration':
      return EMPTY_LABEL;
  }
}

/** Karpenter's name of an interruption kind (`spotInterruption` → `spot_interrupted`); `no_op` for any other. */
export function messageTypeOf(kind: string): string {
  return findInterruptionKindRow(kind)?.messageType ?? NO_OP_MESSAGE_TYPE;
}

/** The EC2 status check category of an instance status poll's kind, or undefined for an event's kind. */
export function statusCategoryOf(kind: string): string | undefined {
  const row = findInterruptionKindRow(kind);
  return row !== undefined && 'category' in row ? row.category : undefined;
}

/** Snake case as Karpenter writes a condition type in a label (`AcceleratedHardwareReady` → `accelerated_hardware_ready`). */
export function snakeCase(text: string): string {
  return text
    .replace(/(.)([A-Z][a-z]+)/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}
