import { describe, expect, it } from 'vitest';
import type { DisruptDecision } from '../../../../shared/usecases/decisions/disruption.ts';
import type { CandidateSet } from '../../../../shared/usecases/disruption/candidates.ts';
import { startedInFlight, withoutStarted } from '../../../../shared/usecases/disruption/pass-end.ts';

// What a pass that ends on its last read reports: that read with the commands it started since
// applied (their decisions), as the read after them would have shown them.

const candidate = (name: string) =>
  ({ nodeClaim: { name } }) as unknown as CandidateSet['candidates'][number];
const decision = (commandId: string, outcome: DisruptDecision['outcome'], names: readonly string[]) =>
  ({
    commandId,
    outcome,
    candidates: names.map((n) => ({ nodeClaim: n, node: `node-${n}`, nodePool: 'default' })),
  }) as unknown as DisruptDecision;

describe('the end of a pass that does not read again after its last command', () => {
  const set = {
    candidates: [candidate('a'), candidate('b'), candidate('c')],
    staticCandidates: [candidate('s'), candidate('b')],
    excluded: [{ ...candidate('c'), kind: 'nominated', why: 'nominated' }],
    counts: new Map([['default', { nodes: 10, disrupting: 1 }]]),
    poolTotals: new Map(),
    spotFailedAtMs: new Map(),
  } as unknown as CandidateSet;

  it("leaves the started command's candidates out and counts them against their NodePool's budget", () => {
    const left = withoutStarted(set, [decision('x', 'started', ['b', 'c'])]);
    expect(left.candidates.map((c) => c.nodeClaim.name)).toEqual(['a']);
    expect(left.staticCandidates?.map((c) => c.nodeClaim.name)).toEqual(['s']);
    expect(left.excluded).toEqual([]);
    expect(left.counts.get('default')).toEqual({ nodes: 10, disrupting: 3 });
    // The read itself is not changed.
    expect(set.counts.get('default')).toEqual({ nodes: 10, disrupting: 1 });
  });

  it('takes the candidates the command went on with, not those its validation dropped', () => {
    // Proposed with b and c, validation dropped c: only b is gone.
    const left = withoutStarted(set, [decision('x', 'deleted', ['b'])]);
    expect(left.candidates.map((c) => c.nodeClaim.name)).toEqual(['a', 'c']);
    expect(left.counts.get('default')).toEqual({ nodes: 10, disrupting: 2 });
    // An abandoned command took nothing.
    expect(withoutStarted(set, [decision('y', 'abandoned', ['a'])])).toBe(set);
  });

  it('counts a command in flight once it is started, not once deleted or abandoned', () => {
    expect(startedInFlight([decision('x', 'started', ['a'])])).toBe(1);
    expect(startedInFlight([decision('x', 'deleted', ['a'])])).toBe(0);
    expect(
      startedInFlight([
        decision('x', 'abandoned', []),
        decision('y', 'started', []),
        decision('y', 'started', []),
      ]),
    ).toBe(1);
  });
});
