import { isRecord } from './fields.ts';

// Conversions kept from one read to the next in a warm Lambda container. An object's uid and
// resourceVersion name its content exactly (the API server changes the resourceVersion with every
// write), so an object read again unchanged is not converted again. Each read keeps only what it
// saw: objects gone or changed since are dropped with the read before.

export interface VersionedConversions<T> {
  /**
   * `read` with a conversion that reuses the previous read's result for an object of the same uid
   * and resourceVersion. A conversion that throws is not kept (the object converts, and fails, again
   * next time, so that its error is reported each time).
   */
  read<R>(read: (convert: (raw: unknown) => T) => R): R;
  /** Objects kept from the last read. */
  size(): number;
}

export function makeVersionedConversions<T>(convert: (raw: unknown) => T): VersionedConversions<T> {
  let kept = new Map<string, { readonly version: string; readonly value: T }>();
  return {
    read(read) {
      const next = new Map<string, { readonly version: string; readonly value: T }>();
      const result = read((raw) => {
        const meta = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : undefined;
        const uid = meta?.['uid'];
        const version = meta?.['resourceVersion'];
        if (typeof uid !== 'string' || uid === '' || typeof version !== 'string' || version === '') {
          return convert(raw);
        }
        const previous = kept.get(uid);
        const value = previous !== undefined && previous.version === version ? previous.value : convert(raw);
        next.set(uid, { version, value });
        return value;
      });
      kept = next;
      return result;
    },
    size: () => kept.size,
  };
}
