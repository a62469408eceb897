import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import { loadScenario } from '../../../shared/simulator/scenario.ts';

// The scale-to-zero-nights example: the web NodePool is held to 0 CPUs from 20:00 to 07:00
// Europe/Berlin, on three nights around the autumn change of 25 October 2026 (03:00 CEST back to
// 02:00 CET). Each night the window empties the pool at 20:00 local, through its budget, and each
// morning the waiting pods launch at 07:00 local, whichever offset Berlin has that day.

const examples = path.resolve(import.meta.dirname, '../../../examples');
const at = (iso: string) => Date.parse(iso);
const MINUTE = 60_000;
/** Three days of virtual time on a busy machine: a limit for a hang, not a measure of speed. */
const HANG_LIMIT_MS = 240_000;

/** Each night's 20:00 and 07:00 Berlin time, in UTC. */
const NIGHTS = [
  { name: '23 to 24 October (CEST)', start: at('2026-10-23T18:00:00Z'), end: at('2026-10-24T05:00:00Z') },
  {
    name: '24 to 25 October (the change)',
    start: at('2026-10-24T18:00:00Z'),
    end: at('2026-10-25T06:00:00Z'),
  },
  { name: '25 to 26 October (CET)', start: at('2026-10-25T19:00:00Z'), end: at('2026-10-26T06:00:00Z') },
];

describe('the scale-to-zero-nights example', () => {
  const run = simulate(loadScenario(path.join(examples, 'scale-to-zero-nights.yaml')));

  it.each(NIGHTS)(
    'empties the pool at 20:00 and grows it at 07:00 Berlin time: $name',
    async ({ start, end }) => {
      const r = await run;
      const nodesAt = (ms: number) => r.samples.filter((s) => s.atMs <= ms).at(-1)?.nodes;
      // Three nodes until 20:00 local, none ten minutes later, none all night.
      expect(nodesAt(start - MINUTE)).toBe(3);
      expect(nodesAt(start + 10 * MINUTE)).toBe(0);
      const night = r.samples.filter((s) => s.atMs >= start + 10 * MINUTE && s.atMs < end);
      expect(night.length).toBeGreaterThan(100);
      expect(night.filter((s) => s.nodes !== 0)).toEqual([]);
      // Every node went for the window, none before it opened.
      const disrupted = r.disruptions.filter((d) => d.atMs >= start - 12 * 60 * MINUTE && d.atMs < end);
      expect(disrupted.map((d) => d.reason)).toEqual(['Scheduled', 'Scheduled', 'Scheduled']);
      for (const d of disrupted) {
        expect(d.atMs).toBeGreaterThanOrEqual(start);
        expect(d.atMs).toBeLessThan(start + 10 * MINUTE);
      }
      // Nothing launches at night; the three pods' nodes launch at 07:00.
      const launches = r.launches.map((l) => l.atMs).filter((t) => t >= start && t < end + 60 * MINUTE);
      expect(launches).toHaveLength(3);
      for (const t of launches) {
        expect(t).toBeGreaterThanOrEqual(end);
        expect(t).toBeLessThan(end + 30_000);
      }
      expect(nodesAt(end + 10 * MINUTE)).toBe(3);
    },
    HANG_LIMIT_MS,
  );

  it(
    'ends with every pod running and none disrupted for another reason',
    async () => {
      const r = await run;
      expect(r.samples.at(-1)).toMatchObject({ nodes: 3, pendingPods: 0, runningPods: 3 });
      expect(new Set(r.disruptions.map((d) => d.reason))).toEqual(new Set(['Scheduled']));
    },
    HANG_LIMIT_MS,
  );
});
