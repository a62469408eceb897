import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainInWorld } from '../../../shared/cli/explain/simulated.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import { loadScenario } from '../../../shared/simulator/scenario.ts';

// The night-window example: the web NodePool takes no new nodes from 20:00 to 07:00 Europe/Berlin,
// on the night of 28 to 29 March 2026 when Berlin's clocks go forward. The window opens at 20:00 CET
// (19:00 UTC) and closes at 07:00 CEST (05:00 UTC); the pods that arrive at 21:00 local wait for it.

const examples = path.resolve(import.meta.dirname, '../../../examples');
const at = (iso: string) => Date.parse(iso);
/** Two runs of half a day of virtual time on a busy machine: a limit for a hang, not a measure of speed. */
const HANG_LIMIT_MS = 240_000;

describe('the night-window example', () => {
  const explained: string[] = [];
  const scenario = loadScenario(path.join(examples, 'night-window.yaml'));
  const record = simulate(
    { ...scenario, durationMs: at('2026-03-29T04:00:00Z') - scenario.startMs },
    {
      atEnd: async (world) => {
        const [pending] = (await world.cluster.provisionablePods()).items;
        if (pending === undefined) throw new Error('no pod waits at 06:00 local');
        explained.push(
          await explainInWorld(world, { kind: 'pod', namespace: pending.namespace, name: pending.name }),
        );
      },
    },
  );
  const full = simulate(scenario);

  it(
    'launches nothing between 20:00 CET and 07:00 CEST, and the waiting pods at 07:00 CEST',
    async () => {
      const r = await full;
      const times = r.launches.map((l) => l.atMs);
      expect(times.filter((t) => t < at('2026-03-28T19:00:00Z'))).toHaveLength(2);
      expect(times.filter((t) => t >= at('2026-03-28T19:00:00Z') && t < at('2026-03-29T05:00:00Z'))).toEqual(
        [],
      );
      const morning = times.filter((t) => t >= at('2026-03-29T05:00:00Z'));
      expect(morning).toHaveLength(4);
      for (const t of morning) expect(t).toBeLessThan(at('2026-03-29T05:00:30Z'));
      expect(r.samples.at(-1)).toMatchObject({ pendingPods: 0, runningPods: 6 });
      // While the window holds the pool, its running nodes are still priced at their offerings.
      const night = r.decisions.filter(
        (d) =>
          d['decision'] === 'observe' &&
          Number(d['atMs']) > at('2026-03-28T23:00:00Z') &&
          Number(d['atMs']) < at('2026-03-29T04:00:00Z'),
      );
      expect(night.length).toBeGreaterThan(0);
      const price = r.launches[0]?.pricePerHour ?? 0;
      for (const d of night) {
        const web = (d['nodePools'] as Record<string, { pricePerHour: number; unpricedNodeClaims?: number }>)[
          'web'
        ];
        expect(web?.pricePerHour).toBeCloseTo(2 * price, 6);
        expect(web?.unpricedNodeClaims).toBeUndefined();
      }
    },
    HANG_LIMIT_MS,
  );

  it(
    'tells the waiting pods which schedule holds them and until when',
    async () => {
      const r = await full;
      const told = r.decisions.filter((d) => d['decision'] === 'unschedulable');
      expect(told.length).toBeGreaterThan(0);
      for (const d of told) {
        expect(d['reason']).toBe(
          'no NodePool can launch now; nodePool web: schedule "nightly" holds no new nodes until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
        );
      }
      await record;
      expect(explained[0]).toContain(
        '\n  - a schedule of the NodePool holds its launches: nodePool web: schedule "nightly" holds no new nodes until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
      );
    },
    HANG_LIMIT_MS,
  );
});
