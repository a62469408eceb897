import { describe, expect, it } from 'vitest';
import { toClusterNodePool } from '../../../shared/apis/index.ts';
import { nodePoolManifest } from '../../fixtures/builders.ts';

// The NodePool annotation flotilla.io/max-cost-per-hour, as the Lambdas read it.

const pool = (annotations: Record<string, string> | undefined, replicas?: number) =>
  toClusterNodePool(
    nodePoolManifest('default', {
      ...(annotations === undefined ? {} : { annotations }),
      ...(replicas === undefined ? {} : { replicas }),
    }),
  ).pool;

describe('the dollar limit annotation', () => {
  it('reads US dollars per hour, with or without a dollar sign', () => {
    expect(pool({ 'flotilla.io/max-cost-per-hour': '12.5' }).costLimit).toEqual({ usdPerHour: 12.5 });
    expect(pool({ 'flotilla.io/max-cost-per-hour': ' $40 ' }).costLimit).toEqual({ usdPerHour: 40 });
    expect(pool({ 'flotilla.io/max-cost-per-hour': '0' }).costLimit).toEqual({ usdPerHour: 0 });
  });

  it('sets no limit when the annotation is absent', () => {
    expect(pool(undefined).costLimit).toBeUndefined();
    expect(pool({ other: '1' }).costLimit).toBeUndefined();
  });

  it('keeps a value it cannot read as the problem it is, never as no limit', () => {
    for (const value of ['', 'ten', '-5', '1e3', '5 USD', '20000000']) {
      const limit = pool({ 'flotilla.io/max-cost-per-hour': value }).costLimit;
      expect(limit !== undefined && 'problem' in limit ? limit.problem : limit).toMatch(
        /^annotation flotilla\.io\/max-cost-per-hour .* the NodePool launches nothing for pods until it is fixed$/,
      );
    }
  });

  it('is refused on a static NodePool, whose size is spec.replicas', () => {
    const limit = pool({ 'flotilla.io/max-cost-per-hour': '5' }, 2).costLimit;
    expect(limit).toEqual({ problem: expect.stringContaining('is not supported on a static NodePool') });
  });
});
