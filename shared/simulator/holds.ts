import type { SimulationRecord } from './record.ts';

// What kept disruption from acting, read from the decisions the disruption controller made: the
// NodePools whose budget allowed nothing (each pass's `budgetBlocked`), the nodes a pass left out
// (`excluded`: node do-not-disrupt, nominated, unreadable pods) and the nodes consolidation looked
// at and kept (`unconsolidatable`: a do-not-disrupt pod, a PodDisruptionBudget, no cheaper
// replacement). Grouped, so a hold that lasts 480 passes is one row. Pure and deterministic.

/** One budget that allowed no disruption, over the run. */
export interface BudgetHold {
  /** `<nodePool>/<reason>`, as the pass logs it. */
  readonly key: string;
  readonly nodePool: string;
  /** The disruption reason the budget held: Empty, Drifted, Underutilized, … */
  readonly reason: string;
  /** Passes that reported it. */
  readonly passes: number;
  /**
   * How long it held: from each pass that reported it after one that did not, until the next pass
   * that did not (or the end of the run), summed.
   */
  readonly heldMs: number;
  readonly firstAtMs: number;
  /** The end of the last stretch. */
  readonly untilMs: number;
  /** Still holding when the run ended. */
  readonly atEnd: boolean;
}

/** Nodes kept for one kind of reason. */
export interface NodeHold {
  /** The kind of reason, in words (NODE_HOLD_KINDS), or the reason itself when of no known kind. */
  readonly kind: string;
  /** One reason as the decision told it, the first seen. */
  readonly example: string;
  /** NodeClaims held, sorted. */
  readonly nodeClaims: readonly string[];
  readonly nodePools: readonly string[];
  /** Node-time held: each node's stretches summed, then summed over the nodes. */
  readonly heldMs: number;
  /** The longest any one node was held without a break. */
  readonly longestMs: number;
}

/** The kinds of reasons nodes are held for, matched on the reason's text, in report order. */
export const NODE_HOLD_KINDS: readonly { readonly kind: string; readonly match: RegExp }[] = [
  { kind: 'node has karpenter.sh/do-not-disrupt', match: /^node has karpenter\.sh\/do-not-disrupt/ },
  { kind: 'a pod has karpenter.sh/do-not-disrupt', match: /^pod \S+ has karpenter\.sh\/do-not-disrupt/ },
  { kind: 'a PodDisruptionBudget allows no eviction', match: /^pdb \S+ prevents|PodDisruptionBudgets/ },
  { kind: 'no cheaper replacement', match: /cheaper|replacements cost|would save/ },
  { kind: 'nominated for pending pods', match: /^node is nominated/ },
  {
    kind: 'its pods would have no place or need new nodes',
    match: /would need \d+ new nodes|would have no place|the pods need \d+ new nodes/,
  },
  { kind: 'spot-to-spot consolidation is off', match: /spot-to-spot consolidation is off/ },
];

/** How node time held is counted, for the reports. */
export const NODE_HOLD_NOTE =
  "a node's hold runs from the pass that told its reason until another reason is told, a command takes the node, its instance terminates, or the run ends";

/** The kind of a reason a node is held for (NODE_HOLD_KINDS), or the reason itself. */
export function kindOf(why: string): string {
  return NODE_HOLD_KINDS.find((k) => k.match.test(why))?.kind ?? why;
}

const str = (value: unknown) => (typeof value === 'string' ? value : '');
const num = (value: unknown) => (typeof value === 'number' ? value : 0);

/** The end of the run: the last instant the record covers. */
export function runEndMs(record: SimulationRecord): number {
  return record.scenario.startMs + record.scenario.durationMs;
}

/** A stretch of time something held, opened at a pass and closed at a later one. */
interface Stretch {
  startMs: number;
  endMs: number;
}

/** The disruption passes that looked at the cluster (a pass that found the lease held did not). */
function passes(record: SimulationRecord) {
  return record.decisions.filter((d) => d['decision'] === 'disruptionPass' && d['reason'] !== 'lease held');
}

/**
 * Stretches per key: a key reported by a pass opens a stretch (unless one is open); a pass that
 * does not report an open key closes it there; stretches still open close at `endMs`.
 */
function stretches(
  reports: readonly { atMs: number; keys: readonly string[] }[],
  endMs: number,
): Map<string, { stretches: Stretch[]; passes: number }> {
  const out = new Map<string, { stretches: Stretch[]; passes: number }>();
  const open = new Map<string, Stretch>();
  for (const { atMs, keys } of reports) {
    const now = new Set(keys);
    for (const [key, stretch] of open) {
      if (now.has(key)) continue;
      stretch.endMs = atMs;
      open.delete(key);
    }
    for (const key of now) {
      const entry = out.get(key) ?? { stretches: [], passes: 0 };
      entry.passes += 1;
      if (!open.has(key)) {
        const stretch = { startMs: atMs, endMs };
        entry.stretches.push(stretch);
        open.set(key, stretch);
      }
      out.set(key, entry);
    }
  }
  return out;
}

const total = (list: readonly Stretch[]) =>
  list.reduce((sum, s) => sum + Math.max(0, s.endMs - s.startMs), 0);
const longest = (list: readonly Stretch[]) => list.reduce((max, s) => Math.max(max, s.endMs - s.startMs), 0);

