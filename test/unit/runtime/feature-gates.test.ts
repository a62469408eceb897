import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FEATURE_GATES,
  formatFeatureGates,
  parseFeatureGates,
  resolveFeatureGates,
} from '../../../shared/runtime/feature-gates.ts';
import {
  DEFAULT_OPERATOR_SETTINGS,
  operatorSettingsProblems,
} from '../../../shared/runtime/operator-settings.ts';

// Karpenter's feature gates as `--feature-gates` writes them, their defaults, the deprecated
// booleans that stand for two of them, and the ranges of the operator settings.

describe('parseFeatureGates', () => {
  it('has Karpenter v1.15 defaults: only ReservedCapacity on', () => {
    expect(formatFeatureGates(DEFAULT_FEATURE_GATES)).toBe(
      'NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false',
    );
  });

  it.each([
    ['NodeOverlay=true,StaticCapacity=true', { NodeOverlay: true, StaticCapacity: true }],
    [' NodeRepair = 1 , ,ReservedCapacity=F', { NodeRepair: true, ReservedCapacity: false }],
    ['SpotToSpotConsolidation=True,SpotToSpotConsolidation=0', { SpotToSpotConsolidation: false }],
    ['', {}],
  ])('reads %j as Karpenter does', (text, gates) => {
    expect(parseFeatureGates(text)).toEqual({ gates, problems: [] });
  });

  it('accepts a gate Flotilla does not implement at its default, and refuses it on', () => {
    expect(parseFeatureGates('CapacityBuffer=false').problems).toEqual([]);
    expect(parseFeatureGates('CapacityBuffer=true').problems).toEqual([
      "CapacityBuffer: Karpenter's gate is not implemented by Flotilla; it can only be false (its default)",
    ]);
  });

  it.each([
    ['NodeOverlays=true', /unknown feature gate "NodeOverlays"; Flotilla's gates are NodeRepair, /],
    ['NodeOverlay=yes', /NodeOverlay: "yes" is not a boolean/],
    ['NodeOverlay', /"NodeOverlay" is not Name=true or Name=false/],
  ])('refuses %j, saying why', (text, problem) => {
    const parsed = parseFeatureGates(text);
    expect(parsed.problems).toEqual([expect.stringMatching(problem)]);
    expect(parsed.gates).toEqual({});
  });
});

describe('resolveFeatureGates', () => {
  it('fills in the defaults and lets a deprecated boolean set its gate', () => {
    expect(resolveFeatureGates({ NodeOverlay: true }, { nodeRepair: true })).toEqual({
      gates: { ...DEFAULT_FEATURE_GATES, NodeOverlay: true, NodeRepair: true },
      problems: [],
    });
  });

  it('takes a gate and its deprecated boolean that agree, and refuses them apart', () => {
    expect(resolveFeatureGates({ NodeRepair: true }, { nodeRepair: true }).problems).toEqual([]);
    expect(
      resolveFeatureGates({ SpotToSpotConsolidation: false }, { spotToSpotConsolidation: true }).problems,
    ).toEqual([
      'spotToSpotConsolidation is true but the SpotToSpotConsolidation feature gate is false; spotToSpotConsolidation is a deprecated name for the gate: set the gate alone',
    ]);
  });
});

describe('operatorSettingsProblems', () => {
  it("finds none in Karpenter's defaults", () => {
    expect(operatorSettingsProblems({})).toEqual([]);
    expect(operatorSettingsProblems(DEFAULT_OPERATOR_SETTINGS)).toEqual([]);
  });

  it.each([
    [{ vmMemoryOverheadPercent: 1 }, /vmMemoryOverheadPercent is 1;/],
    [{ vmMemoryOverheadPercent: -0.1 }, /vmMemoryOverheadPercent is -0.1;/],
    [{ reservedENIs: -1 }, /reservedENIs is -1;/],
    [{ reservedENIs: 1.5 }, /reservedENIs is 1.5;/],
    [{ batchIdleMs: 0 }, /batchIdleDuration is 0 ms;/],
    [{ batchMaxMs: 60_000 }, /batchMaxDuration is 60000 ms; .* at most 30 s/],
    [
      { batchIdleMs: 5_000, batchMaxMs: 2_000 },
      /batchMaxDuration \(2000 ms\) is shorter than batchIdleDuration/,
    ],
    [{ amiRefreshMs: 30_000 }, /amiRefreshInterval is 30000 ms; .* at least 1 minute/],
  ])('refuses %j', (settings, problem) => {
    expect(operatorSettingsProblems(settings)).toEqual([expect.stringMatching(problem)]);
  });

  it.each([
    { vmMemoryOverheadPercent: 0 },
    { vmMemoryOverheadPercent: 0.2 },
    { reservedENIs: 2 },
    { batchIdleMs: 10_000, batchMaxMs: 10_000 },
    { amiRefreshMs: 3_600_000 },
  ])('accepts %j', (settings) => {
    expect(operatorSettingsProblems(settings)).toEqual([]);
  });
});
