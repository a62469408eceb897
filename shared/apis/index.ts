// Kubernetes and Karpenter objects as Flotilla reads and writes them: pure conversions from the
// API server's shape (core/v1, apps/v1, policy/v1, storage/v1, karpenter.sh/v1,
// karpenter.k8s.aws/v1) into the domain types of shared/core and shared/ports, and back. Both the
// Kubernetes adapter and the in-memory cluster go through them, so a manifest reads the same in
// both. Each conversion throws ValidationError naming the object and the field.

export { makeSummaryConversions, readSummaryDocument, type SummaryConversions } from './cluster-summary.ts';
export { mergeConditions, toRfc3339Seconds, withoutConditions } from './conditions.ts';
export { type CsiNodeLimits, toClaimDrivers, toCsiNodeLimits } from './csi.ts';
export {
  conditionSchema,
  DEFAULT_METADATA_OPTIONS,
  PLACEMENT_GROUP_ANNOTATION,
  parseEC2NodeClass,
  placementGroupAnnotation,
} from './ec2nodeclass.ts';
export {
  convertEach,
  nonEmpty,
  optional,
  podObject,
  toLabelSelector,
  toMs,
  toNodeSelectorRequirements,
  toNodeSelectorTerm,
  toQuantityMap,
  toQuantityString,
  toTaint,
  toToleration,
} from './fields.ts';
export { KARPENTER_GROUP, KARPENTER_VERSION } from './karpenter.ts';
export {
  groupPodsByNode,
  makePodsByNode,
  type PodsByNode,
  toClusterNode,
  toDrainPod,
  toPodDisruptionBudget,
  toVolumeAttachment,
  withPods,
} from './node.ts';
export {
  convertNodeClaims,
  nodeClassLabelKey,
  toClusterNodeClaim,
  toNodeClaimManifest,
} from './nodeclaim.ts';
export { NODE_OVERLAY_VERSION, parseNodeOverlay } from './nodeoverlay.ts';
export { toClusterNodePool } from './nodepool.ts';
export { toDaemonSet, toPod } from './pod.ts';
export { makePodReader, type PodReader } from './pod-reader.ts';
export { joinPod, type PodInstance, type PodTemplate, type SplitPod, splitPod } from './pod-templates.ts';
export { makeVolumeIndex, toVolumeTopology, usesClaims, type VolumeIndex } from './pod-volumes.ts';
export { isUnschedulable } from './provisionable.ts';
export {
  encodeSummaryDocument,
  pruneNode,
  pruneNodeClaim,
  SUMMARY_KINDS,
  SUMMARY_VERSION,
  SummaryBuilder,
  type SummaryDocument,
  type SummaryHead,
  type SummaryKind,
  type SummaryPods,
  summaryBucketName,
  summaryObjectKey,
} from './summary-document.ts';
