import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SummaryDocument } from '../../../shared/apis/index.ts';
import { type Effects, runPasses } from './hostile-summary-run.ts';
import {
  forgeryArbitrary,
  honestDocument,
  summaryClusterOver,
  type Tamper,
} from './hostile-summary-tamper.ts';
import { buildWorld } from './hostile-summary-world.ts';

// The cluster summary is untrusted input: what it says may choose what the Lambdas look at, never
// what they do. A property over hostile but well-formed summaries: one thing in the document an
// honest shim would publish made false (any leaf of any Node, NodeClaim, pod row or pod template,
// a field added, an object dropped, doubled or made up), and the garbage collector (with node
// repair), the provisioner (with its controllers pass), a disruption pass and the termination
// sweep run over it. Whatever they delete, terminate, taint, evict, mark for disruption or start a
// command on, the same passes reading the API server also do, and every pending pod those launch
// for, they launch for too. The summary may still choose what they look at: capacity it hides may
// be launched for again (a pod placed on a new node rather than an existing one, a node replaced
// rather than packed into one it hid), which costs money until consolidation, never a pod its
// place or a node its life. The API server's run is the same for every summary (it never reads
// one), so it runs once.

/** What reading the API server does to the world: the reference every hostile run is held to. */
let truth: Effects;
/** The document an honest shim publishes of the world when the passes start. */
let honest: SummaryDocument;

beforeAll(async () => {
  const direct = await buildWorld();
  truth = await runPasses(direct, () => direct.cluster);
  honest = honestDocument(await buildWorld());
}, 60_000);

/** Hostile summaries tried per run of the file. */
const RUNS = 150;

const DESTRUCTIVE = [
  'deletedNodeClaims',
  'deletedNodes',
  'terminated',
  'taints',
  'evicted',
  'conditions',
  'disrupted',
] as const;

/** What `effects` did or missed that reading the API server would not have: empty when nothing. */
function beyondTruth(effects: Effects): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of DESTRUCTIVE) {
    const extra = effects[key].filter((e) => !truth[key].includes(e));
    if (extra.length > 0) out[key] = extra;
  }
  const missed = truth.launchedFor.filter((p) => !effects.launchedFor.includes(p));
  if (missed.length > 0) out['missedLaunchFor'] = missed;
  return out;
}

describe('the use cases over a hostile cluster summary', () => {
  it('do over an honest summary what they do reading the API server, which is something of each kind', async () => {
    expect(truth.deletedNodeClaims).toEqual(['lost', 'underused']);
    expect(truth.terminated).toHaveLength(1);
    expect(truth.evicted).toEqual(['default/small-1']);
    expect(truth.taints).toHaveLength(1);
    expect(truth.launchedFor).toEqual(['big-1']);
    const world = await buildWorld();
    const clusters: ReturnType<typeof summaryClusterOver>[] = [];
    const effects = await runPasses(world, () => {
      const cluster = summaryClusterOver(world, []);
      clusters.push(cluster);
      return cluster;
    });
    expect(effects).toEqual(truth);
    // Every Lambda read its lists from the summary.
    expect(clusters.map((c) => c.summaryUse().fromSummary > 0)).toEqual([true, true, true, true]);
  });

  it('delete, terminate, taint, evict, mark and miss launches over a hostile summary only as they would reading the API server', async () => {
    let read = 0;
    /** Runs whose summary was read with nothing in it rejected: the false value passed for true. */
    let readWhole = 0;
    await fc.assert(
      fc.asyncProperty(forgeryArbitrary(honest), async (forgery: Tamper[]) => {
        const world = await buildWorld();
        const start = world.lines.length;
        const clusters: ReturnType<typeof summaryClusterOver>[] = [];
        const effects = await runPasses(world, () => {
          const cluster = summaryClusterOver(world, forgery);
          clusters.push(cluster);
          return cluster;
        });
        const fromSummary = clusters.reduce((n, c) => n + c.summaryUse().fromSummary, 0);
        if (fromSummary > 0) read += 1;
        const rejected = world.lines
          .slice(start)
          .some(
            (l) => l['message'] === 'cluster objects skipped' || l['message'] === 'cluster summary not used',
          );
        if (fromSummary > 0 && !rejected) readWhole += 1;
        expect(beyondTruth(effects), JSON.stringify({ forgery, effects })).toEqual({});
      }),
      { seed: 36, numRuns: RUNS, endOnFailure: true },
    );
    expect(read).toBe(RUNS);
    // Most false values pass for true (the reader rejects the rest, and the object goes unread).
    expect(readWhole).toBeGreaterThan(RUNS * 0.8);
    // A limit for a hang, not a measure of speed: the runs share two cores with the other workers.
  }, 240_000);
});
