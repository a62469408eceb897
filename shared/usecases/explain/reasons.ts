// What `flotilla explain` says, in fixed words: one headline per reason code. The README documents
// these texts, and the tests check the explanations by them.

/** What follows a price the catalog only assumes, as the other commands mark it. */
export const ASSUMED_MARK = '*';

/** Why a pod waits, or where it goes. */
export const POD_REASONS = {
  bound: 'the pod is bound to a node',
  fitsExistingNode: 'the pod fits a node that exists; kube-scheduler binds it',
  nominated: 'the pod is nominated to a NodeClaim on its way',
  wouldLaunch: 'Flotilla launches a NodeClaim for the pod',
  noNodePool: 'no NodePool matches the pod',
  nodePoolLimits: 'the NodePool limits are reached',
  costLimit: 'a dollar limit is reached',
  nodeClassNotReady: 'the EC2NodeClass is not Ready',
  nodePoolNotReady: 'the NodePool is not Ready',
  noInstanceTypeFits: 'no instance type fits the pod',
  launchPaused: 'the runaway guard pauses the NodePool launches',
  scheduleHolds: 'a schedule of the NodePool holds its launches',
  taintNotTolerated: 'the pod does not tolerate a NodePool taint',
  requirements: 'the pod requirements exclude the NodePool',
  nodePoolDeleting: 'the NodePool is being deleted',
  staticNodePool: 'the NodePool is static',
  other: 'the NodePool cannot take the pod',
} as const;

export type PodReasonCode = keyof typeof POD_REASONS;

/** Why a node stays, or what disruption does with it next. */
export const NODE_REASONS = {
  notManaged: 'no NodeClaim owns the node; Flotilla does not disrupt it',
  standalone: 'its NodeClaim is in no NodePool; no NodePool consolidates or drifts it',
  deleting: 'the NodeClaim is being deleted',
  inCommand: 'the node is in a disruption command',
  notInitialized: 'the node is not initialized',
  doNotDisruptNode: 'the node has karpenter.sh/do-not-disrupt',
  doNotDisruptPod: 'a pod on the node has karpenter.sh/do-not-disrupt',
  pdb: 'a PodDisruptionBudget prevents evicting a pod',
  nominated: 'pending pods are nominated to the node',
  unreadablePods: 'a pod on the node cannot be read',
  budget: 'a disruption budget allows no disruption now',
  rolloutPaused: 'an alarm the NodePool names holds its drift and expiration',
  consolidateAfter: 'consolidateAfter has not passed',
  consolidationDisabled: 'consolidation is off (consolidateAfter Never)',
  whenEmptyWithPods: 'consolidationPolicy is WhenEmpty and the node has pods',
  notCheaper: 'consolidation found no cheaper way to run its pods',
  noPrice: 'the node has no known price to compare',
  noMethod: 'no disruption method applies to the node now',
  wouldDisrupt: 'disruption acts on the node next',
  afterCommand: 'disruption starts a command on other nodes first',
} as const;

export type NodeReasonCode = keyof typeof NODE_REASONS;

/** One reason: its code, its fixed headline, and what this case adds. */
export interface Reason<C extends string> {
  readonly code: C;
  readonly headline: string;
  readonly detail: string;
}

export const podReason = (code: PodReasonCode, detail: string): Reason<PodReasonCode> => ({
  code,
  headline: POD_REASONS[code],
  detail,
});

export const nodeReason = (code: NodeReasonCode, detail: string): Reason<NodeReasonCode> => ({
  code,
  headline: NODE_REASONS[code],
  detail,
});
