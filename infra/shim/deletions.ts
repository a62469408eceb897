/** The kinds whose deletion the shim forwards, as the cluster summary names them. */
export type DeletionKind = 'nodes' | 'nodeClaims';

/** What a Node or NodeClaim watch event carries that the tracker reads. */
export interface WatchedObject {
  readonly metadata?: {
    readonly name?: string;
    readonly uid?: string;
    readonly deletionTimestamp?: unknown;
  };
}

/** A deletion to forward: which object started being deleted. */
export interface ObservedDeletion {
  readonly object: 'Node' | 'NodeClaim';
  readonly name: string;
  readonly uid: string;
}

const OBJECT: Readonly<Record<DeletionKind, ObservedDeletion['object']>> = {
  nodes: 'Node',
  nodeClaims: 'NodeClaim',
};

/**
 * Remembers which Nodes and NodeClaims were already reported deleting, so each is forwarded once,
 * when its deletionTimestamp first appears (in a watch event or a list), not on every update while
 * its finalizers run. Pure state, no I/O.
 */
export class DeletionTracker {
  private readonly reported: Record<DeletionKind, Set<string>> = { nodes: new Set(), nodeClaims: new Set() };

  /**
   * The deletion to forward for this event, or undefined: only the first sight of a deletionTimestamp
   * on an object; an object gone (`DELETED`) is forgotten.
   */
  observe(
    kind: DeletionKind,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: WatchedObject,
  ): ObservedDeletion | undefined {
    const uid = object.metadata?.uid;
    const name = object.metadata?.name;
    if (typeof uid !== 'string' || uid === '' || typeof name !== 'string' || name === '') return undefined;
    if (type === 'DELETED') {
      this.reported[kind].delete(uid);
      return undefined;
    }
    const deletionTimestamp = object.metadata?.deletionTimestamp;
    if (deletionTimestamp === undefined || deletionTimestamp === null) return undefined;
    if (this.reported[kind].has(uid)) return undefined;
    this.reported[kind].add(uid);
    return { object: OBJECT[kind], name, uid };
  }

  /** Forgets every object of `kind` not among `uids` (a fresh list: objects gone while the watch was down). */
  retain(kind: DeletionKind, uids: ReadonlySet<string>): void {
    for (const uid of this.reported[kind]) if (!uids.has(uid)) this.reported[kind].delete(uid);
  }

  /** Objects reported deleting and not gone yet. */
  get size(): number {
    return this.reported.nodes.size + this.reported.nodeClaims.size;
  }
}
