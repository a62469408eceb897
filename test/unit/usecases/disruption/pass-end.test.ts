import { describe, expect, it } from 'vitest';
import type { DisruptDecision } from '../../../../shared/usecases/decisions/disruption.ts';
import type { CandidateSet } from '../../../../shared/usecases/disruption/candidates.ts';
import type { DisruptionCommand } from '../../../../shared/usecases/disruption/method.ts';
import { startedInFlight, withoutStarted } from '../../../../shared/usecases/disruption/pass-end.ts';

// What a pass that ends on its last read reports: its candidates less those of the command it
// started since, and that command in flight when it waits for replacements.

const candidate = (name: string) =>
  ({ nodeClaim: { name } }) as unknown as CandidateSet['candidates'][number];

describe('the end of a pass that does not read again after its last command', () => {
  it("leaves the command's candidates out of every list of the set, and keeps the rest", () => {
    const set = {
      candidates: [candidate('a'), candidate('b'), candidate('c')],
      staticCandidates: [candidate('s'), candidate('b')],
      excluded: [{ ...candidate('c'), kind: 'nominated', why: 'nominated' }],
      counts: new Map(),
      poolTotals: new Map(),
      spotFailedAtMs: new Map(),
    } as unknown as CandidateSet;
    const command = { candidates: [candidate('b'), candidate('c')] } as unknown as DisruptionCommand;
    const left = withoutStarted(set, [command]);
    expect(left.candidates.map((c) => c.nodeClaim.name)).toEqual(['a']);
    expect(left.staticCandidates?.map((c) => c.nodeClaim.name)).toEqual(['s']);
    expect(left.excluded).toEqual([]);
    expect(left.counts).toBe(set.counts);
    expect(withoutStarted(set, [])).toBe(set);
  });

  it('counts a command in flight once it is started, not once deleted or abandoned', () => {
    const d = (commandId: string, outcome: DisruptDecision['outcome']) =>
      ({ commandId, outcome }) as DisruptDecision;
    expect(startedInFlight([d('x', 'started')])).toBe(1);
    expect(startedInFlight([d('x', 'deleted')])).toBe(0);
    expect(startedInFlight([d('x', 'abandoned'), d('y', 'started'), d('y', 'started')])).toBe(1);
  });
});
