// The lines of a shadow stack that its comparison (compare.ts) reads, taken from parsed log lines:
// its observations (the live cluster's cost, pod startups, NodeClaims created and deleted), the
// launches it proposed and the disruption commands it proposed. Lines without `shadow: true` are
// not a shadow stack's and are left out (a file may hold both stacks' logs); a shadow line that
// lacks what its kind must carry is counted as unreadable, never guessed at.

export interface ObservedChange {
  readonly nodeClaim: string;
  readonly nodePool: string;
  readonly atMs: number;
  readonly price?: number;
  readonly type?: string;
}

export interface Observation {
  readonly atMs: number;
  /** The live NodeClaims' prices summed over the NodePools, USD per hour. */
  readonly pricePerHour: number;
  readonly podStartupSeconds: readonly number[];
  readonly created: readonly ObservedChange[];
  readonly deleted: readonly ObservedChange[];
}

/** One launch the shadow proposed, however many runs proposed it (same NodePool and pods). */
export interface ProposedLaunch {
  readonly nodePool: string;
  readonly atMs: number;
  readonly lastMs: number;
  readonly price: number;
  readonly type: string;
}

/** One disruption command the shadow proposed, however many passes proposed it (same candidates). */
export interface ProposedCommand {
  readonly nodePool: string;
  readonly reason: string;
  readonly action: 'delete' | 'replace';
  readonly atMs: number;
  readonly lastMs: number;
  readonly candidates: readonly string[];
  readonly before: number;
  readonly after: number;
  readonly replacements: readonly {
    readonly nodePool: string;
    readonly type: string;
    readonly price: number;
  }[];
}

export interface ShadowLines {
  readonly observations: readonly Observation[];
  readonly launches: readonly ProposedLaunch[];
  readonly commands: readonly ProposedCommand[];
  /** Seconds the oldest pending pod had waited, for each shadow run that proposed a launch, and when. */
  readonly decisionWaits: readonly { readonly atMs: number; readonly seconds: number }[];
  /** The times of the first and the last shadow line (epoch ms). */
  readonly firstMs: number;
  readonly lastMs: number;
  /** Shadow lines that lacked what their kind carries. */
  readonly unreadable: number;
}

/** The decision kinds whose lines the comparison reads (a log store may leave the others out). */
export const SHADOW_DECISION_KINDS: readonly string[] = ['observe', 'launch', 'disrupt', 'plan'];

type Row = Record<string, unknown>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const rows = (v: unknown): Row[] =>
  Array.isArray(v) ? v.filter((x): x is Row => typeof x === 'object' && x !== null) : [];

/** The shadow lines of `records`, oldest first, proposals counted once. */
export function shadowLines(records: readonly Row[]): ShadowLines {
  const timed = records
    .filter((r) => r['shadow'] === true)
    .flatMap((r) => {
      const ms = Date.parse(String(r['time'] ?? ''));
      return Number.isNaN(ms) ? [] : [{ r, ms }];
    })
    .sort((a, b) => a.ms - b.ms);
  let unreadable = records.filter((r) => r['shadow'] === true).length - timed.length;
  const observations: Observation[] = [];
  const launches = new Map<string, ProposedLaunch>();
  const commands = new Map<string, ProposedCommand>();
  const decisionWaits: { atMs: number; seconds: number }[] = [];
  for (const { r, ms } of timed) {
    const kind = r['decision'];
    if (kind === 'observe') {
      const observation = observationOf(r, ms);
      if (observation === undefined) unreadable += 1;
      else observations.push(observation);
    } else if (kind === 'launch' && r['outcome'] === 'launched' && r['reason'] !== 'resumed') {
      const nodePool = str(r['nodePool']);
      const price = num(r['pricePerHour']);
      const type = str(r['instanceType']);
      if (nodePool === undefined || price === undefined || type === undefined) {
        unreadable += 1;
        continue;
      }
      const pods = Array.isArray(r['pods']) ? r['pods'].map(String).sort() : [];
      const key = `${nodePool} ${num(r['podCount']) ?? pods.length} ${pods.join(',')}`;
      const seen = launches.get(key);
      launches.set(
        key,
        seen === undefined ? { nodePool, atMs: ms, lastMs: ms, price, type } : { ...seen, lastMs: ms },
      );
    } else if (kind === 'disrupt' && (r['outcome'] === 'deleted' || r['outcome'] === 'started')) {
      const command = commandOf(r, ms);
      if (command === undefined) {
        unreadable += 1;
        continue;
      }
      const key = `${command.reason} ${command.candidates.join(',')}`;
      const seen = commands.get(key);
      commands.set(key, seen === undefined ? command : { ...seen, lastMs: ms });
    } else if (kind === 'plan' && (num(r['nodeClaims']) ?? 0) > 0) {
      const waited = num(r['oldestPendingSeconds']);
      if (waited !== undefined) decisionWaits.push({ atMs: ms, seconds: waited });
    }
  }
  return {
    observations,
    launches: [...launches.values()],
    commands: [...commands.values()],
    decisionWaits,
    firstMs: timed[0]?.ms ?? 0,
    lastMs: timed.at(-1)?.ms ?? 0,
    unreadable,
  };
}

