import { z } from 'zod';

// What the in-cluster shim sends the provisioner's queue when a Node or a NodeClaim starts being
// deleted (a deletionTimestamp appears): the provisioner then plans at once for the pods that will
// need a place, while the drain waits. Names are for the log; the run reads the cluster itself.

/** Version tag of the deletion events on the pod-event queue. */
export const nodeDeletionVersion = 'flotilla.node-deletion/v1';

export const nodeDeletionSchema = z
  .object({
    version: z.literal(nodeDeletionVersion),
    kind: z.literal('NodeDeleting'),
    cluster: z.string().min(1),
    /** What got its deletionTimestamp. */
    object: z.enum(['Node', 'NodeClaim']),
    name: z.string().min(1),
    uid: z.string().min(1),
    /** When the shim saw the deletion begin (RFC 3339). */
    observedAt: z.iso.datetime(),
  })
  .strict();

export type NodeDeletion = z.infer<typeof nodeDeletionSchema>;
