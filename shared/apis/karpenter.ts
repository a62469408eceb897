import { z } from 'zod';
import { parseResourceList, type ResourceList, ValidationError } from '../core/index.ts';
import { conditionSchema } from './ec2nodeclass.ts';
import { objectName } from './fields.ts';

// What Karpenter's v1 objects (NodePool, NodeClaim) share: the API group and version, the schemas
// of their common fields, and parsing against a schema into a ValidationError naming the field.
// Pure.

export const KARPENTER_GROUP = 'karpenter.sh';
export const KARPENTER_VERSION = 'v1';

export const stringMap = z.record(z.string(), z.string());
export const quantities = z.record(z.string(), z.union([z.string(), z.number()]));
export const requirement = z.object({
  key: z.string(),
  operator: z.string(),
  values: z.array(z.string()).exactOptional(),
  minValues: z.number().int().exactOptional(),
});
export const taint = z.object({ key: z.string(), value: z.string().exactOptional(), effect: z.string() });
export const nodeClassRef = z.object({ group: z.string(), kind: z.string(), name: z.string() });
export const condition = conditionSchema;
/** The spec fields a NodeClaim and a NodePool's NodeClaim template share (Karpenter's NodeClaimTemplateSpec). */
export const nodeClaimSpecFields = {
  requirements: z.array(requirement),
  taints: z.array(taint).exactOptional(),
  startupTaints: z.array(taint).exactOptional(),
  expireAfter: z.string().exactOptional(),
  terminationGracePeriod: z.string().exactOptional(),
  nodeClassRef,
};
export const metadata = z
  .object({
    name: z.string(),
    uid: z.string(),
    resourceVersion: z.string().exactOptional(),
    generation: z.number().int().exactOptional(),
    creationTimestamp: z.string().exactOptional(),
    deletionTimestamp: z.string().exactOptional(),
    labels: stringMap.exactOptional(),
    annotations: stringMap.exactOptional(),
    finalizers: z.array(z.string()).exactOptional(),
  })
  .loose();

export function parseWith<T>(schema: z.ZodType<T>, raw: unknown, kind: string): T {
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue?.path.join('.') || '(root)';
    const rest =
      result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more problems)` : '';
    throw new ValidationError(objectName(kind, raw, false), field, `${issue?.message ?? 'invalid'}${rest}`, {
      cause: result.error,
    });
  }
  return result.data;
}

export function resources(
  raw: Record<string, string | number> | undefined,
  object: string,
  field: string,
): ResourceList | undefined {
  // The CRDs admit a sign; a negative amount is none.
  return raw === undefined ? undefined : parseResourceList(raw, { object, field, negative: 'zero' });
}
