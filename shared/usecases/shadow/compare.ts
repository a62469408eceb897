import { type ObservedChange, type ShadowLines, shadowLines } from './lines.ts';

// What a shadow stack's lines add up to: the dollars the cluster cost under its live autoscaler
// over a window, what Flotilla's choices would have cost, and the choices that make the
// difference, each priced. Pure; the report (shared/cli/shadow) and the simulator feed it lines.
//
// The model, every figure in USD:
// - The window runs from the first shadow line to the last; NodeClaims created or deleted before
//   it opened are left out. A window given (a UTC day) narrows it: the lines before it still pair,
//   and every figure below counts only its part within the window.
// - The live cost is the step curve of the shadow's observations: each observe line's NodePool
//   prices summed, held until the next observation (the last one until the window ends; the first
//   one from the window's start).
// - A launch the shadow proposed (or a replacement a proposed command names) pairs with the live
//   NodeClaim created in the same NodePool within PAIR_WINDOW_MS, one of the same instance type
//   first, then the nearest in time. A pair differs
//   by the price difference for as long as the live NodeClaim lived in the window.
// - A live NodeClaim with no shadow launch to pair, created within PAIR_WINDOW_MS of a live
//   deletion in its NodePool that no proposal named, replaced that NodeClaim (expiry, interruption,
//   a disruption Flotilla would not make): Flotilla, keeping the old one, differs by the price
//   difference for the new one's life. Any other (a launch Flotilla would not have made: the shadow
//   planned those pods onto capacity already there) saves its price for its life.
// - A proposed launch no live NodeClaim pairs costs its price while the shadow kept proposing it
//   (its pods pending), one pass more: once they run elsewhere Flotilla would consolidate it.
// - A proposed disruption command saves its candidates' price less its replacements' from its
//   first proposal until the live autoscaler deleted every candidate, the shadow stopped
//   proposing it (one pass after its last proposal), or the window ended, whichever is first.
//   Its replacements only pair with live launches; unpaired, their price is already in its saving.
// - A live deletion no proposal named (expiry, interruption, a user's delete, or a disruption
//   Flotilla would not have made) is listed, not priced: the lines cannot tell those apart.

/** How far apart in time a live NodeClaim and a shadow launch may be to be the same answer. */
export const PAIR_WINDOW_MS = 10 * 60_000;

/** A window of time to price (epoch ms; `toMs` exclusive in effect: nothing is dated at it). */
export interface ShadowWindow {
  readonly fromMs: number;
  readonly toMs: number;
}

/** The kinds of difference the model prices. */
export const DIFFERENCE_KINDS = [
  'cheaper launch',
  'launch not made',
  'replacement not made',
  'extra launch',
  'disruption',
] as const;

/** One choice that makes Flotilla's cost differ from the live autoscaler's. */
export interface ShadowDifference {
  readonly kind: (typeof DIFFERENCE_KINDS)[number];
  /** Dollars Flotilla would have saved over the window (negative: it would have cost more). */
  readonly dollars: number;
  /** USD per hour of the difference while it held. */
  readonly pricePerHour: number;
  readonly nodePool: string;
  readonly from: string;
  readonly until: string;
  /** What happened on each side, in words. */
  readonly why: string;
}

export interface PercentileSummary {
  readonly count: number;
  readonly p50?: number;
  readonly p90?: number;
}

export interface ShadowComparison {
  readonly from: string;
  readonly to: string;
  readonly hours: number;
  readonly live: {
    readonly dollars: number;
    readonly averagePricePerHour: number;
    /** Seconds from a pod's creation to its start, on the live side (every observed start). */
    readonly podStartupSeconds: PercentileSummary;
    readonly nodeClaimsCreated: number;
    readonly nodeClaimsDeleted: number;
  };
  readonly flotilla: {
    readonly dollars: number;
    readonly averagePricePerHour: number;
    /** Seconds the oldest pending pod of each shadow run that proposed a launch had waited by then. */
    readonly decisionWaitSeconds: PercentileSummary;
    readonly launchesProposed: number;
    readonly commandsProposed: number;
  };
  /** Every difference, largest saving (in absolute dollars) first. */
  readonly differences: readonly ShadowDifference[];
  /** Live deletions no proposal named and no live launch replaced: listed, not priced (see the model above). */
  readonly unmatchedDeletions: readonly { readonly nodeClaim: string; readonly at: string }[];
}

/** The comparison of the shadow lines among `records` (log lines parsed from JSON, any order). */
export function compareShadow(records: readonly Record<string, unknown>[]): ShadowComparison {
  return compareLines(shadowLines(records));
}

/**
 * The comparison of `lines`. With `window`, only what falls in it is priced and counted (a UTC day
 * of the shadow-report Lambda): the lines before it are read for what they pair and say (a live
 * launch of the evening before is still cheaper today), every difference's dollars are its part
 * in the window, and the live cost is the observations' curve within it.
 */
