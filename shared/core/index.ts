/**
 * The pure scheduling core: domain types, quantities, requirements, taints, instance types and
 * the provisioning simulation. No I/O, clock or SDK.
 */
export {
  ASSUMED_PRICE_MEANING,
  type CatalogInstanceType,
  type CatalogOptions,
  catalogHardware,
  catalogLabels,
  catalogOfferings,
  instanceTypesFromCatalog,
} from './catalog.ts';
export type { DaemonSet, ExistingNode, InFlightNodeClaim } from './cluster.ts';
export * from './conditions.ts';
export { needsPlaceOffDeletingNode } from './deleting-pods.ts';
export {
  type AllowedDisruptions,
  allowedDisruptions,
  type BudgetCounts,
  type BudgetProblem,
  budgetActive,
  budgetNodes,
  type ConsolidatableVerdict,
  type CronSchedule,
  consolidatable,
  cronMatches,
  cronWindowOpen,
  DEFAULT_BUDGET,
  type DisruptionBudget,
  type DisruptionReason,
  type DoNotDisruptVerdict,
  type Drift,
  type DriftReason,
  disruptionCost,
  doNotDisrupt,
  doNotDisruptValue,
  type ExpirationVerdict,
  expiration,
  hashDrift,
  isReschedulable,
  isTimeZone,
  latestFiring,
  lifetimeRemaining,
  type MethodDisruptionReason,
  matchingPdbs,
  nextFiring,
  nodeDoNotDisrupt,
  type PdbLimit,
  type PodBlocker,
  parseCron,
  podBlockers,
  podEvictionCost,
  requirementsDrift,
  type VersionedHash,
  wallClockMs,
} from './disruption/index.ts';
export { parseGoDurationMs } from './duration.ts';
export {
  assertNever,
  FlotillaError,
  InvalidQuantityError,
  InvalidRequirementError,
  ValidationError,
} from './errors.ts';
export {
  AL2023_DEFAULTS,
  cheapestOfferingPrice,
  computeAllocatable,
  computeCapacityAndOverhead,
  defaultKubeReservedCpuMillis,
  defaultKubeReservedMemoryBytes,
  type EvictionThreshold,
  type InstanceHardware,
  type InstanceType,
  type InstanceTypeOverhead,
  type KubeletConfiguration,
  type NodeClassSettings,
  type Offering,
  RESERVED_PRICE_DIVISOR,
  reservationPreference,
} from './instance-type.ts';
export { KUBELET_CONFIGURATION_FIELDS, type KubeletValueKind } from './kubelet-configuration.ts';
export {
  type CapacityType,
  INSTANCE_TYPE_LABEL_KEYS,
  Label,
  type Labels,
  OFFERING_LABEL_KEYS,
} from './labels.ts';
export {
  adjustPrice,
  applyNodeOverlays,
  type InstanceTypeOverlay,
  NO_OVERLAYS,
  type NodeOverlay,
  OVERLAY_RESTRICTED_RESOURCES,
  type OverlayPool,
  type OverlayResolution,
  offeringOverlayKey,
  orderNodeOverlays,
  type PriceChange,
  parsePriceChange,
  resolveNodeOverlays,
} from './node-overlay.ts';
export { isStaticNodePool, type NodePool, nodePoolRequirements, orderNodePools } from './node-pool.ts';
export {
  type Affinity,
  admitsNewNode,
  admitsNodeName,
  type ClaimVolume,
  type Container,
  type ContainerPort,
  type ContainerResourceStatus,
  computePodRequests,
  formatMatchFields,
  type InitContainer,
  type LabelSelector,
  matchesSelector,
  NODE_NAME_FIELD,
  type NodeSelectorTerm,
  type Pod,
  type PodAffinityTerm,
  type PodDisruptionInfo,
  type PodRef,
  podClaimIds,
  podHostPorts,
  type TopologySpreadConstraint,
  toPodRef,
  type VolumeTopology,
  type WeightedPodAffinityTerm,
} from './pod.ts';
export {
  admitPriority,
  HIGHEST_USER_DEFINABLE_PRIORITY,
  type PriorityAdmission,
  type PriorityClass,
  priorityClassNames,
  SYSTEM_PRIORITY_CLASS_PREFIX,
  SYSTEM_PRIORITY_CLASSES,
} from './priority.ts';
export { parseInstanceId } from './provider-id.ts';
export {
  BINARY_UNITS,
  formatQuantity,
  parsePercent,
  parseQuantity,
  QUANTITY_MAX,
  type QuantityScale,
  type QuantitySource,
  quantitySign,
} from './quantity.ts';
export { requirementProblem } from './requirement-problems.ts';
export {
  type NodeSelectorRequirement,
  OPERATORS,
  type Operator,
  Requirement,
  type RequirementSource,
  Requirements,
} from './requirements.ts';
export {
  DEFAULT_FIT_SCORING,
  FIT_SCORINGS,
  type FitScoring,
  isFitScoring,
  resourceFitScore,
  scoredRequests,
} from './resource-fit-score.ts';
export {
  addResources,
  fitsResources,
  formatResources,
  maxResources,
  parseResourceList,
  Resource,
  type ResourceList,
  resourceScale,
  subtractResources,
} from './resources.ts';
export { solve } from './scheduler.ts';
export {
  describeWindow,
  formatInZone,
  heldPool,
  heldReplicas,
  nextTransition,
  type OpenWindow,
  openWindow,
  openWindows,
  type PoolSchedule,
  type PoolSchedules,
  SCHEDULE_HORIZON_MS,
  type ScheduleHold,
  windowLimits,
} from './schedules.ts';
export { DYNAMIC_RESOURCES_UNSUPPORTED } from './scheduling/reasons.ts';
export {
  planStaticNodeClaim,
  type StaticClaimInput,
  type StaticClaimPlan,
} from './scheduling/static-claim.ts';
export { NO_COMPATIBLE_INSTANCE_TYPES } from './scheduling/templates.ts';
export type {
  LaunchCandidate,
  NodeClaimPlan,
  Placement,
  PoolReason,
  SolveInput,
  SolveOptions,
  SolveResult,
  UnschedulablePod,
} from './scheduling-types.ts';
export {
  computeStaticDecision,
  computeStaticDriftRoom,
  type StaticDecision,
  type StaticDriftRoom,
  type StaticMember,
  type StaticPoolCounts,
  type StaticPoolInput,
} from './static-capacity.ts';
export {
  DISRUPTED_TAINT,
  firstUntolerated,
  formatTaint,
  isEphemeralTaint,
  type Taint,
  type TaintEffect,
  type Toleration,
  tolerates,
  UNREGISTERED_TAINT,
} from './taints.ts';
export { MAX_VOLUME_ALTERNATIVES, volumeAlternatives } from './volume-topology.ts';
export { Annotation, Finalizer, WellKnownLabel } from './well-known.ts';
