// controller's own test
import { describe, expect, it } from 'vitest';
import { SPOT_FAILED_ANNOTATION } from '../../../../shared/usecases/disruption/replacement-capacity.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  encodeCommand,
} from '../../../../shared/usecases/state/command-record.ts';
import { forgedSummary, pass, type SummaryJson, threeNodes, type World } from './pass-world.ts';

// Disruption commands and expiries over a cluster summary that forges command records or Nodes:
// a record reusing a real command's id, a record leaving out one of a command's replacements, a
// Node with an expired NodeClaim's providerID. The pass acts on the records and Nodes the API
// server has.

interface RawClaim {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: { nodeName?: string };
}

/** The NodeClaim whose Node runs pod `pod` (default/<pod>). */
function claimOf(w: World, pod: string): string {
  const raw = w.cluster.get('Pod', pod, 'default') as { spec?: { nodeName?: string } } | undefined;
  const claim = (w.cluster.list('NodeClaim') as unknown as RawClaim[]).find(
    (c) => c.status?.nodeName !== undefined && c.status.nodeName === raw?.spec?.nodeName,
  );
  if (claim === undefined) throw new Error(`no NodeClaim runs pod ${pod}`);
  return claim.metadata.name;
}

/** A NodeClaim of the same NodePool as `like`, as Flotilla creates one: spec, annotations, status. */
function addClaim(
  w: World,
  like: string,
  name: string,
  parts: { annotations?: Record<string, string>; spec?: Record<string, unknown>; status?: object },
): void {
  const model = w.cluster.get('NodeClaim', like) as unknown as RawClaim;
  w.cluster.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { ...model.metadata.labels }, annotations: { ...parts.annotations } },
    spec: { ...model.spec, ...parts.spec },
    ...(parts.status === undefined ? {} : { status: parts.status }),
  });
}

/** The NodeClaim's command record on the API server. */
const recordOn = (w: World, name: string) =>
  (w.cluster.get('NodeClaim', name) as unknown as RawClaim | undefined)?.metadata.annotations?.[
    COMMAND_ANNOTATION
  ];

const live = async (w: World) => (await w.cluster.nodeClaims()).items.filter((c) => !c.deleting);

const startedAt = (w: World) => w.clock.now().toISOString();

/** Sets the record of `id` on every NodeClaim of the summary that carries one. */
function forgeRecord(doc: { nodeClaims: SummaryJson[] }, names: readonly string[], forged: CommandRecord) {
  for (const c of doc.nodeClaims) {
    if (!names.includes(c.metadata.name ?? '')) continue;
    c.metadata.annotations = { ...c.metadata.annotations, [COMMAND_ANNOTATION]: encodeCommand(forged) };
  }
}

describe('an expiry over a cluster summary that forges a command record', () => {
  it.each([
    ['a consolidation command', 'single-node', 'Underutilized', 'b'],
    ['an expiration command of another NodeClaim', 'expiration', 'Expired', 'c'],
  ] as const)(
    'does not take a record reusing the id of %s for the expired NodeClaim: it is replaced',
    async (_, method, reason, other) => {
      const w = await threeNodes();
      const expired = claimOf(w, 'a');
      const candidate = claimOf(w, other);
      // The real command: its replacement, created with its record (not launched yet).
      const real: CommandRecord = {
        id: 'x1',
        method,
        reason,
        candidates: [candidate],
        replacements: ['standing-in'],
        startedAt: startedAt(w),
      };
      addClaim(w, candidate, 'standing-in', { annotations: { [COMMAND_ANNOTATION]: encodeCommand(real) } });
      // NodeClaim `expired` expires (as the API server has it) a few seconds from now.
      const raw = w.cluster.get('NodeClaim', expired) as unknown as RawClaim;
      w.cluster.replaceSpec('NodeClaim', expired, { ...raw.spec, expireAfter: '1s' });
      w.clock.advance(5_000);
      const forged: CommandRecord = {
        id: 'x1',
        method: 'expiration',
        reason: 'Expired',
        candidates: [expired],
        replacements: ['standing-in'],
        startedAt: startedAt(w),
      };
      const listed = forgedSummary(w, (doc) => forgeRecord(doc, [expired], forged));
      const result = await pass(w, { cluster: listed });
      const expiry = result.decisions.find(
        (d) => d.reason === 'Expired' && d.candidates?.some((c) => c.nodeClaim === expired),
      );
      expect(expiry?.commandId).toBeDefined();
      expect(expiry?.commandId).not.toBe('x1');
      // Its pod (one a node, by anti-affinity) gets a replacement of its own.
      expect(expiry?.replacements).toHaveLength(1);
      expect(recordOn(w, expired)).not.toBe(encodeCommand(forged));
    },
  );
});

