import { describe, expect, it } from 'vitest';
import { overlayPriorities } from '../../../shared/adapters/aws/fleet-plan.ts';
import type { Offering } from '../../../shared/core/index.ts';

const offering = (zone: string, priceUsdPerHour: number, priceOverlaid?: true): Offering => ({
  zone,
  capacityType: 'on-demand',
  priceUsdPerHour,
  available: true,
  ...(priceOverlaid === undefined ? {} : { priceOverlaid }),
});

describe('overlayPriorities', () => {
  it('leaves EC2 to choose by its own prices when no overlay priced an offering', () => {
    expect(overlayPriorities([{ offerings: [offering('a', 0.2), offering('b', 0.1)] }])).toBeUndefined();
  });

  it('ranks every offering by price, 0 first, once an overlay priced one', () => {
    const cheap = offering('a', 0.001, true);
    const mid = offering('b', 0.1);
    const dear = offering('c', 0.2);
    const priorities = overlayPriorities([{ offerings: [dear, mid] }, { offerings: [cheap] }]);
    expect([priorities?.get(cheap), priorities?.get(mid), priorities?.get(dear)]).toEqual([0, 1, 2]);
  });
});
