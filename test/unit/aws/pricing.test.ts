import { describe, expect, it } from 'vitest';
import {
  onDemandPriceFilters,
  parseOnDemandPriceList,
  pricingEndpointRegion,
} from '../../../shared/adapters/aws/pricing.ts';

/** A GetProducts PriceList entry in the shape the Pricing API returns (trimmed to what matters). */
function entry(instanceType: string, dimensions: Record<string, { unit: string; usd: string }>): string {
  return JSON.stringify({
    product: {
      productFamily: 'Compute Instance',
      attributes: { instanceType, operatingSystem: 'Linux', tenancy: 'Shared', regionCode: 'us-east-1' },
      sku: `SKU-${instanceType}`,
    },
    serviceCode: 'AmazonEC2',
    terms: {
      OnDemand: {
        [`SKU-${instanceType}.JRTCKXETXF`]: {
          priceDimensions: Object.fromEntries(
            Object.entries(dimensions).map(([id, d]) => [
              `SKU-${instanceType}.JRTCKXETXF.${id}`,
              { unit: d.unit, pricePerUnit: { USD: d.usd }, description: 'On Demand Linux' },
            ]),
          ),
          sku: `SKU-${instanceType}`,
        },
      },
    },
  });
}

describe('parseOnDemandPriceList', () => {
  it('reads the hourly USD price of each instance type', () => {
    const prices = parseOnDemandPriceList([
      entry('m5.large', { '6YS6EN2CT7': { unit: 'Hrs', usd: '0.0960000000' } }),
      entry('c7g.xlarge', { '6YS6EN2CT7': { unit: 'Hrs', usd: '0.1450000000' } }),
    ]);
    expect(prices).toEqual(
      new Map([
        ['m5.large', 0.096],
        ['c7g.xlarge', 0.145],
      ]),
    );
  });

  it('skips zero prices, non-hourly units and entries without an instance type', () => {
    const prices = parseOnDemandPriceList([
      entry('m5.large', { a: { unit: 'Hrs', usd: '0.0000000000' } }),
      entry('m5.xlarge', { a: { unit: 'Quantity', usd: '12.0' } }),
      JSON.stringify({ product: { attributes: {} }, terms: {} }),
    ]);
    expect(prices.size).toBe(0);
  });

  it('keeps the lowest price when a type is listed more than once', () => {
    const prices = parseOnDemandPriceList([
      entry('m5.large', { a: { unit: 'Hrs', usd: '0.2' } }),
      entry('m5.large', { a: { unit: 'Hrs', usd: '0.096' } }),
    ]);
    expect(prices.get('m5.large')).toBe(0.096);
  });
});

describe('pricingEndpointRegion', () => {
  it.each([
    ['us-west-2', 'us-east-1'],
    ['ca-central-1', 'us-east-1'],
    ['eu-west-1', 'eu-central-1'],
    ['ap-northeast-1', 'ap-south-1'],
    ['cn-north-1', 'cn-northwest-1'],
  ])('%s → %s', (region, endpoint) => {
    expect(pricingEndpointRegion(region)).toBe(endpoint);
  });
});

describe('onDemandPriceFilters', () => {
  it('asks for Linux, shared-tenancy, on-demand compute in the region', () => {
    const filters = Object.fromEntries(
      onDemandPriceFilters('eu-west-1', 'Compute Instance').map((f) => [f.Field, f.Value]),
    );
    expect(filters).toEqual({
      regionCode: 'eu-west-1',
      serviceCode: 'AmazonEC2',
      productFamily: 'Compute Instance',
      operatingSystem: 'Linux',
      preInstalledSw: 'NA',
      capacitystatus: 'Used',
      tenancy: 'Shared',
      marketoption: 'OnDemand',
    });
  });
});