/** The budgets that held disruption, longest first. */
export function budgetHolds(record: SimulationRecord): BudgetHold[] {
  const endMs = runEndMs(record);
  const reports = passes(record).map((d) => ({
    atMs: num(d['atMs']),
    keys: Array.isArray(d['budgetBlocked']) ? (d['budgetBlocked'] as unknown[]).map(str) : [],
  }));
  return [...stretches(reports, endMs)]
    .map(([key, { stretches: list, passes: count }]) => {
      const slash = key.lastIndexOf('/');
      const last = list[list.length - 1];
      return {
        key,
        nodePool: key.slice(0, slash),
        reason: key.slice(slash + 1),
        passes: count,
        heldMs: total(list),
        firstAtMs: list[0]?.startMs ?? endMs,
        untilMs: last?.endMs ?? endMs,
        atEnd: last?.endMs === endMs,
      };
    })
    .sort((a, b) => b.heldMs - a.heldMs || (a.key < b.key ? -1 : 1));
}

/** A node held for a reason, with the stretches it was held. */
interface NodeStretches {
  readonly nodeClaim: string;
  readonly nodePool: string;
  readonly why: string;
  readonly stretches: Stretch[];
}

/** Nodes left out by passes (`excluded`, the first ten a pass names). */
function excludedStretches(record: SimulationRecord, pools: ReadonlyMap<string, string>): NodeStretches[] {
  const reports = passes(record).map((d) => ({
    atMs: num(d['atMs']),
    keys: Array.isArray(d['excluded'])
      ? (d['excluded'] as unknown[]).map((e) => {
          const { nodeClaim, why } = (e ?? {}) as { nodeClaim?: unknown; why?: unknown };
          return JSON.stringify([str(nodeClaim), str(why)]);
        })
      : [],
  }));
  return [...stretches(reports, runEndMs(record))].map(([key, { stretches: list }]) => {
    const [nodeClaim = '', why = ''] = JSON.parse(key) as string[];
    return { nodeClaim, nodePool: pools.get(nodeClaim) ?? '', why, stretches: list };
  });
}

/**
 * Nodes consolidation kept (`unconsolidatable`, logged when the reason changes): each reason holds
 * from its decision until the node's next reason, a command takes the node, its instance is
 * terminated, or the run ends.
 */
function unconsolidatableStretches(record: SimulationRecord): NodeStretches[] {
  const endMs = runEndMs(record);
  const taken = new Map<string, number>();
  const take = (nodeClaim: string, atMs: number) => {
    if (!taken.has(nodeClaim) || (taken.get(nodeClaim) ?? 0) > atMs) taken.set(nodeClaim, atMs);
  };
  for (const d of record.decisions) {
    if (d['decision'] !== 'disrupt' || d['outcome'] !== 'started') continue;
    for (const c of Array.isArray(d['candidates']) ? (d['candidates'] as unknown[]) : []) {
      take(str((c as { nodeClaim?: unknown } | null)?.nodeClaim), num(d['atMs']));
    }
  }
  for (const t of record.terminations) take(t.nodeClaim, t.atMs);
  const out: NodeStretches[] = [];
  const open = new Map<string, NodeStretches>();
  for (const d of record.decisions) {
    if (d['decision'] !== 'unconsolidatable') continue;
    const nodeClaim = str(d['nodeClaim']);
    const atMs = num(d['atMs']);
    const previous = open.get(nodeClaim);
    if (previous !== undefined) {
      const stretch = previous.stretches[0];
      if (stretch !== undefined) stretch.endMs = Math.min(stretch.endMs, atMs);
    }
    const goneMs = taken.get(nodeClaim);
    const held: NodeStretches = {
      nodeClaim,
      nodePool: str(d['nodePool']),
      why: str(d['reason']),
      stretches: [{ startMs: atMs, endMs: goneMs !== undefined && goneMs >= atMs ? goneMs : endMs }],
    };
    out.push(held);
    open.set(nodeClaim, held);
  }
  return out;
}

/** The nodes held from disruption, grouped by kind of reason: most node-time first. */
export function nodeHolds(record: SimulationRecord): NodeHold[] {
  const pools = new Map(record.launches.map((l) => [l.nodeClaim, l.nodePool]));
  const groups = new Map<
    string,
    { example: string; nodeClaims: Set<string>; nodePools: Set<string>; stretches: Map<string, Stretch[]> }
  >();
  for (const held of [...excludedStretches(record, pools), ...unconsolidatableStretches(record)]) {
    const kind = kindOf(held.why);
    const group = groups.get(kind) ?? {
      example: held.why,
      nodeClaims: new Set<string>(),
      nodePools: new Set<string>(),
      stretches: new Map<string, Stretch[]>(),
    };
    group.nodeClaims.add(held.nodeClaim);
    if (held.nodePool !== '') group.nodePools.add(held.nodePool);
    group.stretches.set(held.nodeClaim, [...(group.stretches.get(held.nodeClaim) ?? []), ...held.stretches]);
    groups.set(kind, group);
  }
  return [...groups]
    .map(([kind, g]) => {
      const perNode = [...g.stretches.values()];
      return {
        kind,
        example: g.example,
        nodeClaims: [...g.nodeClaims].sort(),
        nodePools: [...g.nodePools].sort(),
        heldMs: perNode.reduce((sum, list) => sum + total(list), 0),
        longestMs: perNode.reduce((max, list) => Math.max(max, longest(list)), 0),
      };
    })
    .sort((a, b) => b.heldMs - a.heldMs || (a.kind < b.kind ? -1 : 1));
}
