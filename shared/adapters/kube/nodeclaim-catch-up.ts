import { isRecord } from '../../apis/fields.ts';
import { PROBE_SELECTOR, revisionOf } from '../../apis/revisions.ts';
import { pruneNodeClaim } from '../../apis/summary-document.ts';
import { ClusterApiError } from '../../ports/errors.ts';
import { customPath, type KubeContext, NODECLAIMS } from './context.ts';

// Every NodeClaim, as the API server has them now, without listing them all each time. A warm
// container keeps the NodeClaims of its last read with the revision they were read at; the next
// read asks the API server for its revision now (a consistent list that selects nothing) and
// follows a short watch from the kept revision until it has delivered that one (an event or a
// bookmark at or past it), applying each change. Only what changed crosses the wire, where a list
// of 5,000 NodeClaims is about 40 MB of JSON. It is as current as a list: the API server's own
// answer, never the summary's. A read that cannot catch up (no revision kept, the watch refused,
// expired, broken or ended early, a line that is not an event) lists them all, as before, and
// keeps that list. What is kept goes without its managed fields (a third of a NodeClaim's JSON),
// which nothing reads. A catch-up waits for the watch's bookmark (about a second) unless a change
// reaches the revision first, so only a container whose last read held many NodeClaims
// (`nodeClaimCatchUpFrom`, 1,000 by default) catches up; fewer are listed, in milliseconds.

/**
 * How long one catch-up watch may stay open. The API server sends a bookmark 2 s before a watch
 * request ends, so with 3 s one comes about a second in, at the revision the probe asked for.
 */
const WATCH_SECONDS = 3;

/** The NodeClaims kept between reads, by uid (by name when one has none), and their revision. */
interface Held {
  revision: bigint;
  readonly claims: Map<string, unknown>;
}

export interface NodeClaimCatchUp {
  /** Every NodeClaim, raw, as the API server has them now. */
  read(): Promise<readonly unknown[]>;
}

/**
 * Catch-ups in a row whose watch ended before the probe's revision, after which a container only
 * lists for a while: an API server without a watch cache for NodeClaims sends no bookmarks, and one
 * before Kubernetes 1.31 may answer the probe from etcd ahead of its cache, so each catch-up would
 * wait out its watch only to list after all.
 */
const EARLY_ENDS_BEFORE_LISTING = 2;

/** How long a container only lists after its watch was refused or ended early too often. */
const LIST_ONLY_MS = 10 * 60_000;

/** Why a catch-up gave up: the read lists instead. */
class NotCaughtUp extends Error {
  constructor(
    message: string,
    /** The watch ended, or was cut off, before it delivered the probe's revision. */
    readonly early = false,
  ) {
    super(message);
  }
}

/**
 * `list` reads every NodeClaim with one consistent list (from scratch at every attempt), with the
 * list's resourceVersion.
 */
