import { isMap, isScalar, isSeq } from 'yaml';

// Where a field is in a YAML document, for problems that name a line and a column.

/**
 * The offset of the deepest node on `p` that exists in the document node `root`: the key of a
 * map entry, or a list item. A path into a missing field gives the object that lacks it.
 */
export function offsetOf(root: unknown, p: readonly (string | number)[]): number {
  let node = root;
  let offset = rangeStart(root);
  for (const segment of p) {
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (pair === undefined) break;
      offset = rangeStart(pair.key, offset);
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined) break;
      offset = rangeStart(item, offset);
      node = item;
    } else {
      break;
    }
  }
  return offset;
}

function rangeStart(node: unknown, fallback = 0): number {
  const range = (node as { range?: readonly number[] } | null | undefined)?.range;
  return range?.[0] ?? fallback;
}
