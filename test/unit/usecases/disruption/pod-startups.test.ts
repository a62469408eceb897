import { describe, expect, it } from 'vitest';
import { SUMMARY_MAX_AGE_MS } from '../../../../shared/ports/summary.ts';
import { pass, threeNodes } from './pass-world.ts';

// pods_startup_duration_seconds comes from the disruption passes' observe decisions. Every pod that
// starts must be counted by exactly one of them, whatever happens between passes: a pass that
// fails after its read, a pod that starts while a pass runs, data up to a minute old.

const startups = (lines: readonly Record<string, unknown>[]) =>
  lines.filter((l) => l['decision'] === 'observe').flatMap((l) => l['podStartupSeconds'] as number[]);

describe('pod startups across disruption passes (in-memory cluster and cloud)', () => {
  it('counts a pod that started between passes once, even when the pass after it failed', async () => {
    const lines: Record<string, unknown>[] = [];
    const world = await threeNodes((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const { clock, cluster } = world;
    await pass(world);
    const counted = startups(lines).length;

    clock.advance(10_000);
    cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'late', namespace: 'default' },
      spec: {
        containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
      },
    });
    clock.advance(7_000);
    await world.step(); // bound and started, 7 s after its creation
    const late = cluster
      .list('Pod')
      .find((p) => (p as { metadata: { name: string } }).metadata.name === 'late') as {
      status?: { startTime?: string };
    };
    expect(late.status?.startTime).toBeDefined();

    // The next pass reads the cluster, then fails: it observes nothing.
    clock.advance(20_000);
    const failing = pass(world, {
      cloud: {
        ...world.cloud,
        list: async () => {
          throw new Error('EC2 unreachable');
        },
      },
    });
    await expect(failing).rejects.toThrow('EC2 unreachable');
    expect(startups(lines)).toHaveLength(counted);

    // The passes after it count the pod once its start is surely in what they read, and only once.
    for (let i = 0; i < 4; i++) {
      clock.advance(SUMMARY_MAX_AGE_MS / 2);
      await pass(world);
    }
    // The world's three pods started within the minute before the first pass, whose window (the
    // first, with no previous end) is empty: later windows take them, once each, and the late one.
    expect(
      startups(lines)
        .slice(counted)
        .sort((a, b) => a - b),
    ).toEqual([7, 51, 51, 51]);
    const observed = lines.filter((l) => l['decision'] === 'observe');
    // Each window begins where the one before ended.
    for (let i = 1; i < observed.length; i++) expect(observed[i]?.['since']).toBe(observed[i - 1]?.['until']);
  });
});
