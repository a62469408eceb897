import { describe, expect, it } from 'vitest';
import { bundledCatalogRecords } from '../../../shared/adapters/memory/index.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario, ScenarioError } from '../../../shared/simulator/scenario.ts';
import { defaultPoolYaml, web } from './scenarios.ts';

// A shadow Flotilla beside the simulated live one: the scenario asks for it under `shadow`, it
// changes nothing the live side does, and the record carries its comparison with the live side.

const MINUTE = 60_000;
const START_MS = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(START_MS + ms).toISOString();

/** The on-demand price of `type` in us-east-1, from the bundled catalog the simulator prices with. */
function onDemandPrice(type: string): number {
  const price = bundledCatalogRecords().find((r) => r.name === type)?.onDemandPriceUsd['us-east-1'];
  if (price === undefined) throw new Error(`the bundled catalog has no us-east-1 price for ${type}`);
  return price;
}

/** A NodePool of m6i and c6i on-demand of `sizes`, consolidated as `disruption` says. */
const pool = (sizes: string, disruption: string, capacityTypes = 'on-demand') =>
  defaultPoolYaml(
    [
      '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, c6i] }',
      `{ key: karpenter.k8s.aws/instance-size, operator: In, values: [${sizes}] }`,
      `{ key: karpenter.sh/capacity-type, operator: In, values: [${capacityTypes}] }`,
    ],
    `      disruption: ${disruption}\n`,
  );

describe('a shadow Flotilla beside a live one that never disrupts, worked by hand', () => {
  // Two pods of 3 cpu, one per xlarge node; the scale-down at 10m empties one of the two nodes. The
  // live side starts no disruption command, so both nodes run to the end of the 30 minutes.
  const scenario = parseScenario(`name: hand
duration: 30m
bootDelay: 30s
settings: { disruption: false }
shadow: {}
${pool('xlarge', '{ consolidationPolicy: WhenEmpty, consolidateAfter: 1m }')}${web(2, '    scale: [{ at: 10m, replicas: 1 }]\n')}`);

  it("prices the empty node it would have deleted from its first proposal to the window's end", async () => {
    let emptied: string[] = [];
    const record = await simulate(scenario, {
      atEnd: async ({ cluster }) => {
        const used = new Set(
          (cluster.list('Pod') as { spec?: { nodeName?: string } }[]).map((p) => p.spec?.nodeName),
        );
        emptied = (
          cluster.list('NodeClaim') as { metadata: { name: string }; status?: { nodeName?: string } }[]
        )
          .filter((c) => !used.has(c.status?.nodeName))
          .map((c) => c.metadata.name);
      },
    });
    const comparison = record.shadow;
    if (comparison === undefined) throw new Error('the record carries no shadow comparison');

    // Both nodes are the NodePool's cheapest type that fits 3 cpu, and the live side kept them.
    const [cheapest] = ['m6i.xlarge', 'c6i.xlarge']
      .map((type) => ({ type, price: onDemandPrice(type) }))
      .sort((a, b) => a.price - b.price);
    if (cheapest === undefined) throw new Error('no type');
    expect(record.launches.map((l) => [l.instanceType, l.capacityType])).toEqual([
      [cheapest.type, 'on-demand'],
      [cheapest.type, 'on-demand'],
    ]);
    expect(record.terminations).toEqual([]);
    expect(emptied).toHaveLength(1);

    // The window: from the shadow's first line, at the run's start (in each tick the shadow decides
    // first, before the live side's calls take their time), to its last line, its disruption pass
    // at 29m30s (the run ends at 30m, where no pass runs).
    const fromMs = 0;
    const toMs = 29 * MINUTE + 30_000;
    expect([comparison.from, comparison.to]).toEqual([at(fromMs), at(toMs)]);
    // The live cost: both nodes, launched as the window opened, ran through all of it (the first
    // observation, at 30 s, prices the window from its start).
    const liveUsd = (2 * cheapest.price * (toMs - fromMs)) / 3_600_000;
    expect(comparison.live.dollars).toBeCloseTo(liveUsd, 4);

    // The pod deleted at 10m leaves after its 30 s grace period: the live pass at 10m30s is the
    // first to find the node empty and records that pod event; consolidateAfter (1m) later, at
    // 11m30s, the shadow's pass proposes deleting the node, and every pass after it proposes it
    // again, to the window's end: 18 minutes of its price.
    const proposedMs = 11 * MINUTE + 30_000;
    const savedUsd = (cheapest.price * (toMs - proposedMs)) / 3_600_000;
    expect(comparison.live.dollars - comparison.flotilla.dollars).toBeCloseTo(savedUsd, 3);
    expect(comparison.differences).toEqual([
      {
        kind: 'disruption',
        dollars: Number(savedUsd.toFixed(4)),
        pricePerHour: cheapest.price,
        nodePool: 'default',
        from: at(proposedMs),
        until: at(toMs),
        why: `Flotilla would have deleted ${emptied[0]} (Empty, $${cheapest.price}/h → $0/h); the live autoscaler did not`,
      },
    ]);
    // Its launches were the live side's: the same type for the same pods, no difference.
    expect(comparison.flotilla.launchesProposed).toBe(2);
    expect(comparison.live.nodeClaimsCreated).toBe(2);
  });
});

