import { describe, expect, it } from 'vitest';
import { assumedPriceNote, markAssumedPrices } from '../../../../shared/usecases/disruption/assumed-price.ts';

// The words after a price the catalog only assumes, and `flotilla explain`'s `*` in their place.

describe('assumed prices in words', () => {
  it.each([
    [[], ''],
    [['spot'], ' (assumed spot price)'],
    [['on-demand'], ' (assumed on-demand price)'],
    [['on-demand', 'spot'], ' (assumed spot and on-demand prices)'],
  ])('%j: %j', (types, note) => {
    expect(assumedPriceNote(new Set(types))).toBe(note);
  });

  it('become a mark where explain quotes a reason, every one of them, and nothing else changes', () => {
    const why = `replacements cost $0.1312/h${assumedPriceNote(new Set(['spot']))}, more than 30% of $0.3748/h${assumedPriceNote(new Set(['spot', 'on-demand']))}`;
    expect(markAssumedPrices(why, '*')).toEqual({
      text: 'replacements cost $0.1312/h*, more than 30% of $0.3748/h*',
      marked: true,
    });
    expect(markAssumedPrices('replacements cost $0.1312/h, more than 30% of $0.3748/h', '*')).toEqual({
      text: 'replacements cost $0.1312/h, more than 30% of $0.3748/h',
      marked: false,
    });
  });
});