export function compareLines(lines: ShadowLines, window?: ShadowWindow): ShadowComparison {
  const { observations, launches, commands } = lines;
  // NodeClaims created or deleted from here on pair; before it the shadow had decided nothing.
  const sinceMs = lines.firstMs;
  const fromMs = Math.max(window?.fromMs ?? sinceMs, sinceMs);
  const toMs = Math.max(fromMs, Math.min(window?.toMs ?? lines.lastMs, lines.lastMs));
  const hours = (toMs - fromMs) / 3_600_000;
  const interval = passInterval(observations.map((o) => o.atMs));
  const h = (ms: number) => Math.max(0, ms) / 3_600_000;
  /** Hours of [a, b] within the window. */
  const within = (a: number, b: number) => h(Math.min(b, toMs) - Math.max(a, fromMs));
  const inWindow = (ms: number) => ms >= fromMs && ms <= toMs;

  let liveDollars = (observations[0]?.pricePerHour ?? 0) * within(fromMs, observations[0]?.atMs ?? fromMs);
  observations.forEach((o, i) => {
    liveDollars += o.pricePerHour * within(o.atMs, observations[i + 1]?.atMs ?? toMs);
  });

  const created = new Map<string, { nodePool: string; atMs: number; price?: number; type?: string }>();
  const deleted = new Map<string, ObservedChange>();
  // Changes before the first line (an observation's window reaches back by the age a summary may
  // have) are not the comparison's: the shadow had decided nothing yet.
  for (const o of observations) {
    for (const c of o.created) {
      if (c.atMs >= sinceMs && !created.has(c.nodeClaim)) created.set(c.nodeClaim, c);
    }
    for (const d of o.deleted) {
      if (d.atMs >= sinceMs && !deleted.has(d.nodeClaim)) deleted.set(d.nodeClaim, d);
    }
  }
  const endOf = (name: string) => Math.min(deleted.get(name)?.atMs ?? toMs, toMs);
  const differences: ShadowDifference[] = [];
  /** A difference of `pricePerHour` from `fromMs` to `untilMs`, priced for its part in the window. */
  const add = (
    d: Omit<ShadowDifference, 'from' | 'until' | 'dollars'> & { fromMs: number; untilMs: number },
  ) => {
    const { fromMs: f, untilMs: u, ...rest } = d;
    if (u < fromMs || f > toMs) return;
    const from = Math.max(f, fromMs);
    const until = Math.max(from, Math.min(u, toMs));
    differences.push({
      ...rest,
      dollars: d.pricePerHour * within(from, until),
      from: iso(from),
      until: iso(until),
    });
  };

  // Launches: the shadow's own, and its commands' replacements (which only pair).
  type Offer = { nodePool: string; atMs: number; lastMs: number; price: number; type: string; own: boolean };
  const offers: Offer[] = [
    ...launches.map((l) => ({ ...l, own: true })),
    ...commands.flatMap((c) =>
      c.replacements.map((r) => ({
        nodePool: r.nodePool,
        atMs: c.atMs,
        lastMs: c.lastMs,
        price: r.price,
        type: r.type,
        own: false,
      })),
    ),
  ].sort((a, b) => a.atMs - b.atMs);
  const paired = new Set<Offer>();
  const liveLaunches = [...created.entries()].sort((a, b) => a[1].atMs - b[1].atMs);
  // Live deletions no proposal named, by NodePool, for a live launch to be their replacement.
  const proposedFor = new Set(commands.flatMap((c) => c.candidates));
  const replaced = new Set<string>();
  for (const [name, c] of liveLaunches) {
    if (c.price === undefined) continue;
    const offer = offers
      .filter(
        (o) => !paired.has(o) && o.nodePool === c.nodePool && Math.abs(o.atMs - c.atMs) <= PAIR_WINDOW_MS,
      )
      // The same instance type first (the same answer), then the nearest in time.
      .sort(
        (a, b) =>
          Number(b.type === c.type) - Number(a.type === c.type) ||
          Math.abs(a.atMs - c.atMs) - Math.abs(b.atMs - c.atMs),
      )[0];
    const until = endOf(name);
    // A live launch beside a live deletion in its NodePool that Flotilla proposed nothing for is
    // the live autoscaler's replacement (expiry, interruption, a disruption Flotilla would not
    // make): without it Flotilla would have kept the NodeClaim it replaced.
    const old =
      offer === undefined
        ? [...deleted].find(
            ([gone, d]) =>
              !proposedFor.has(gone) &&
              !replaced.has(gone) &&
              d.nodePool === c.nodePool &&
              d.price !== undefined &&
              Math.abs(d.atMs - c.atMs) <= PAIR_WINDOW_MS,
          )
        : undefined;
    if (offer === undefined && old !== undefined) {
      replaced.add(old[0]);
      const oldPrice = old[1].price ?? 0;
      const delta = c.price - oldPrice;
      if (delta !== 0) {
        add({
          kind: 'replacement not made',
          pricePerHour: delta,
          nodePool: c.nodePool,
          fromMs: c.atMs,
          untilMs: until,
          why: `live replaced NodeClaim ${old[0]} ($${fmt(oldPrice)}/h) with ${name} (${c.type ?? 'unknown type'}, $${fmt(c.price)}/h); Flotilla proposed no such command and would have kept ${old[0]}`,
        });
      }
      continue;
    }
    if (offer === undefined) {
      add({
        kind: 'launch not made',
        pricePerHour: c.price,
        nodePool: c.nodePool,
        fromMs: c.atMs,
        untilMs: until,
        why: `live launched NodeClaim ${name} (${c.type ?? 'unknown type'}, $${fmt(c.price)}/h); Flotilla would have placed its pods on capacity already there`,
      });
      continue;
    }
    paired.add(offer);
    const delta = c.price - offer.price;
    if (delta === 0) continue;
    add({
      kind: 'cheaper launch',
      pricePerHour: delta,
      nodePool: c.nodePool,
      fromMs: c.atMs,
      untilMs: until,
      why: `live launched NodeClaim ${name} as ${c.type ?? 'unknown type'} at $${fmt(c.price)}/h; Flotilla would have launched ${offer.type} at $${fmt(offer.price)}/h`,
    });
  }
  for (const offer of offers) {
    if (!offer.own || paired.has(offer)) continue;
    const until = Math.min(offer.lastMs + interval, toMs);
    add({
      kind: 'extra launch',
      pricePerHour: -offer.price,
      nodePool: offer.nodePool,
      fromMs: offer.atMs,
      untilMs: until,
      why: `Flotilla would have launched ${offer.type} at $${fmt(offer.price)}/h for pods the live autoscaler did not launch for`,
    });
  }

  // Disruption proposals: saved until the live autoscaler acted, the proposals stopped, or the end.
  const named = new Set<string>();
  for (const c of commands) {
    for (const name of c.candidates) named.add(name);
    const acted = c.candidates.every((n) => deleted.has(n))
      ? Math.max(...c.candidates.map((n) => deleted.get(n)?.atMs ?? 0))
      : Number.POSITIVE_INFINITY;
    const until = Math.min(acted, c.lastMs + interval, toMs);
    const saving = c.before - c.after;
    if (saving === 0 || until <= c.atMs) continue;
    const liveActed = acted <= Math.min(c.lastMs + interval, toMs);
    add({
      kind: 'disruption',
      pricePerHour: saving,
      nodePool: c.nodePool,
      fromMs: c.atMs,
      untilMs: until,
      why: `Flotilla would have ${c.action === 'delete' ? 'deleted' : 'replaced'} ${c.candidates.join(', ')} (${c.reason}, $${fmt(c.before)}/h → $${fmt(c.after)}/h)${liveActed ? '; the live autoscaler did later' : '; the live autoscaler did not'}`,
    });
  }
  differences.sort((a, b) => Math.abs(b.dollars) - Math.abs(a.dollars) || a.from.localeCompare(b.from));
  const saved = differences.reduce((sum, d) => sum + d.dollars, 0);
  const flotillaDollars = liveDollars - saved;
  return {
    from: iso(fromMs),
    to: iso(toMs),
    hours: round(hours, 4),
    live: {
      dollars: round(liveDollars, 4),
      averagePricePerHour: hours === 0 ? 0 : round(liveDollars / hours, 4),
      podStartupSeconds: percentiles(
        observations.filter((o) => inWindow(o.atMs)).flatMap((o) => o.podStartupSeconds),
      ),
      nodeClaimsCreated: [...created.values()].filter((c) => inWindow(c.atMs)).length,
      nodeClaimsDeleted: [...deleted.values()].filter((d) => inWindow(d.atMs)).length,
    },
    flotilla: {
      dollars: round(flotillaDollars, 4),
      averagePricePerHour: hours === 0 ? 0 : round(flotillaDollars / hours, 4),
      decisionWaitSeconds: percentiles(
        lines.decisionWaits.filter((w) => inWindow(w.atMs)).map((w) => w.seconds),
      ),
      // Proposed while the window was open.
      launchesProposed: launches.filter((l) => l.atMs <= toMs && l.lastMs >= fromMs).length,
      commandsProposed: commands.filter((c) => c.atMs <= toMs && c.lastMs >= fromMs).length,
    },
    differences: differences.map((d) => ({
      ...d,
      dollars: round(d.dollars, 4),
      pricePerHour: round(d.pricePerHour, 6),
    })),
    unmatchedDeletions: [...deleted]
      .filter(([name, d]) => inWindow(d.atMs) && !named.has(name) && !replaced.has(name))
      .map(([nodeClaim, d]) => ({ nodeClaim, at: iso(d.atMs) })),
  };
}

/** The usual gap between observations (their median), or a minute with fewer than two. */
function passInterval(times: readonly number[]): number {
  const gaps = times
    .slice(1)
    .map((t, i) => t - (times[i] ?? t))
    .filter((g) => g > 0)
    .sort((a, b) => a - b);
  return gaps.length === 0 ? 60_000 : (gaps[Math.floor(gaps.length / 2)] ?? 60_000);
}

function percentiles(values: readonly number[]): PercentileSummary {
  if (values.length === 0) return { count: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9) };
}

const iso = (ms: number) => new Date(ms).toISOString();
const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;
const fmt = (n: number) => String(round(n, 4));