describe('a shadow Flotilla in the simulator', () => {
  const body = `duration: 25m
bootDelay: 30s
${pool('large, xlarge, 2xlarge', '{ consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s }', 'spot, on-demand')}${web(3, '    scale: [{ at: 5m, replicas: 8 }, { at: 15m, replicas: 2 }]\n', '"1500m"')}events:
  - { kind: SpotInterruption, at: 8m }
`;
  const shadow = `shadow:
  settings:
    featureGates: { SpotToSpotConsolidation: true }
    minValuesPolicy: BestEffort
`;

  it.each([
    ['disrupting', ''],
    ['never disrupting', 'settings: { disruption: false }\n'],
  ])('leaves the record of a live side %s as it is without it', async (_, settings) => {
    const [without, beside] = await Promise.all([
      simulate(parseScenario(`name: busy\n${settings}${body}`)),
      simulate(parseScenario(`name: busy\n${settings}${shadow}${body}`)),
    ]);
    const { shadow: comparison, ...live } = beside;
    expect(live).toEqual(without);
    expect(without.shadow).toBeUndefined();
    // It did decide beside it: launches for the same pods, and commands when the live side made none.
    expect(comparison?.flotilla.launchesProposed).toBeGreaterThan(0);
    if (settings !== '') expect(comparison?.flotilla.commandsProposed).toBeGreaterThan(0);
  });

  it('takes its own settings, each at its default unless set, and refuses the live stack’s', () => {
    const head = 'name: s\nduration: 10m\n';
    const poolAndPods = `${pool('xlarge', '{ consolidateAfter: 1m }')}${web(1)}`;
    expect(parseScenario(`${head}${poolAndPods}`).shadow).toBeUndefined();
    const plain = parseScenario(`${head}shadow: {}\n${poolAndPods}`);
    expect(plain.settings.disruption).toBe(true);
    expect(plain.shadow).toEqual({
      settings: {
        featureGates: { SpotToSpotConsolidation: false, NodeOverlay: false, StaticCapacity: false },
        minValuesPolicy: 'Strict',
        preferencePolicy: 'Respect',
        repackConsolidation: false,
        kubeSchedulerScoring: 'LeastAllocated',
        runawayGuard: true,
      },
    });
    const own = parseScenario(
      `${head}kubeScheduler: { scoringStrategy: MostAllocated }\nsettings: { disruption: false, featureGates: { NodeOverlay: true } }\nshadow: { settings: { featureGates: { SpotToSpotConsolidation: true }, preferencePolicy: Ignore } }\n${poolAndPods}`,
    );
    expect(own.settings).toMatchObject({ disruption: false, featureGates: { NodeOverlay: true } });
    expect(own.shadow?.settings).toEqual({
      featureGates: { SpotToSpotConsolidation: true, NodeOverlay: false, StaticCapacity: false },
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Ignore',
      repackConsolidation: false,
      // Told the simulated kube-scheduler's strategy, as the live stack is.
      kubeSchedulerScoring: 'MostAllocated',
      runawayGuard: true,
    });

    let problems: readonly { field: string; message: string }[] = [];
    try {
      parseScenario(
        `${head}shadow:\n  settings:\n    featureGates: { NodeRepair: true }\n    batchIdleDuration: 2s\n    disruption: false\n${poolAndPods}`,
      );
    } catch (error) {
      if (!(error instanceof ScenarioError)) throw error;
      problems = error.problems;
    }
    expect(problems.map((p) => [p.field, p.message])).toEqual([
      [
        'shadow.settings.featureGates.NodeRepair',
        expect.stringMatching(/^a shadow Flotilla does not take this setting: it repairs no node/),
      ],
      ['shadow.settings.batchIdleDuration', expect.stringMatching(/waiting no window of its own/)],
      ['shadow.settings.disruption', expect.stringMatching(/observe the cluster for the comparison/)],
    ]);
  });
});
