import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  parseSummaryDocument,
  parseSummaryJson,
  type SummaryParts,
  summaryFromParts,
} from '../../../shared/apis/cluster-summary.ts';
import {
  encodeSummaryDocument,
  makeSummaryConversions,
  readSummaryDocument,
  SummaryBuilder,
} from '../../../shared/apis/index.ts';
import { applySummaryChanges, parseSummaryChanges } from '../../../shared/apis/summary-apply.ts';
import { summaryChanges as changesOrUndefined } from '../../../shared/apis/summary-changes.ts';
import { ValidationError } from '../../../shared/core/index.ts';
import type { ClusterSummary } from '../../../shared/ports/summary.ts';
import { SummaryTooLargeError } from '../../../shared/ports/summary.ts';
import { AT, CURRENT, churn } from '../../fixtures/summary-churn.ts';

// The changes since a base document: a reader that applies them to the base it holds reads what it
// would read from the whole document published at the same moment, after any churn, relists
// among it, and whichever earlier changes it applied to the same base.

const LATER = '2026-11-26T12:00:30Z';
const ABOUT = { cluster: 'prod', base: '"etag-1"', publishedAt: LATER, current: { ...CURRENT, pods: LATER } };

/** Applies `events` to `builder`, each object given its slot's uid and a new resourceVersion. */
type ChurnEvents = ReturnType<typeof churn> extends fc.Arbitrary<infer T> ? T : never;
let version = 0;
function apply(builder: SummaryBuilder, events: ChurnEvents) {
  for (const [{ kind, raw }, type, slot] of events) {
    version += 1;
    builder.apply(kind, type, {
      ...raw,
      metadata: { ...raw.metadata, uid: `uid-${kind}-${slot}`, resourceVersion: String(version) },
    });
  }
}

/** The changes from `base` as a reader gets them: through their JSON. */
function changesFrom(base: ReturnType<SummaryBuilder['snapshot']>, builder: SummaryBuilder) {
  const json = JSON.stringify(summaryChanges(base, builder.snapshot(), ABOUT));
  return parseSummaryChanges(parseSummaryJson(json, '(changes)'));
}

/** The changes, which these tests' pods (all with uids) always allow. */
function summaryChanges(...args: Parameters<typeof changesOrUndefined>) {
  const changes = changesOrUndefined(...args);
  if (changes === undefined) throw new Error('changes refused for pods with uids');
  return changes;
}

const byUid = <T extends { uid: string }>(xs: readonly T[]) =>
  [...xs].sort((a, b) => a.uid.localeCompare(b.uid));

/** What a reader reads of `summary`, in an order that does not depend on the document's. */
function readOf(summary: ClusterSummary) {
  return {
    counts: summary.counts,
    nodeClaims: byUid(summary.nodeClaims().items),
    unreadableClaims: summary
      .nodeClaims()
      .unreadable.map((u) => u.name)
      .sort(),
    nodeInfos: byUid(summary.nodeInfos().items),
    nodes: byUid(summary.nodes().items).map((n) => ({ ...n, pods: byUid(n.pods) })),
    nodeProblems: summary
      .nodes()
      .problems.map((p) => p.message)
      .sort(),
    bound: byUid(summary.boundPods().items.map((b) => ({ ...b.pod, on: b.nodeName }))),
  };
}

