/** An instance Flotilla launched for the cluster, as the clean-up lists it. */
export interface OwnedInstance {
  readonly instanceId: string;
  readonly state: string;
  readonly nodePool: string;
  readonly nodeClaim?: string;
}

/** A launch template made for the cluster (by Flotilla, or by Karpenter before a takeover). */
export interface OwnedLaunchTemplate {
  readonly id: string;
  readonly name: string;
}

/**
 * What Flotilla launched for one cluster, found by its ownership tags only
 * (`kubernetes.io/cluster/<name>: owned` with a `karpenter.sh/nodepool` tag): never anything of
 * another cluster or another maker.
 */
export interface ClusterResources {
  /** @throws CloudApiError */
  instances(): Promise<readonly OwnedInstance[]>;
  /** @throws CloudApiError */
  launchTemplates(): Promise<readonly OwnedLaunchTemplate[]>;
  /** Terminates these instances (already gone counts as done). @throws CloudApiError */
  terminate(instanceIds: readonly string[]): Promise<void>;
  /** Deletes this template (already gone counts as done). @throws CloudApiError */
  deleteLaunchTemplate(id: string): Promise<void>;
}
