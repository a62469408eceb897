import { isRecord } from './fields.ts';

// What the shim keeps of a Node or a NodeClaim in the cluster summary (summary-document.ts), and
// what a warm Lambda container keeps of the NodeClaims it caught up with (nodeclaim-catch-up.ts).

/** A Node pruned to what Flotilla reads (its images, addresses and node info go). */
export function pruneNode(raw: unknown): unknown {
  if (!isRecord(raw)) return raw;
  const meta = isRecord(raw['metadata']) ? raw['metadata'] : undefined;
  const spec = isRecord(raw['spec']) ? raw['spec'] : undefined;
  const status = isRecord(raw['status']) ? raw['status'] : undefined;
  const keep = (from: Readonly<Record<string, unknown>> | undefined, keys: readonly string[]) => {
    const out: Record<string, unknown> = {};
    for (const key of keys) if (from?.[key] !== undefined) out[key] = from[key];
    return out;
  };
  const conditions = status?.['conditions'];
  return {
    metadata: meta === undefined ? raw['metadata'] : withoutManagedFields(meta),
    spec: spec === undefined ? raw['spec'] : keep(spec, ['providerID', 'taints', 'unschedulable']),
    status:
      status === undefined
        ? raw['status']
        : {
            ...keep(status, ['capacity', 'allocatable']),
            ...(Array.isArray(conditions)
              ? {
                  conditions: conditions.map((c) =>
                    isRecord(c) ? keep(c, ['type', 'status', 'lastTransitionTime']) : c,
                  ),
                }
              : conditions === undefined
                ? {}
                : { conditions }),
          },
  };
}

function withoutManagedFields(meta: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { managedFields: _managed, ...rest } = meta;
  return rest;
}

/** A NodeClaim without its managed fields. */
export function pruneNodeClaim(raw: unknown): unknown {
  if (!isRecord(raw) || !isRecord(raw['metadata'])) return raw;
  return { ...raw, metadata: withoutManagedFields(raw['metadata']) };
}
