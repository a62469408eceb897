// What the shim's watches and a Lambda's NodeClaim catch-up both rely on to prove a read current:
// the API server's revision now, from a consistent list that selects nothing (a probe), and
// resourceVersions compared as numbers, which etcd's are.

/** Selects no object: a probe asks only for the API server's revision. */
export const PROBE_SELECTOR = 'metadata.name=flotilla-progress-probe.invalid-name-';

/** A resourceVersion as a number, when it is one (etcd's are); undefined otherwise. */
export function revisionOf(resourceVersion: unknown): bigint | undefined {
  return typeof resourceVersion === 'string' && /^\d{1,30}$/.test(resourceVersion)
    ? BigInt(resourceVersion)
    : undefined;
}
