import { DescribeSpotPriceHistoryCommand, type EC2Client } from '@aws-sdk/client-ec2';
import { type Filter, GetProductsCommand, type PricingClient } from '@aws-sdk/client-pricing';
import {
  branchEnisByInstanceType,
  onDemandFallbackUsdPerHour,
  spotFallbackUsdPerHour,
} from '../../catalog/pricing-fallback.ts';
import type { OnDemandPriceSource } from '../../ports/cloud.ts';
import { call } from './errors.ts';

/**
 * On-demand prices from the table generated from the bundled catalog (scripts/generate-pricing.ts):
 * the floor under the Pricing API's prices, and all there is when the API cannot be read.
 */
export const fallbackOnDemandPrices: OnDemandPriceSource = {
  async onDemandPrices(region) {
    return new Map(Object.entries(onDemandFallbackUsdPerHour[region] ?? {}));
  },
};

/** Estimated spot prices of the bundled catalog: `<type>:<zone>` for each zone given. */
export function fallbackSpotPrices(
  region: string,
  zonesByType: ReadonlyMap<string, ReadonlySet<string>>,
): Map<string, number> {
  const out = new Map<string, number>();
  const table = spotFallbackUsdPerHour[region] ?? {};
  for (const [type, zones] of zonesByType) {
    const price = table[type];
    if (price === undefined) continue;
    for (const zone of zones) out.set(`${type}:${zone}`, price);
  }
  return out;
}

/** Branch ENIs (pod ENIs) per instance type, from the bundled catalog. */
export function branchEnis(instanceType: string): number {
  return branchEnisByInstanceType[instanceType] ?? 0;
}

/**
 * Latest Linux spot price per `<instanceType>:<zone>` (DescribeSpotPriceHistory from `now`,
 * paginated; the newest entry wins).
 */
export async function describeSpotPrices(ec2: EC2Client, now: Date): Promise<Map<string, number>> {
  const latest = new Map<string, { price: number; at: number }>();
  let nextToken: string | undefined;
  do {
    const page = await call('ec2:DescribeSpotPriceHistory', () =>
      ec2.send(
        new DescribeSpotPriceHistoryCommand({
          ProductDescriptions: ['Linux/UNIX', 'Linux/UNIX (Amazon VPC)'],
          StartTime: now,
          MaxResults: 1000,
          ...(nextToken ? { NextToken: nextToken } : {}),
        }),
      ),
    );
    for (const entry of page.SpotPriceHistory ?? []) {
      if (!entry.InstanceType || !entry.AvailabilityZone || entry.SpotPrice === undefined) continue;
      const price = Number.parseFloat(entry.SpotPrice);
      if (!Number.isFinite(price)) continue;
      const key = `${entry.InstanceType}:${entry.AvailabilityZone}`;
      const at = entry.Timestamp?.getTime() ?? 0;
      const current = latest.get(key);
      if (current === undefined || at >= current.at) latest.set(key, { price, at });
    }
    nextToken = page.NextToken || undefined;
  } while (nextToken);
  return new Map([...latest].map(([key, { price }]) => [key, price]));
}

/**
 * The region whose endpoint serves the AWS Pricing API for `region`: the API lives in a few
 * regions only (ap-south-1 for Asia Pacific, eu-central-1 for Europe, cn-northwest-1 for China,
 * us-east-1 for the rest).
 */
export function pricingEndpointRegion(region: string): string {
  if (region.startsWith('cn-')) return 'cn-northwest-1';
  if (region.startsWith('ap-')) return 'ap-south-1';
  if (region.startsWith('eu-')) return 'eu-central-1';
  return 'us-east-1';
}

/** The GetProducts filters of Linux, shared-tenancy, on-demand EC2 compute in `region`. */
export function onDemandPriceFilters(region: string, productFamily: string): Filter[] {
  const match = (Field: string, Value: string): Filter => ({ Type: 'TERM_MATCH', Field, Value });
  return [
    match('regionCode', region),
    match('serviceCode', 'AmazonEC2'),
    match('productFamily', productFamily),
    match('operatingSystem', 'Linux'),
    match('preInstalledSw', 'NA'),
    match('capacitystatus', 'Used'),
    match('tenancy', 'Shared'),
    match('marketoption', 'OnDemand'),
  ];
}

/**
 * Instance type → USD per hour from GetProducts' PriceList entries (each a JSON document with
 * `product.attributes.instanceType` and `terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`).
 * Entries without an hourly USD price above zero are skipped; the lowest price of a type wins.
 */
export function parseOnDemandPriceList(entries: readonly string[]): Map<string, number> {
  const prices = new Map<string, number>();
  for (const entry of entries) {
    const document = JSON.parse(entry) as {
      product?: { attributes?: { instanceType?: string } };
      terms?: { OnDemand?: Record<string, { priceDimensions?: Record<string, PriceDimension> }> };
    };
    const type = document.product?.attributes?.instanceType;
    if (!type) continue;
    for (const term of Object.values(document.terms?.OnDemand ?? {})) {
      for (const dimension of Object.values(term.priceDimensions ?? {})) {
        const usd = Number.parseFloat(dimension.pricePerUnit?.USD ?? '');
        if (dimension.unit !== 'Hrs' || !Number.isFinite(usd) || usd <= 0) continue;
        const known = prices.get(type);
        if (known === undefined || usd < known) prices.set(type, usd);
      }
    }
  }
  return prices;
}

interface PriceDimension {
  readonly unit?: string;
  readonly pricePerUnit?: { readonly USD?: string };
}

/**
 * On-demand prices from the AWS Pricing API (GetProducts, paginated; virtualised and bare-metal
 * compute), over the generated table: types the API does not price keep the table's price.
 * Errors propagate, so the catalog refresh falls back to the table alone and says so.
 */
export function makePricingApiOnDemandPrices(pricing: PricingClient): OnDemandPriceSource {
  return {
    async onDemandPrices(region) {
      const fromApi = new Map<string, number>();
      for (const family of ['Compute Instance', 'Compute Instance (bare metal)']) {
        let nextToken: string | undefined;
        do {
          const page = await call('pricing:GetProducts', () =>
            pricing.send(
              new GetProductsCommand({
                ServiceCode: 'AmazonEC2',
                Filters: onDemandPriceFilters(region, family),
                MaxResults: 100,
                ...(nextToken ? { NextToken: nextToken } : {}),
              }),
            ),
          );
          for (const [type, price] of parseOnDemandPriceList(page.PriceList ?? [])) {
            const known = fromApi.get(type);
            if (known === undefined || price < known) fromApi.set(type, price);
          }
          nextToken = page.NextToken || undefined;
        } while (nextToken);
      }
      const table = await fallbackOnDemandPrices.onDemandPrices(region);
      return new Map([...table, ...fromApi]);
    },
  };
}
