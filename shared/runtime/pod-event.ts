import { z } from 'zod';

/** Version tag of the pod events the shim sends to the pod-event queue. */
export const podEventVersion = 'flotilla.pod-event/v1';

/**
 * What the in-cluster shim sends when a pod becomes unschedulable: enough to trigger and log a
 * provisioning run, never the pod spec (the provisioner reads pods from the API server itself).
 */
export const podEventSchema = z.object({
  version: z.literal(podEventVersion),
  kind: z.literal('PodUnschedulable'),
  cluster: z.string().min(1),
  namespace: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
  /** When the shim saw the pod become unschedulable (RFC 3339). */
  observedAt: z.iso.datetime(),
});

export type PodEvent = z.infer<typeof podEventSchema>;

/** Parses one queue message body; a body of another shape or version is a typed failure, not a throw. */
export function parsePodEvent(body: string): { ok: true; event: PodEvent } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `not JSON: ${(error as Error).message}` };
  }
  const parsed = podEventSchema.safeParse(json);
  if (parsed.success) return { ok: true, event: parsed.data };
  return { ok: false, problem: z.prettifyError(parsed.error) };
}
