import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  branchEnisByInstanceType,
  onDemandFallbackUsdPerHour,
  PRICING_FALLBACK_SOURCE,
  parsePricingFallback,
  spotFallbackUsdPerHour,
} from '../../../shared/catalog/pricing-fallback.ts';
import { ValidationError } from '../../../shared/core/errors.ts';

const catalogUrl = new URL('../../../shared/catalog/instance-types.json', import.meta.url);

const sound = () => ({
  source: { catalog: 'shared/catalog/instance-types.json', sha256: '0123456789abcdef' },
  onDemandUsdPerHour: { 'us-east-1': { 'm5.large': 0.096 } },
  spotUsdPerHour: { 'us-east-1': { 'm5.large': 0.04 } },
  branchEnis: { 'm5.large': 9 },
});

describe('the bundled fallback price tables', () => {
  it('come from the bundled catalog as it is now', () => {
    const digest = createHash('sha256').update(readFileSync(catalogUrl, 'utf8')).digest('hex').slice(0, 16);
    expect(
      PRICING_FALLBACK_SOURCE,
      'pricing-fallback.json is stale: regenerate it with npx tsx scripts/generate-pricing.ts',
    ).toEqual({
      catalog: 'shared/catalog/instance-types.json',
      sha256: digest,
    });
  });

  it('hold on-demand and spot prices per region and branch ENIs per type', () => {
    expect(onDemandFallbackUsdPerHour['us-east-1']?.['c5.large']).toBe(0.085);
    expect(spotFallbackUsdPerHour['us-east-1']?.['c5.large']).toBeGreaterThan(0);
    expect(spotFallbackUsdPerHour['us-east-1']?.['c5.large']).toBeLessThan(0.085);
    expect(Object.keys(onDemandFallbackUsdPerHour).sort()).toEqual(
      Object.keys(spotFallbackUsdPerHour).sort(),
    );
    expect(branchEnisByInstanceType['z1d.large']).toBe(13);
  });
});

describe('parsePricingFallback', () => {
  it('reads the tables as the generator writes them', () => {
    expect(parsePricingFallback({ $comment: 'generated', ...sound() })).toEqual(sound());
  });

  it.each([
    ['a list', [], 'contents: must be an object'],
    ['no source', { ...sound(), source: undefined }, 'source: must be an object'],
    [
      'a source without its digest',
      { ...sound(), source: { catalog: 'c' } },
      'source.sha256: must be a string',
    ],
    ['no spot table', { ...sound(), spotUsdPerHour: undefined }, 'spotUsdPerHour: must be an object'],
    [
      'a price as a string',
      { ...sound(), onDemandUsdPerHour: { 'us-east-1': { 'm5.large': '0.096' } } },
      'onDemandUsdPerHour["us-east-1"]["m5.large"]: must be a price in USD per hour (a number, 0 or more), got "0.096"',
    ],
    [
      'a negative price',
      { ...sound(), spotUsdPerHour: { 'us-west-2': { 'm5.large': -1 } } },
      'spotUsdPerHour["us-west-2"]["m5.large"]: must be a price',
    ],
    [
      'a region that is not a table',
      { ...sound(), spotUsdPerHour: { 'us-east-1': 3 } },
      'spotUsdPerHour["us-east-1"]: must be an object',
    ],
    [
      'a fraction of an ENI',
      { ...sound(), branchEnis: { 'm5.large': 1.5 } },
      'branchEnis["m5.large"]: must be a whole number of ENIs, 1 or more, got 1.5',
    ],
  ])('refuses %s, naming the file, the field and how to regenerate it', (_, value, message) => {
    const read = () => parsePricingFallback(value, 'pricing-fallback.json');
    expect(read).toThrow(ValidationError);
    expect(read).toThrow(`pricing-fallback.json: ${message}`);
    expect(read).toThrow('regenerate it with `npx tsx scripts/generate-pricing.ts`');
  });
});