describe('the summary changes since a base document', () => {
  it('apply to the base to give what the whole document of the same moment gives, with and without a warm reader', () => {
    fc.assert(
      fc.property(
        churn(25, 4),
        fc.array(fc.tuple(churn(12, 5), fc.boolean()), { minLength: 1, maxLength: 4 }),
        (before, rounds) => {
          const builder = new SummaryBuilder('prod');
          apply(builder, before);
          const base = parseSummaryDocument(encodeSummaryDocument(builder.document(AT, CURRENT)));
          const snapshot = builder.snapshot();
          const conversions = makeSummaryConversions();
          for (const [events, relist] of rounds) {
            apply(builder, events);
            // A relist of every kind makes new values of unchanged objects: they are no changes.
            if (relist) {
              const document = builder.document(AT, CURRENT);
              builder.replace('nodes', document.head.nodes);
              builder.replace('nodeClaims', document.head.nodeClaims);
            }
            const changes = changesFrom(snapshot, builder);
            const applied = summaryFromParts(applySummaryChanges(base, changes), conversions);
            const whole = readSummaryDocument(encodeSummaryDocument(builder.document(LATER, ABOUT.current)));
            expect(readOf(applied)).toEqual(readOf(whole));
            expect(readOf(summaryFromParts(applySummaryChanges(base, changes)))).toEqual(readOf(whole));
            expect(applied.publishedAtMs).toBe(Date.parse(LATER));
            expect(applied.currentAtMs).toBe(Date.parse(AT));
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('hold only what changed: nothing at all when nothing did, one object when one did', () => {
    const builder = new SummaryBuilder('prod');
    const node = (name: string, label: string) => ({
      metadata: { name, uid: `uid-${name}`, resourceVersion: '1', labels: { l: label } },
      spec: { providerID: `aws:///us-west-2a/i-${name}` },
      status: { allocatable: { cpu: '4', memory: '15Gi', pods: '58' } },
    });
    const pod = (uid: string, phase: string) => ({
      metadata: { name: uid, namespace: 'apps', uid, labels: { app: 'web' } },
      spec: { nodeName: 'a', containers: [{ name: 'app', image: 'app' }] },
      status: { phase },
    });
    builder.apply('nodes', 'ADDED', node('a', 'x'));
    builder.apply('nodes', 'ADDED', node('b', 'x'));
    builder.apply('pods', 'ADDED', pod('p1', 'Running'));
    builder.apply('pods', 'ADDED', pod('p2', 'Running'));
    const snapshot = builder.snapshot();
    const none = summaryChanges(snapshot, builder.snapshot(), ABOUT);
    expect(none.nodes).toEqual({ upserts: [], removals: [] });
    expect(none.nodeClaims).toEqual({ upserts: [], removals: [] });
    expect(none.pods).toEqual({ podTemplates: [], upserts: [], removals: [] });
    expect(none.counts).toEqual({ pods: 2, nodes: 2, nodeClaims: 0 });
    expect(none.base).toBe(ABOUT.base);
    // A relist of the same objects changes nothing either.
    builder.replace('pods', [pod('p1', 'Running'), pod('p2', 'Running')]);
    expect(summaryChanges(snapshot, builder.snapshot(), ABOUT).pods.upserts).toEqual([]);
    builder.apply('nodes', 'MODIFIED', node('b', 'y'));
    builder.apply('pods', 'MODIFIED', pod('p2', 'Succeeded'));
    builder.apply('pods', 'ADDED', pod('p3', 'Pending'));
    const some = summaryChanges(snapshot, builder.snapshot(), ABOUT);
    expect(some.nodes.upserts).toEqual([builder.document(AT, CURRENT).head.nodes[1]]);
    expect(some.nodes.removals).toEqual([]);
    expect(some.pods.removals).toEqual(['p2']);
    expect(some.pods.upserts.map((row) => row[2])).toEqual(['p3']);
    expect(some.pods.podTemplates).toHaveLength(1);
    expect(some.counts).toEqual({ pods: 2, nodes: 2, nodeClaims: 0 });
  });

  it('are not told when a pod without a uid changed (a reader finds pods by uid): a new base is due', () => {
    const builder = new SummaryBuilder('prod');
    const pod = (phase: string) => ({
      metadata: { name: 'no-uid', namespace: 'apps' },
      spec: { nodeName: 'a', containers: [{ name: 'app', image: 'app' }] },
      status: { phase },
    });
    builder.apply('pods', 'ADDED', pod('Pending'));
    const snapshot = builder.snapshot();
    expect(changesOrUndefined(snapshot, builder.snapshot(), ABOUT)).toBeDefined();
    builder.apply('pods', 'MODIFIED', pod('Running'));
    expect(changesOrUndefined(snapshot, builder.snapshot(), ABOUT)).toBeUndefined();
    builder.apply('pods', 'DELETED', pod('Running'));
    expect(changesOrUndefined(snapshot, builder.snapshot(), ABOUT)).toBeUndefined();
  });

  it('are refused when they are of another version, name no base, or count what they do not hold', () => {
    const builder = new SummaryBuilder('prod');
    builder.apply('nodes', 'ADDED', {
      metadata: { name: 'a', uid: 'uid-a' },
      spec: {},
      status: { allocatable: { cpu: '1', memory: '1Gi', pods: '10' } },
    });
    const base: SummaryParts = parseSummaryDocument(encodeSummaryDocument(builder.document(AT, CURRENT)));
    const honest = summaryChanges(builder.snapshot(), builder.snapshot(), ABOUT);
    const parse = (value: unknown) => parseSummaryChanges(value);
    expect(() => parse({ ...honest, version: 'flotilla.cluster-summary-changes/v0' })).toThrow(
      /is not flotilla/,
    );
    expect(() => parse({ ...honest, base: '' })).toThrow(ValidationError);
    expect(() => parse({ ...honest, counts: { ...honest.counts, pods: -1 } })).toThrow(/counts.pods/);
    expect(() => parse({ ...honest, publishedAt: 'soon' })).toThrow(/publishedAt/);
    expect(() => parse([])).toThrow(/not a JSON object/);
    // Counts that the merge does not reach: the Nodes at once, the pods when they are read.
    expect(() =>
      applySummaryChanges(base, parse({ ...honest, counts: { ...honest.counts, nodes: 2 } })),
    ).toThrow(/1 nodes where the changes count 2/);
    const pods = applySummaryChanges(base, parse({ ...honest, counts: { ...honest.counts, pods: 3 } }));
    expect(() => pods.pods()).toThrow(/0 pods where the changes count 3/);
    expect(() =>
      applySummaryChanges(base, parse({ ...honest, pods: { ...honest.pods, upserts: [[0, 'p']] } })).pods(),
    ).toThrow(/a row without a uid/);
    expect(() =>
      applySummaryChanges(base, parse({ ...honest, nodes: { upserts: [], removals: [1] } })),
    ).toThrow(/not a list of keys/);
    expect(() => applySummaryChanges(base, parse({ ...honest, nodeClaims: 'all' }))).toThrow(
      /not a JSON object/,
    );
    // More than the stack's limits: refused before anything is merged.
    expect(() =>
      applySummaryChanges(base, parse({ ...honest, counts: { ...honest.counts, pods: 10 } }), {
        nodes: 10,
        nodeClaims: 10,
        pods: 5,
      }),
    ).toThrow(SummaryTooLargeError);
  });
});
