import { z } from 'zod';
import { parsePercent, quantitySign } from '../core/index.ts';
import type { KubeletSpec, ManagedKubeletField } from '../ports/cloud.ts';

// EC2NodeClass `spec.kubelet`, an open map since Karpenter v1.15. The managed fields are read into
// their types when Flotilla can count with their values; every other value is kept as the manifest
// sets it, so that the status controller can say what is wrong with it (or, on AL2023, pass it on).

const integer = z.number().int();

/** A reservation Flotilla can count: a quantity that is not negative. */
const reservation = z.string().refine((v) => (quantitySign(v) ?? -1) >= 0);

/** An eviction threshold Flotilla can count: a percentage, or a quantity that is not negative. */
const threshold = z.string().refine((v) => parsePercent(v) !== undefined || (quantitySign(v) ?? -1) >= 0);

/** The managed fields and the values Flotilla reads for each. */
const MANAGED: { readonly [F in ManagedKubeletField]-?: z.ZodType<NonNullable<KubeletSpec[F]>> } = {
  clusterDNS: z.array(z.string()),
  maxPods: integer,
  podsPerCore: integer,
  systemReserved: z.record(z.string(), reservation),
  kubeReserved: z.record(z.string(), reservation),
  evictionHard: z.record(z.string(), threshold),
  evictionSoft: z.record(z.string(), threshold),
  evictionSoftGracePeriod: z.record(z.string(), z.string()),
  evictionMaxPodGracePeriod: integer,
  imageGCHighThresholdPercent: integer,
  imageGCLowThresholdPercent: integer,
  cpuCFSQuota: z.boolean(),
};

function isManaged(field: string): field is ManagedKubeletField {
  return Object.hasOwn(MANAGED, field);
}

/**
 * `spec.kubelet` as Flotilla reads it. Never fails: a managed field whose value does not fit goes
 * to `unreadable`, any other field to `unmanaged`, both as they are. A null value unsets its field,
 * as it does for kubelet.
 */
export function parseKubelet(raw: Readonly<Record<string, unknown>>): KubeletSpec {
  const managed: [ManagedKubeletField, unknown][] = [];
  const unmanaged: [string, unknown][] = [];
  const unreadable: [string, unknown][] = [];
  for (const [field, value] of Object.entries(raw)) {
    if (value === null || value === undefined) continue;
    if (!isManaged(field)) {
      unmanaged.push([field, value]);
      continue;
    }
    const parsed = MANAGED[field].safeParse(value);
    if (parsed.success) managed.push([field, parsed.data]);
    else unreadable.push([field, value]);
  }
  return {
    // Each value was read by its own field's schema above.
    ...(Object.fromEntries(managed) as Omit<KubeletSpec, 'unmanaged' | 'unreadable'>),
    ...(unmanaged.length === 0 ? {} : { unmanaged: Object.fromEntries(unmanaged) }),
    ...(unreadable.length === 0 ? {} : { unreadable: Object.fromEntries(unreadable) }),
  };
}