export function makeNodeClaimCatchUp(
  ctx: KubeContext,
  list: () => Promise<{ readonly items: readonly unknown[]; readonly resourceVersion: string | undefined }>,
): NodeClaimCatchUp {
  const path = customPath(NODECLAIMS);
  let held: Held | undefined;
  /** The identity may not watch NodeClaims: said once per container. */
  let forbiddenLogged = false;
  let earlyEnds = 0;
  /** Until when (epoch ms) the container lists without trying to catch up. */
  let listOnlyUntilMs = 0;
  const listOnly = () => ctx.clock.now().getTime() < listOnlyUntilMs;

  async function listAll(): Promise<readonly unknown[]> {
    held = undefined;
    const listed = await list();
    const revision = revisionOf(listed.resourceVersion);
    // Kept only for a catch-up to come: a container that only lists keeps nothing, and a cluster of
    // few NodeClaims lists them quicker than a watch brings its bookmark.
    if (revision === undefined || listOnly() || listed.items.length < ctx.nodeClaimCatchUpFrom) {
      return listed.items;
    }
    const items = listed.items.map(pruneNodeClaim);
    held = { revision, claims: new Map(items.map((raw) => [keyOf(raw), raw])) };
    return items;
  }

  /** The API server's revision now, from a consistent list that selects nothing. */
  async function probe(): Promise<bigint> {
    const head = await ctx.api.call('probe nodeclaims', (signal) =>
      ctx.raw.list({ path, query: { fieldSelector: PROBE_SELECTOR }, signal }, () => undefined),
    );
    const revision = revisionOf(head.metadata?.resourceVersion);
    if (revision === undefined) throw new NotCaughtUp('the API server gave no numeric revision');
    return revision;
  }

  /** Applies the changes from `from.revision` up to `target` to `from`; throws NotCaughtUp. */
  async function catchUp(from: Held, target: bigint): Promise<void> {
    let delivered = from.revision;
    let problem: string | undefined;
    const caught = new AbortController();
    await ctx.api.call('watch nodeclaims', (signal) =>
      ctx.raw.stream(
        {
          path,
          query: {
            watch: 'true',
            resourceVersion: String(from.revision),
            allowWatchBookmarks: 'true',
            timeoutSeconds: String(WATCH_SECONDS),
          },
          signal: AbortSignal.any([signal, caught.signal]),
        },
        (line) => {
          if (caught.signal.aborted) return;
          const type = isRecord(line) ? line['type'] : undefined;
          const object = isRecord(line) ? line['object'] : undefined;
          const meta = isRecord(object) && isRecord(object['metadata']) ? object['metadata'] : undefined;
          const revision = revisionOf(meta?.['resourceVersion']);
          if (type === 'ERROR' || revision === undefined) {
            problem =
              type === 'ERROR'
                ? `the watch ended with an error (${JSON.stringify(isRecord(object) ? (object['code'] ?? object['reason']) : object)})`
                : 'a watch line without a numeric resourceVersion';
          } else if (type === 'ADDED' || type === 'MODIFIED') {
            from.claims.set(keyOf(object), pruneNodeClaim(object));
          } else if (type === 'DELETED') {
            from.claims.delete(keyOf(object));
          } else if (type !== 'BOOKMARK') {
            problem = `a watch line of type ${JSON.stringify(type)}`;
          }
          if (problem === undefined && revision !== undefined && revision > delivered) delivered = revision;
          if (problem !== undefined || delivered >= target) caught.abort();
        },
      ),
    );
    if (problem !== undefined) throw new NotCaughtUp(problem);
    if (delivered < target) {
      throw new NotCaughtUp(`the watch ended at revision ${delivered}, before ${target}`, true);
    }
    from.revision = delivered;
  }

  return {
    async read() {
      const from = held;
      if (from === undefined || listOnly()) return listAll();
      // Whatever happens below, the kept state is either caught up or let go.
      held = undefined;
      try {
        const target = await probe();
        if (target > from.revision) await catchUp(from, target);
        held = from;
        earlyEnds = 0;
        return inListOrder(from.claims.values());
      } catch (error) {
        if (!(error instanceof NotCaughtUp) && !(error instanceof ClusterApiError)) throw error;
        const forbidden = error instanceof ClusterApiError && error.httpStatus === 403;
        const nowMs = ctx.clock.now().getTime();
        if (error instanceof NotCaughtUp && error.early) {
          earlyEnds += 1;
          if (earlyEnds >= EARLY_ENDS_BEFORE_LISTING) {
            earlyEnds = 0;
            listOnlyUntilMs = nowMs + LIST_ONLY_MS;
            ctx.logger.info('nodeclaim catch-up given up for a while; listing them all', {
              why: `${EARLY_ENDS_BEFORE_LISTING} watches in a row ended before the API server's revision (no watch cache for NodeClaims, or Kubernetes before 1.31?)`,
              error: error.message,
              untilMs: listOnlyUntilMs,
            });
          }
        }
        if (forbidden) listOnlyUntilMs = nowMs + LIST_ONLY_MS;
        if (forbidden && !forbiddenLogged) {
          forbiddenLogged = true;
          ctx.logger.warn('nodeclaim watch forbidden; listing them all instead', {
            why: 'the controller role lacks watch on nodeclaims (apply the stack’s RBAC)',
            error,
          });
        } else {
          ctx.logger.debug('nodeclaims listed again', { why: error.message });
        }
        return listAll();
      }
    },
  };
}

/** The NodeClaims in the order a list gives them: by name (the API server's storage keys). */
function inListOrder(claims: Iterable<unknown>): unknown[] {
  const named = [...claims].map((raw) => ({ raw, name: nameOf(raw) }));
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return named.map((n) => n.raw);
}

function nameOf(raw: unknown): string {
  const meta = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : undefined;
  return String(meta?.['name'] ?? '');
}

/** Where a NodeClaim is kept: its uid, else its name. */
function keyOf(raw: unknown): string {
  const meta = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : undefined;
  const uid = meta?.['uid'];
  return typeof uid === 'string' && uid !== '' ? `uid:${uid}` : `name:${nameOf(raw)}`;
}
