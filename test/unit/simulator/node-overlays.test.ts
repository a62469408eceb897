import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { computeCost } from '../../../shared/simulator/stats.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { small, web } from './scenarios.ts';

// NodeOverlays in a scenario: applied as a user applies them, they change what the simulation
// launches with Karpenter's NodeOverlay feature gate on, and nothing with it off (its default).

const gate = (on: boolean) => `settings:\n  featureGates: { NodeOverlay: ${on} }\n`;
const savingsPlan =
  overlays(`      requirements: [{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }]
      price: "0.01"
`);

function overlays(spec: string): string {
  return `nodeOverlays:
  - apiVersion: karpenter.sh/v1alpha1
    kind: NodeOverlay
    metadata: { name: savings-plan }
    spec:
${spec}`;
}

const scenario = (extra: string) => `${small({ workloads: web(1), duration: '2m' })}${extra}`;

describe('a scenario with NodeOverlays', () => {
  it('launches the type an overlay prices cheapest', async () => {
    const plain = await simulate(parseScenario(scenario('')));
    expect(plain.launches.map((l) => l.instanceType)).toEqual(['c6i.xlarge']);
    const overlaid = await simulate(parseScenario(scenario(`${gate(true)}${savingsPlan}`)));
    expect(overlaid.launches.map((l) => l.instanceType)).toEqual(['m6i.xlarge']);
  });

  it('prices the node it launched at the overlay’s price, in the samples, the total and the summary, marked', async () => {
    const overlaid = await simulate(parseScenario(scenario(`${gate(true)}${savingsPlan}`)));
    const [launch] = overlaid.launches;
    expect(launch).toMatchObject({ instanceType: 'm6i.xlarge', pricePerHour: 0.01, priceOverlaid: true });
    // While it runs, the cluster costs the overlay's $0.01/hour, not the catalog's m6i.xlarge price.
    const running = overlaid.samples.filter((s) => s.nodes === 1);
    expect(running.length).toBeGreaterThan(0);
    for (const s of running) expect(s.costPerHour).toBe(0.01);
    const endMs = overlaid.scenario.startMs + overlaid.scenario.durationMs;
    expect(computeCost(overlaid)?.totalUsd).toBeCloseTo(
      (0.01 * (endMs - (launch?.atMs ?? 0))) / 3_600_000,
      9,
    );
    const summary = renderSummary(overlaid);
    expect(summary).toMatch(/m6i\.xlarge .*\$0\.0100 †/);
    expect(summary).toContain('† NodeOverlay price');
    // Without an overlay nothing is marked.
    const plain = await simulate(parseScenario(scenario('')));
    expect(plain.launches[0]).not.toHaveProperty('priceOverlaid');
    expect(renderSummary(plain)).not.toContain('†');
  });

  it('launches as without it when the NodeOverlay gate is off', async () => {
    const off = await simulate(parseScenario(scenario(`${gate(false)}${savingsPlan}`)));
    expect(off.launches.map((l) => l.instanceType)).toEqual(['c6i.xlarge']);
    const unset = await simulate(parseScenario(scenario(savingsPlan)));
    expect(unset.launches.map((l) => l.instanceType)).toEqual(['c6i.xlarge']);
  });

  it('refuses an overlay the cluster would mark invalid, at its place in the file', () => {
    expect(() =>
      parseScenario(
        scenario(
          overlays(`      requirements: [{ key: team, operator: Gt, values: ["-1"] }]
      price: "0.01"
`),
        ),
      ),
    ).toThrow(/nodeOverlays/);
  });
});
