import { describe, expect, it } from 'vitest';
import { makeVersionedConversions } from '../../../shared/apis/versioned-conversions.ts';

// A warm container's conversions: an object of the same uid and resourceVersion is not converted
// again; a changed one is; one no longer listed is dropped.

const raw = (uid: string, resourceVersion: string, value: number) => ({
  metadata: { uid, resourceVersion },
  value,
});

describe('conversions kept between reads', () => {
  it('converts again only what changed, and keeps only what the last read saw', () => {
    const converted: string[] = [];
    const conversions = makeVersionedConversions((r) => {
      const o = r as ReturnType<typeof raw>;
      converted.push(`${o.metadata.uid}@${o.metadata.resourceVersion}`);
      return { doubled: o.value * 2 };
    });
    const first = conversions.read((convert) => [raw('a', '1', 1), raw('b', '2', 2)].map(convert));
    const second = conversions.read((convert) => [raw('a', '1', 1), raw('b', '3', 5)].map(convert));
    expect(second).toEqual([{ doubled: 2 }, { doubled: 10 }]);
    expect(second[0]).toBe(first[0]);
    expect(converted).toEqual(['a@1', 'b@2', 'b@3']);
    conversions.read((convert) => [raw('b', '3', 5)].map(convert));
    expect(conversions.size()).toBe(1);
    // `a` was dropped: listed again, it converts again.
    conversions.read((convert) => [raw('a', '1', 1)].map(convert));
    expect(converted).toEqual(['a@1', 'b@2', 'b@3', 'a@1']);
  });

  it('converts every time an object without uid or resourceVersion, and never keeps a failure', () => {
    let calls = 0;
    const conversions = makeVersionedConversions((r) => {
      calls += 1;
      if ((r as { value?: number }).value === undefined) throw new Error('no value');
      return (r as { value: number }).value;
    });
    const read = () =>
      conversions.read((convert) => {
        const out: unknown[] = [convert({ value: 7 })];
        try {
          convert({ metadata: { uid: 'x', resourceVersion: '1' } });
        } catch (error) {
          out.push((error as Error).message);
        }
        return out;
      });
    expect(read()).toEqual([7, 'no value']);
    expect(read()).toEqual([7, 'no value']);
    expect(calls).toBe(4);
    expect(conversions.size()).toBe(0);
  });
});
