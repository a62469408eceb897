import { z } from 'zod';

// What the in-cluster shim sends the provisioner's queue about Nodes and NodeClaims: one starts
// being deleted (a deletionTimestamp appears), and the provisioner plans at once for the pods that
// will need a place while the drain waits; or a standalone NodeClaim appears, and the provisioner
// launches it. Names are for the log; the run reads the cluster itself.

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

/** Version tag of the standalone NodeClaims the shim reports on the pod-event queue. */
export const standaloneNodeClaimVersion = 'flotilla.standalone-nodeclaim/v1';

/**
 * What the shim sends when a standalone NodeClaim (no `karpenter.sh/nodepool` label) appears
 * without an instance: the provisioner's run launches it at once rather than at its next schedule.
 * Names are for the log; the run reads the NodeClaim from the API server itself.
 */
export const standaloneNodeClaimSchema = z
  .object({
    version: z.literal(standaloneNodeClaimVersion),
    kind: z.literal('StandaloneNodeClaim'),
    cluster: z.string().min(1),
    name: z.string().min(1),
    uid: z.string().min(1),
    /** When the shim saw it (RFC 3339). */
    observedAt: z.iso.datetime(),
  })
  .strict();

export type StandaloneNodeClaimMessage = z.infer<typeof standaloneNodeClaimSchema>;