function observationOf(r: Row, ms: number): Observation | undefined {
  const pools = r['nodePools'];
  if (typeof pools !== 'object' || pools === null) return undefined;
  let pricePerHour = 0;
  for (const pool of Object.values(pools as Record<string, unknown>)) {
    const price = num((pool as Row | null)?.['pricePerHour']);
    if (price === undefined) return undefined;
    pricePerHour += price;
  }
  const changes = (v: unknown): ObservedChange[] =>
    rows((v as Row | undefined)?.['nodeClaims']).flatMap((c) => {
      const nodeClaim = str(c['nodeClaim']);
      const nodePool = str(c['nodePool']);
      const atMs = Date.parse(String(c['at'] ?? ''));
      if (nodeClaim === undefined || nodePool === undefined || Number.isNaN(atMs)) return [];
      const price = num(c['pricePerHour']);
      const type = str(c['instanceType']);
      return [
        {
          nodeClaim,
          nodePool,
          atMs,
          ...(price === undefined ? {} : { price }),
          ...(type === undefined ? {} : { type }),
        },
      ];
    });
  const startups = Array.isArray(r['podStartupSeconds'])
    ? r['podStartupSeconds'].flatMap((s) => num(s) ?? [])
    : [];
  return {
    atMs: ms,
    pricePerHour,
    podStartupSeconds: startups,
    created: changes(r['nodeClaimsCreated']),
    deleted: changes(r['nodeClaimsDeleted']),
  };
}

function commandOf(r: Row, ms: number): ProposedCommand | undefined {
  const candidates = rows(r['candidates']);
  const names = candidates.flatMap((c) => str(c['nodeClaim']) ?? []).sort();
  const nodePool = str(candidates[0]?.['nodePool']);
  const reason = str(r['reason']);
  const action = r['action'];
  const before = num(r['pricePerHourBefore']);
  const after = num(r['pricePerHourAfter']);
  if (
    names.length === 0 ||
    names.length !== candidates.length ||
    nodePool === undefined ||
    reason === undefined ||
    (action !== 'delete' && action !== 'replace') ||
    before === undefined ||
    after === undefined
  ) {
    return undefined;
  }
  const replacements = rows(r['replacements']).flatMap((p) => {
    const pool = str(p['nodePool']);
    const type = Array.isArray(p['instanceTypes']) ? str(p['instanceTypes'][0]) : undefined;
    const price = num(p['pricePerHour']);
    return pool === undefined || type === undefined || price === undefined
      ? []
      : [{ nodePool: pool, type, price }];
  });
  return { nodePool, reason, action, atMs: ms, lastMs: ms, candidates: names, before, after, replacements };
}

/** JSON log lines, and how many lines held no JSON object. */
export interface LogLines {
  readonly records: Record<string, unknown>[];
  /** Lines that held no JSON object (left out). */
  readonly skipped: number;
}

/**
 * The JSON objects of a text of log lines, each parsed from its first `{` (CloudWatch exports and
 * `aws logs tail` put a prefix before the JSON); a line that holds none is counted in `skipped`.
 */
export function parseLogLines(text: string): LogLines {
  const records: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const start = line.indexOf('{');
    try {
      const parsed: unknown = start === -1 ? undefined : JSON.parse(line.slice(start));
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        records.push(parsed as Record<string, unknown>);
        continue;
      }
    } catch {
      // counted below
    }
    skipped += 1;
  }
  return { records, skipped };
}
