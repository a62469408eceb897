import { describe, expect, it } from 'vitest';
import type { ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  commandsInFlight,
  decodeCommand,
  encodeCommand,
} from '../../../../shared/usecases/state/command-record.ts';
import { iso, nodeClaim, T0 } from './builders.ts';

function record(id: string, candidates: string[], more: Partial<CommandRecord> = {}): CommandRecord {
  return {
    id,
    method: 'drift',
    reason: 'Drifted',
    candidates,
    replacements: [],
    startedAt: iso(T0),
    ...more,
  };
}

/** A NodeClaim carrying `value` (a record, or raw text) in the command annotation. */
function carrying(
  name: string,
  value: CommandRecord | string | undefined,
  deleting = false,
): ClusterNodeClaim {
  const annotations =
    value === undefined
      ? {}
      : { [COMMAND_ANNOTATION]: typeof value === 'string' ? value : encodeCommand(value) };
  return nodeClaim(name, { annotations, deleting });
}

describe('encodeCommand / decodeCommand', () => {
  it.each<[string, CommandRecord]>([
    ['an emptiness command', record('e1', ['a', 'b'], { method: 'emptiness', reason: 'Empty' })],
    ['a drift command with replacements', record('d1', ['a'], { replacements: ['r-1', 'r-2'] })],
    ['an expiration command', record('x1', ['a'], { method: 'expiration', reason: 'Expired' })],
    ['an Underutilized reason', record('u1', ['a'], { method: 'emptiness', reason: 'Underutilized' })],
    ['a start time without fractional seconds', record('o1', ['a'], { startedAt: '2026-11-21T10:00:00Z' })],
    // Read as a record all the same: disruption resolves the name, and leaves a command whose method
    // it does not know alone (methods.ts, in-flight.ts).
    ['a method this version does not know', record('n1', ['a'], { method: 'defragment' })],
  ])('round-trips %s', (_, value) => {
    const text = encodeCommand(value);
    expect(JSON.parse(text)).toEqual(value);
    expect(decodeCommand(text)).toEqual(value);
  });

  it('reports text that is not JSON', () => {
    expect(decodeCommand('{"id": ')).toEqual({ problem: expect.stringMatching(/^not JSON: /) });
    expect(decodeCommand('')).toEqual({ problem: expect.stringMatching(/^not JSON: /) });
  });

  it.each<[string, unknown, RegExp]>([
    ['an array', [], /expected object/],
    ['a string', 'drift', /expected object/],
    ['an empty id', { ...record('', ['a']) }, /at id/],
    ['a missing id', (({ id: _, ...rest }) => rest)(record('x', ['a'])), /at id/],
    ['no method', record('x', ['a'], { method: '' }), /at method/],
    ['an unknown reason', record('x', ['a'], { reason: 'Bored' as 'Drifted' }), /at reason/],
    ['no candidates', record('x', []), /at candidates/],
    ['an empty candidate name', record('x', ['']), /at candidates/],
    ['a replacement that is not a string', { ...record('x', ['a']), replacements: [1] }, /at replacements/],
    ['a start time that is not RFC 3339', record('x', ['a'], { startedAt: 'yesterday' }), /at startedAt/],
  ])('reports a record with %s', (_, value, problem) => {
    const decoded = decodeCommand(JSON.stringify(value));
    expect('problem' in decoded ? decoded.problem : 'decoded').toMatch(problem);
  });
});

describe('commandsInFlight', () => {
  const ids = (claims: ClusterNodeClaim[]) => [...commandsInFlight(claims).commands.keys()].sort();

  it.each<[string, ClusterNodeClaim[], string[]]>([
    ['no NodeClaims', [], []],
    ['NodeClaims without records', [carrying('a', undefined), carrying('b', undefined)], []],
    ['a record on its live candidate', [carrying('a', record('x', ['a']))], ['x']],
    [
      'one command recorded on its candidates and replacement',
      [
        carrying('a', record('x', ['a', 'b'], { replacements: ['r'] })),
        carrying('b', record('x', ['a', 'b'], { replacements: ['r'] })),
        carrying('r', record('x', ['a', 'b'], { replacements: ['r'] })),
      ],
      ['x'],
    ],
    ['two commands', [carrying('a', record('x', ['a'])), carrying('b', record('y', ['b']))], ['x', 'y']],
    ['a command whose candidate is deleting (finished)', [carrying('a', record('x', ['a']), true)], []],
    [
      'a command whose candidates are all deleting or gone',
      [carrying('a', record('x', ['a', 'gone']), true), carrying('r', record('x', ['a', 'gone']))],
      [],
    ],
    [
      'a record on a replacement whose candidate is gone',
      [carrying('r', record('x', ['gone'], { replacements: ['r'] }))],
      [],
    ],
    [
      'a command with one candidate deleting and one live',
      [carrying('a', record('x', ['a', 'b']), true), carrying('b', record('x', ['a', 'b']))],
      ['x'],
    ],
    [
      'a replacement recording a command whose candidate has no record yet',
      [carrying('a', undefined), carrying('r', record('x', ['a'], { replacements: ['r'] }))],
      ['x'],
    ],
    [
      'a command of a method this version does not know (its NodeClaims stay in it)',
      [carrying('a', record('n', ['a'], { method: 'defragment', replacements: ['r'] }))],
      ['n'],
    ],
  ])('%s', (_, claims, expected) => {
    expect(ids(claims)).toEqual(expected);
  });

  it('keeps the first record read of an id', () => {
    const first = record('x', ['a'], { replacements: ['r-1'] });
    const second = record('x', ['a'], { replacements: ['r-2'] });
    const { commands } = commandsInFlight([carrying('a', first), carrying('r', second)]);
    expect(commands.get('x')).toEqual(first);
  });

  it('lists malformed records with their NodeClaim and leaves them out', () => {
    const { commands, malformed } = commandsInFlight([
      carrying('a', 'not json'),
      carrying('b', JSON.stringify({ id: 'y' })),
      carrying('c', record('z', ['c'])),
    ]);
    expect([...commands.keys()]).toEqual(['z']);
    expect(malformed).toEqual([
      { nodeClaim: 'a', problem: expect.stringMatching(/^not JSON: /) },
      { nodeClaim: 'b', problem: expect.stringMatching(/at method/) },
    ]);
  });
});
