// Keys with a meaning Karpenter defines, shared by the controllers and the adapters: finalizers,
// annotations and labels (taints are in taints.ts, labels the scheduler reads in labels.ts).

/** Finalizers Flotilla puts on what it manages, and releases once it is done with them. */
export const Finalizer = {
  /** On NodeClaims and their Nodes: held until the node is drained and its instance terminated. */
  termination: 'karpenter.sh/termination',
  /** On EC2NodeClasses: held while NodeClaims use the class and until its instance profile is gone. */
  nodeClassTermination: 'karpenter.k8s.aws/termination',
} as const;

/** Annotations with a meaning Karpenter defines. */
export const Annotation = {
  /** On a pod or node: voluntary disruption leaves it alone. */
  doNotDisrupt: 'karpenter.sh/do-not-disrupt',
  /** On a Node or NodeClaim, `"true"`: node repair leaves it alone (Karpenter v1.15). */
  doNotRepair: 'karpenter.sh/do-not-repair',
  /** On a deleting NodeClaim: when its terminationGracePeriod runs out (RFC 3339). */
  terminationTimestamp: 'karpenter.sh/nodeclaim-termination-timestamp',
  /** On a NodeClaim: the hash of the NodePool template it was made from, and the hash's version. */
  nodePoolHash: 'karpenter.sh/nodepool-hash',
  nodePoolHashVersion: 'karpenter.sh/nodepool-hash-version',
  /** On a static pod's mirror. */
  configMirror: 'kubernetes.io/config.mirror',
  /** On a NodeClaim, `"true"`: its instance is tagged with its node's name (Karpenter's AWS tagging). */
  tagged: 'karpenter.k8s.aws/tagged',
} as const;

/** Labels with a meaning Karpenter defines that the scheduler does not read. */
export const WellKnownLabel = {
  /** On a Node: registration leaves its taints as they are. */
  doNotSyncTaints: 'karpenter.sh/do-not-sync-taints',
  /** On a draining Node: load balancers stop sending it traffic. */
  excludeFromLoadBalancers: 'node.kubernetes.io/exclude-from-external-load-balancers',
} as const;
