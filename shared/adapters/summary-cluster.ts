import type { Clock } from '../ports/clock.ts';
import type { Cluster, ClusterNodeClaim, NodeClaimRead } from '../ports/cluster.ts';
import {
  type ClusterSummaryHead,
  SUMMARY_MAX_AGE_MS,
  SummaryDatedAheadError,
  type SummarySource,
  SummaryTooLargeError,
} from '../ports/summary.ts';
import type { Logger } from '../runtime/logger.ts';

// The Cluster port over the cluster summary: the list reads of pods, Nodes and NodeClaims come from
// the summary the shim published, when it is fresh, and from the API server otherwise; everything
// else (single gets, consistent or one NodePool's reads, writes) goes to the API server. So a Lambda reads a cluster
// of any size in one request instead of listing it. What this Lambda container wrote to NodeClaims
// in the last minutes is always read back from the API server over the summary, whatever the
// summary says of its own currency: a summary (the shim's, or whoever holds its role) never hides
// a container's own writes from it. The summary's age is the source's to judge (S3's clock).

export interface SummaryClusterOptions {
  readonly source: SummarySource;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * A summary published, or behind a watch that was last current, longer ago than this is not used.
   * @default 60_000
   */
  readonly maxAgeMs?: number;
}

/** How long a write through this container is read back over the summary. */
const OWN_WRITES_MS = 120_000;

/** Up to this many NodeClaims written lately are read back one by one; more, and they are listed. */
const OWN_WRITE_GETS = 20;

/** A write this long before the summary's watch was last current shows in it (delivery takes less). */
const OWN_WRITE_MARGIN_MS = 10_000;

/** Why the summary was not used, logged at most once a minute per reason. */
const LOG_EVERY_MS = 60_000;

/** What the summary decorator did, for tests and benchmarks. */
export interface SummaryUse {
  /** List reads served from the summary. */
  readonly fromSummary: number;
  /** List reads that went to the API server because the summary could not be used. */
  readonly direct: number;
}

/** The Cluster port with its list reads served from the cluster summary when it is fresh. */
export function withClusterSummary(
  cluster: Cluster,
  options: SummaryClusterOptions,
): Cluster & { summaryUse(): SummaryUse } {
  const maxAgeMs = options.maxAgeMs ?? SUMMARY_MAX_AGE_MS;
  const now = () => options.clock.now().getTime();
  const written = new Map<string, number>();
  const logged = new Map<string, number>();
  let fromSummary = 0;
  let direct = 0;

  const notUsed = (why: string, fields: Record<string, unknown> = {}) => {
    direct += 1;
    const last = logged.get(why);
    if (last !== undefined && now() - last < LOG_EVERY_MS) return;
    logged.set(why, now());
    options.logger.warn('cluster summary not used', { why, fallback: 'reading the API server', ...fields });
  };

  /**
   * The summary (or its head alone, `read` being the source's readHead) when it is fresh enough to
   * use, else undefined (and the reason logged).
   */
  async function fresh<S extends ClusterSummaryHead>(
    read: () => Promise<S | undefined>,
  ): Promise<S | undefined> {
    let summary: S | undefined;
    try {
      summary = await read();
    } catch (error) {
      notUsed(
        error instanceof SummaryTooLargeError
          ? 'too large'
          : error instanceof SummaryDatedAheadError
            ? 'dated ahead of its store'
            : 'unreadable',
        { error },
      );
      return undefined;
    }
    if (summary === undefined) {
      notUsed('none published yet (is the shim running?)');
      return undefined;
    }
    const ageMs = now() - Math.min(summary.publishedAtMs, summary.currentAtMs);
    if (ageMs > maxAgeMs) {
      notUsed('stale', {
        ageSeconds: Math.round(ageMs / 1000),
        maxAgeSeconds: maxAgeMs / 1000,
        publishedAt: new Date(summary.publishedAtMs).toISOString(),
      });
      return undefined;
    }
    fromSummary += 1;
    return summary;
  }

  const remember = (name: string) => written.set(name, now());

  /**
   * The summary's NodeClaims with every NodeClaim this container wrote in the last OWN_WRITES_MS
   * read back from the API server, however current the summary says it is.
   */
  async function withOwnWrites(read: NodeClaimRead): Promise<NodeClaimRead> {
    for (const [name, at] of written) if (now() - at > OWN_WRITES_MS) written.delete(name);
    const unseen = [...written.keys()];
    if (unseen.length === 0) return read;
    // Many writes (a pass that updated every NodeClaim's conditions): one list beats a read each.
    if (unseen.length > OWN_WRITE_GETS) return cluster.nodeClaims();
    const fresh = await Promise.all(
      unseen.map(async (name) => [name, await cluster.nodeClaim(name)] as const),
    );
    const replaced = new Map<string, ClusterNodeClaim | undefined>(fresh);
    const items = read.items.filter((c) => !replaced.has(c.name));
    for (const claim of replaced.values()) if (claim !== undefined) items.push(claim);
    return { ...read, items, unreadable: read.unreadable.filter((u) => !replaced.has(u.name)) };
  }

  /** The whole summary, and its head alone (which the source may hold from an earlier read). */
  const whole = () => options.source.read();
  const head = () => options.source.readHead?.() ?? options.source.read();

  /**
   * `read` of the summary `source` gives, or of the API server when it is not fresh or its content
   * fails to convert.
   */
  async function from<S extends ClusterSummaryHead, T>(
    source: () => Promise<S | undefined>,
    read: (s: S) => T | Promise<T>,
    direct: () => Promise<T>,
  ): Promise<T> {
    const summary = await fresh(source);
    if (summary === undefined) return direct();
    try {
      return await read(summary);
    } catch (error) {
      fromSummary -= 1;
      notUsed('unreadable', { error });
      return direct();
    }
  }

  return {
    ...cluster,
    nodes: () => from(whole, (s) => s.nodes(), cluster.nodes),
    // A consistent or one NodePool's list (label-selected) is the API server's.
    nodeInfos: (readOptions) =>
      readOptions?.consistent === true || readOptions?.nodePool !== undefined
        ? cluster.nodeInfos(readOptions)
        : from(
            head,
            (s) => s.nodeInfos(),
            () => cluster.nodeInfos(),
          ),
    boundPods: () => from(whole, (s) => s.boundPods(), cluster.boundPods),
    async nodeClaims(readOptions) {
      if (readOptions?.consistent === true || readOptions?.nodePool !== undefined) {
        return cluster.nodeClaims(readOptions);
      }
      const asOf = readOptions?.freshAsOfMs;
      return from(
        head,
        (summary) =>
          // Writes made until `asOf` (by another invocation) may not show in it yet.
          asOf !== undefined && summary.currentAtMs < asOf + OWN_WRITE_MARGIN_MS
            ? cluster.nodeClaims()
            : withOwnWrites(summary.nodeClaims()),
        () => cluster.nodeClaims(),
      );
    },
    async createNodeClaim(claim) {
      const created = await cluster.createNodeClaim(claim);
      remember(claim.name);
      return created;
    },
    async patchNodeClaimStatus(name, patch, asRead) {
      await cluster.patchNodeClaimStatus(name, patch, asRead);
      remember(name);
    },
    async patchNodeClaimMetadata(name, patch) {
      await cluster.patchNodeClaimMetadata(name, patch);
      remember(name);
    },
    async deleteNodeClaim(name) {
      await cluster.deleteNodeClaim(name);
      remember(name);
    },
    summaryUse: () => ({ fromSummary, direct }),
  };
}