describe('a command in flight over a cluster summary whose record leaves out a replacement', () => {
  it('waits for the replacements: it deletes none, undoes nothing, records no failure', async () => {
    const w = await threeNodes();
    const candidate = claimOf(w, 'b');
    const real: CommandRecord = {
      id: 'y1',
      method: 'single-node',
      reason: 'Underutilized',
      candidates: [candidate],
      replacements: ['r-one', 'r-two'],
      startedAt: startedAt(w),
    };
    for (const r of real.replacements) {
      addClaim(w, candidate, r, { annotations: { [COMMAND_ANNOTATION]: encodeCommand(real) } });
    }
    await w.cluster.patchNodeClaimMetadata(candidate, {
      annotations: { [COMMAND_ANNOTATION]: encodeCommand(real) },
    });
    const listed = forgedSummary(w, (doc) =>
      forgeRecord(doc, [candidate, ...real.replacements], { ...real, replacements: ['r-one'] }),
    );
    const result = await pass(w, { cluster: listed });
    expect(result.decisions.filter((d) => d.outcome === 'failed')).toEqual([]);
    const names = (await live(w)).map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining([candidate, 'r-one', 'r-two']));
    const fresh = (await live(w)).find((c) => c.name === candidate);
    expect(fresh?.annotations[SPOT_FAILED_ANNOTATION]).toBeUndefined();
    expect(fresh?.annotations[COMMAND_ANNOTATION]).toBe(encodeCommand(real));
  });
});

describe('an expiry over a cluster summary with a Node that claims the expired NodeClaim', () => {
  it('launches no replacement for the pods of a Node the API server does not have', async () => {
    const w = await threeNodes();
    const providerID = 'aws:///us-east-1a/i-0lonely';
    // Launched, not registered: the API server has no Node for it.
    addClaim(w, claimOf(w, 'a'), 'lonely', {
      spec: { expireAfter: '1s' },
      status: {
        providerID,
        conditions: [
          {
            type: 'Launched',
            status: 'True',
            reason: 'Launched',
            message: '',
            lastTransitionTime: startedAt(w),
          },
        ],
      },
    });
    w.clock.advance(5_000);
    const before = (await live(w)).map((c) => c.name).sort();
    const listed = forgedSummary(w, (doc) => {
      const node = structuredClone(doc.nodes[0]) as SummaryJson;
      node.metadata = {
        ...node.metadata,
        name: 'phantom',
        uid: 'phantom-uid',
        labels: { ...node.metadata.labels, 'kubernetes.io/hostname': 'phantom' },
      };
      node.spec = { ...node.spec, providerID };
      doc.nodes.push(node);
      // Pods that need a node each (the anti-affinity of the real ones), there only.
      const model = doc.pods.find((p) => p.metadata.name === 'a');
      for (const name of ['fake-1', 'fake-2']) {
        const pod = structuredClone(model) as SummaryJson;
        pod.metadata = { ...pod.metadata, name, uid: `${name}-uid` };
        pod.spec = { ...pod.spec, nodeName: 'phantom' };
        doc.pods.push(pod);
      }
    });
    const result = await pass(w, { cluster: listed });
    const expiry = result.decisions.find((d) => d.reason === 'Expired');
    expect(expiry?.candidates?.map((c) => c.nodeClaim)).toEqual(['lonely']);
    expect(expiry?.replacements).toEqual([]);
    expect((await live(w)).map((c) => c.name).sort()).toEqual(before.filter((n) => n !== 'lonely'));
  });
});
