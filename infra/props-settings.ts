import type { Duration } from 'aws-cdk-lib';
import { type FeatureGates, gateProblems, resolveFeatureGates } from '../shared/runtime/feature-gates.ts';
import { DEFAULT_OPERATOR_SETTINGS, type OperatorSettings } from '../shared/runtime/operator-settings.ts';

// Karpenter's feature gates and operator settings as FlotillaCluster's props give them
// (infra/cluster-props.ts), defaults filled in.

/** Karpenter's feature gates and operator settings among FlotillaCluster's props. */
export interface KarpenterSettingsProps {
  /**
   * Karpenter's feature gates, by Karpenter's names, each defaulting as in Karpenter v1.15:
   * - `NodeRepair` (false): the garbage collector replaces a node whose `Ready` condition has been
   *   False or Unknown for 30 min (other AWS node conditions: 10 or 30 min) or whose instance EC2
   *   has reported impaired for 10 min, unless more than 20% of its NodePool's nodes are unhealthy.
   * - `ReservedCapacity` (true): EC2NodeClass `capacityReservationSelectorTerms` are resolved and
   *   their reservations launched into; off, they are neither resolved nor offered.
   * - `SpotToSpotConsolidation` (false): consolidation may replace spot nodes by cheaper spot
   *   nodes; off, spot nodes are only deleted by consolidation.
   * - `NodeOverlay` (false): NodeOverlays change the instance types planned with and get a status;
   *   off, they are not read.
   * - `StaticCapacity` (false): NodePools with `spec.replicas` are kept at that many nodes; off,
   *   the provisioner neither launches nor removes their nodes (pods never launch nodes in them).
   * @default Karpenter's defaults (only ReservedCapacity on)
   */
  readonly featureGates?: Partial<FeatureGates>;
  /**
   * Deprecated: the `NodeRepair` feature gate (`featureGates: { NodeRepair: true }`). Setting both
   * to different values is an error.
   * @default false
   */
  readonly nodeRepair?: boolean;
  /**
   * Deprecated: the `SpotToSpotConsolidation` feature gate. Setting both to different values is an
   * error.
   * @default false
   */
  readonly spotToSpotConsolidation?: boolean;
  /**
   * Karpenter's BATCH_IDLE_DURATION: the provisioner closes a batch of pending pods once none
   * arrived for this long. More than 0, at most `batchMaxDuration`.
   * @default 1 second
   */
  readonly batchIdleDuration?: Duration;
  /**
   * Karpenter's BATCH_MAX_DURATION: a batch closes after this long in any case. At most 30 s (the
   * provisioner Lambda's 90 s timeout also covers waiting for its lease and the launches).
   * @default 10 seconds
   */
  readonly batchMaxDuration?: Duration;
  /**
   * Karpenter's VM_MEMORY_OVERHEAD_PERCENT: the fraction of an instance type's memory the
   * hypervisor keeps, taken off its memory capacity wherever Flotilla computes it (the provisioner
   * and disruption). At least 0 and less than 1.
   * @default 0.075
   */
  readonly vmMemoryOverheadPercent?: number;
  /**
   * Karpenter's RESERVED_ENIS: network interfaces left out of the ENI-limited max pods (and so of
   * kube-reserved memory), e.g. the one VPC CNI custom networking keeps. A whole number, 0 or more.
   * @default 0
   */
  readonly reservedENIs?: number;
  /**
   * Karpenter's ISOLATED_VPC: the Lambdas never call the Pricing API (it has no VPC endpoint), and
   * no role may; on-demand prices come from the table bundled with Flotilla.
   * @default false
   */
  readonly isolatedVPC?: boolean;
  /**
   * Karpenter's AMI_REFRESH_INTERVAL: each EC2NodeClass is resolved again (AMIs, and with them its
   * subnets and security groups) at most this often. Whole seconds, at least 1 minute.
   * @default 1 minute
   */
  readonly amiRefreshInterval?: Duration;
}

/**
 * Every feature gate's value from `featureGates` and the deprecated `nodeRepair` and
 * `spotToSpotConsolidation`, with the problems found (unknown gates, a gate and its alias apart).
 */
export function featureGatesOf(props: KarpenterSettingsProps): {
  readonly gates: FeatureGates;
  readonly problems: readonly string[];
} {
  const given: Readonly<Record<string, boolean>> = props.featureGates ?? {};
  const problems: string[] = [];
  for (const [name, on] of Object.entries(given)) {
    if (typeof on !== 'boolean') problems.push(`featureGates.${name} must be true or false`);
    else problems.push(...gateProblems(name, on).map((p) => `featureGates: ${p}`));
  }
  const resolved = resolveFeatureGates(props.featureGates ?? {}, {
    nodeRepair: props.nodeRepair,
    spotToSpotConsolidation: props.spotToSpotConsolidation,
  });
  return { gates: resolved.gates, problems: [...problems, ...resolved.problems] };
}

/** Karpenter's operator settings from the props, defaults filled in (durations in milliseconds). */
export function operatorSettingsOf(props: KarpenterSettingsProps): OperatorSettings {
  const ms = (d: Duration | undefined, fallback: number) =>
    d === undefined ? fallback : d.toMilliseconds({ integral: false });
  const d = DEFAULT_OPERATOR_SETTINGS;
  return {
    batchIdleMs: ms(props.batchIdleDuration, d.batchIdleMs),
    batchMaxMs: ms(props.batchMaxDuration, d.batchMaxMs),
    vmMemoryOverheadPercent: props.vmMemoryOverheadPercent ?? d.vmMemoryOverheadPercent,
    reservedENIs: props.reservedENIs ?? d.reservedENIs,
    isolatedVPC: props.isolatedVPC ?? d.isolatedVPC,
    amiRefreshMs: ms(props.amiRefreshInterval, d.amiRefreshMs),
  };
}
