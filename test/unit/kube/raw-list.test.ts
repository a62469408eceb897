import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ListItemSplitter, requestPath } from '../../../shared/adapters/kube/raw.ts';

// The streaming list reader: items cut out of a list's JSON however the text arrives in pieces.

function split(text: string, cuts: readonly number[]): { items: unknown[]; head: unknown } {
  const items: unknown[] = [];
  const splitter = new ListItemSplitter((json) => items.push(JSON.parse(json)));
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    splitter.push(text.slice(from, cut));
    from = cut;
  }
  splitter.push(text.slice(from));
  return { items, head: JSON.parse(splitter.head()) };
}

const item = fc.record({
  metadata: fc.record({ name: fc.string(), labels: fc.dictionary(fc.string(), fc.string()) }),
  spec: fc.record({ list: fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant({ '[': ']{' }))) }),
});

describe('ListItemSplitter', () => {
  it('hands over every item whole, strings with brackets, quotes and escapes included, in any pieces', () => {
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 8 }),
        fc.string(),
        fc.array(fc.nat({ max: 2_000 }), { maxLength: 10 }),
        (items, rv, cuts) => {
          const list = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: rv }, items };
          const text = JSON.stringify(list, null, items.length % 2 === 0 ? 0 : 2);
          const out = split(
            text,
            cuts.map((c) => c % (text.length + 1)),
          );
          expect(out.items).toEqual(items);
          expect(out.head).toEqual({ ...list, items: [] });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves the head unparseable when the list is cut short, so a partial list is never taken for whole', () => {
    const text = JSON.stringify({ kind: 'PodList', metadata: {}, items: [{ a: 1 }, { b: 2 }] });
    const items: unknown[] = [];
    const splitter = new ListItemSplitter((json) => items.push(JSON.parse(json)));
    splitter.push(text.slice(0, text.indexOf('{"b"') + 3));
    expect(items).toEqual([{ a: 1 }]);
    expect(() => JSON.parse(splitter.head())).toThrow();
  });

  it('encodes the query of a request', () => {
    expect(
      requestPath({
        path: '/api/v1/pods',
        query: { fieldSelector: 'spec.nodeName=,status.phase!=Failed', limit: undefined, watch: true },
      }),
    ).toBe('/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%21%3DFailed&watch=true');
  });
});
