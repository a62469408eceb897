import { describe, expect, it } from 'vitest';
import { makeMemoryWakeUps } from '../../../../shared/adapters/memory/index.ts';
import { toClusterNodePool } from '../../../../shared/apis/index.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { armWakeUps, wantedWakeUps } from '../../../../shared/usecases/nodepool/wake-ups.ts';
import { nodePoolManifest } from '../../../fixtures/builders.ts';

// Which NodePools get a wake-up, and when: those whose schedules read, at their next opening or
// closing; none for a NodePool without schedules, one whose schedules do not read, or one being
// deleted. What was armed is logged once.

const T = (iso: string) => Date.parse(iso);
const nightly = JSON.stringify([
  { name: 'nightly', start: '0 20 * * *', end: '0 7 * * *', timeZone: 'Europe/Berlin', noNewNodes: true },
]);
const pool = (name: string, schedules?: string, deleting = false) => ({
  ...toClusterNodePool(
    nodePoolManifest(
      name,
      schedules === undefined ? {} : { annotations: { 'flotilla.io/schedules': schedules } },
    ),
  ),
  deleting,
});

describe("the NodePools' wake-ups", () => {
  const pools = [pool('web', nightly), pool('plain'), pool('broken', '[{'), pool('leaving', nightly, true)];

  it('wakes each NodePool whose schedules read at their next change, and no other', () => {
    expect(wantedWakeUps(pools, T('2026-10-24T12:00:00Z'))).toEqual(
      new Map([['web', T('2026-10-24T18:00:00Z')]]),
    );
    expect(wantedWakeUps(pools, T('2026-10-24T18:00:00Z'))).toEqual(
      new Map([['web', T('2026-10-25T06:00:00Z')]]),
    );
  });

  it('logs what it armed, once', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger(
      {},
      { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const wakeUps = makeMemoryWakeUps();
    await armWakeUps(wakeUps, pools, T('2026-10-24T12:00:00Z'), logger);
    await armWakeUps(wakeUps, pools, T('2026-10-24T12:01:00Z'), logger);
    expect(lines.filter((l) => l['message'] === 'wake-ups armed')).toEqual([
      expect.objectContaining({ armed: [{ nodePool: 'web', at: '2026-10-24T18:00:00.000Z' }], removed: [] }),
    ]);
    expect(wakeUps.next()).toBe(T('2026-10-24T18:00:00Z'));
  });
});
