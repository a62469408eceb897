/** What a NodeClaim watch event carries that the standalone tracker reads. */
export interface WatchedNodeClaim {
  readonly metadata?: {
    readonly name?: string;
    readonly uid?: string;
    readonly labels?: Readonly<Record<string, unknown>> | null;
    readonly deletionTimestamp?: unknown;
  };
  readonly spec?: {
    readonly nodeClassRef?: { readonly group?: unknown; readonly kind?: unknown } | null;
  } | null;
  readonly status?: { readonly providerID?: unknown } | null;
}

const NODEPOOL_LABEL = 'karpenter.sh/nodepool';

/**
 * Remembers which standalone NodeClaims (no `karpenter.sh/nodepool` label, of an EC2NodeClass)
 * were already reported waiting for their instance, so each is forwarded once, when first seen
 * without a providerID and not being deleted. Pure state, no I/O.
 */
export class StandaloneTracker {
  private readonly reported = new Set<string>();

  /** The NodeClaim to forward for this event, or undefined; one gone (`DELETED`) is forgotten. */
  observe(
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: WatchedNodeClaim,
  ): { readonly name: string; readonly uid: string } | undefined {
    const uid = object.metadata?.uid;
    const name = object.metadata?.name;
    if (typeof uid !== 'string' || uid === '' || typeof name !== 'string' || name === '') return undefined;
    if (type === 'DELETED') {
      this.reported.delete(uid);
      return undefined;
    }
    const labels = object.metadata?.labels;
    const deleting =
      object.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;
    const launched = typeof object.status?.providerID === 'string' && object.status.providerID !== '';
    // Another provider's NodeClaim (its class not an EC2NodeClass) is not Flotilla's to launch.
    const ref = object.spec?.nodeClassRef;
    const ours = ref?.group === 'karpenter.k8s.aws' && ref.kind === 'EC2NodeClass';
    if (
      (labels !== undefined && labels !== null && NODEPOOL_LABEL in labels) ||
      deleting ||
      launched ||
      !ours
    ) {
      return undefined;
    }
    if (this.reported.has(uid)) return undefined;
    this.reported.add(uid);
    return { name, uid };
  }

  /** Forgets every NodeClaim not among `uids` (a fresh list: those gone while the watch was down). */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of this.reported) if (!uids.has(uid)) this.reported.delete(uid);
  }

  /** NodeClaims reported and not gone yet. */
  get size(): number {
    return this.reported.size;
  }
}
