import { describe, expect, it } from 'vitest';
import { toClusterNodePool } from '../../../shared/apis/index.ts';
import { nodePoolManifest } from '../../fixtures/builders.ts';

// The NodePool annotation flotilla.io/schedules, as the Lambdas read it.

const pool = (schedules: unknown, replicas?: number) =>
  toClusterNodePool(
    nodePoolManifest('web', {
      annotations: {
        'flotilla.io/schedules': typeof schedules === 'string' ? schedules : JSON.stringify(schedules),
      },
      ...(replicas === undefined ? {} : { replicas }),
    }),
  ).schedules;

const nightly = { name: 'nightly', start: '0 20 * * *', end: '0 7 * * *', timeZone: 'Europe/Berlin' };

describe('the schedules annotation', () => {
  it('reads windows that hold limits or no new nodes', () => {
    const read = pool([
      { ...nightly, noNewNodes: true },
      {
        ...nightly,
        name: 'weekend',
        start: '0 0 * * sat',
        end: '0 0 * * mon',
        limits: { cpu: '16', nodes: 2 },
      },
    ]);
    expect(read?.kind).toBe('schedules');
    if (read?.kind !== 'schedules') return;
    expect(read.schedules.map((s) => [s.name, s.start, s.end, s.timeZone, s.hold])).toEqual([
      ['nightly', '0 20 * * *', '0 7 * * *', 'Europe/Berlin', { kind: 'noNewNodes' }],
      [
        'weekend',
        '0 0 * * sat',
        '0 0 * * mon',
        'Europe/Berlin',
        { kind: 'limits', limits: { cpu: 16_000, nodes: 2 } },
      ],
    ]);
  });

  it.each([
    ['not JSON', '[{', 'is not JSON'],
    ['an unknown field', [{ ...nightly, noNewNodes: true, scale: 0 }], 'Unrecognized key'],
    [
      'replicas on a dynamic NodePool',
      [{ ...nightly, replicas: 0 }],
      'sets exactly one of limits and noNewNodes (replicas only on a static NodePool)',
    ],
    [
      'both holds',
      [{ ...nightly, noNewNodes: true, limits: { cpu: '1' } }],
      'sets exactly one of limits and noNewNodes',
    ],
    ['neither hold', [nightly], 'sets exactly one of limits and noNewNodes'],
    [
      'a bad cron',
      [{ ...nightly, start: '0 25 * * *', noNewNodes: true }],
      'start "0 25 * * *": hour: 25 is outside 0-23',
    ],
    [
      'an unknown zone',
      [{ ...nightly, timeZone: 'Europe/Atlantis', noNewNodes: true }],
      'timeZone "Europe/Atlantis" is not an IANA time zone',
    ],
    ['a bad quantity', [{ ...nightly, limits: { cpu: 'lots' } }], 'limits:'],
    [
      'a repeated name',
      [
        { ...nightly, noNewNodes: true },
        { ...nightly, noNewNodes: true },
      ],
      'repeats the name',
    ],
  ])('keeps %s as the problem it is, never as no schedule', (_what, value, problem) => {
    const read = pool(value);
    expect(read?.kind).toBe('invalid');
    expect(read?.kind === 'invalid' ? read.problem : '').toContain(problem);
    expect(read?.kind === 'invalid' ? read.problem : '').toMatch(
      /^annotation flotilla\.io\/schedules: .*; the NodePool launches nothing until it is fixed$/,
    );
  });

  it('reads windows of replicas on a static NodePool, and only those', () => {
    const read = pool(
      [
        { ...nightly, replicas: 0 },
        { ...nightly, name: 'weekend', replicas: 1 },
      ],
      3,
    );
    expect(read?.kind === 'schedules' ? read.schedules.map((s) => s.hold) : read).toEqual([
      { kind: 'replicas', replicas: 0 },
      { kind: 'replicas', replicas: 1 },
    ]);
    for (const [value, problem] of [
      [[{ ...nightly, noNewNodes: true }], 'sets replicas, and only replicas, on a static NodePool'],
      [[{ ...nightly, replicas: 1, limits: { cpu: '1' } }], 'sets replicas, and only replicas'],
      [[{ ...nightly, replicas: -1 }], '[0.replicas]'],
      [[{ ...nightly, replicas: 1.5 }], '[0.replicas]'],
    ] as const) {
      const refused = pool(value, 2);
      expect(refused?.kind === 'invalid' ? refused.problem : refused).toContain(problem);
      expect(refused?.kind === 'invalid' ? refused.problem : '').toMatch(
        /; the NodePool keeps the NodeClaims it has, launching and removing none for its replicas, until it is fixed$/,
      );
    }
  });
});
