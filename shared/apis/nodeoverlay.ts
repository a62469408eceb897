import { z } from 'zod';
import {
  Label,
  type NodeOverlay,
  OVERLAY_RESTRICTED_RESOURCES,
  parsePriceChange,
  parseResourceList,
  Requirements,
  ValidationError,
} from '../core/index.ts';
import type { Condition } from '../ports/cloud.ts';
import type { ClusterNodeOverlay } from '../ports/cluster.ts';
import { conditionSchema } from './ec2nodeclass.ts';
import { objectName, toNodeSelectorRequirements } from './fields.ts';

// NodeOverlay (karpenter.sh/v1alpha1): parsing into the port's ClusterNodeOverlay. An overlay
// that does not parse or fails Karpenter's runtime validation is still returned, with `invalid`
// saying why, so that its status can say so and the others still apply. Pure.

export const NODE_OVERLAY_VERSION = 'v1alpha1';

/** Keys of the karpenter.k8s.aws domain a NodeOverlay may select on (as Karpenter's CRD lists them). */
const AWS_OVERLAY_KEYS: ReadonlySet<string> = new Set(
  [
    'ec2nodeclass',
    'instance-encryption-in-transit-supported',
    'instance-category',
    'instance-hypervisor',
    'instance-family',
    'instance-generation',
    'instance-local-nvme',
    'instance-size',
    'instance-cpu',
    'instance-cpu-manufacturer',
    'instance-cpu-sustained-clock-speed-mhz',
    'instance-memory',
    'instance-ebs-bandwidth',
    'instance-network-bandwidth',
    'instance-gpu-name',
    'instance-gpu-manufacturer',
    'instance-gpu-count',
    'instance-gpu-memory',
    'instance-accelerator-name',
    'instance-accelerator-manufacturer',
    'instance-accelerator-count',
    'instance-capability-flex',
  ].map((k) => `karpenter.k8s.aws/${k}`),
);

const overlaySchema = z.object({
  metadata: z.object({ name: z.string().min(1), generation: z.number().int().exactOptional() }).loose(),
  spec: z
    .object({
      requirements: z.array(z.unknown()),
      price: z.string().exactOptional(),
      priceAdjustment: z.string().exactOptional(),
      capacity: z.record(z.string(), z.union([z.string(), z.number()])).exactOptional(),
      weight: z.number().int().min(1).max(10000).exactOptional(),
    })
    .loose(),
  status: z
    .object({ conditions: z.array(conditionSchema).default([]) })
    .loose()
    .exactOptional(),
});

/** Why a requirement key may not be used in an overlay; undefined when it may. */
function restrictedKey(key: string): string | undefined {
  const domain = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
  if (key === Label.hostname) return `label "${key}" is restricted`;
  if (domain.endsWith('karpenter.sh') && key !== Label.capacityType && key !== Label.nodePool) {
    return `label domain "karpenter.sh" is restricted (${key})`;
  }
  if (domain.endsWith('karpenter.k8s.aws') && !AWS_OVERLAY_KEYS.has(key)) {
    return `label domain "karpenter.k8s.aws" is restricted (${key})`;
  }
  return undefined;
}

/** The overlay a valid spec describes. @throws ValidationError naming the field. */
function toNodeOverlay(name: string, spec: z.infer<typeof overlaySchema>['spec']): NodeOverlay {
  const object = `nodeOverlay "${name}"`;
  const requirements = toNodeSelectorRequirements(spec.requirements, object, 'spec.requirements');
  requirements.forEach((r, i) => {
    const restricted = restrictedKey(r.key);
    if (restricted !== undefined)
      throw new ValidationError(object, `spec.requirements[${i}].key`, restricted);
    if (r.operator === 'NotIn' && (r.values ?? []).length === 0) {
      throw new ValidationError(
        object,
        `spec.requirements[${i}]`,
        `key ${r.key}: operator NotIn needs a value`,
      );
    }
  });
  Requirements.parse(requirements, { object, field: 'spec.requirements' });
  const price = parsePriceChange(spec.price, spec.priceAdjustment);
  if (price !== undefined && 'problem' in price) throw new ValidationError(object, 'spec', price.problem);
  let capacity: NodeOverlay['capacity'];
  if (spec.capacity !== undefined) {
    for (const key of Object.keys(spec.capacity)) {
      if (OVERLAY_RESTRICTED_RESOURCES.has(key)) {
        throw new ValidationError(
          object,
          `spec.capacity.${key}`,
          `resource "${key}" is restricted: only extended resources may be added`,
        );
      }
    }
    capacity = parseResourceList(spec.capacity, { object, field: 'spec.capacity' });
  }
  return {
    name,
    weight: spec.weight ?? 0,
    requirements,
    ...(price === undefined ? {} : { price }),
    ...(capacity === undefined ? {} : { capacity }),
  };
}

/**
 * Reads a NodeOverlay. Anything wrong with its spec (shape, restricted keys or resources, both
 * price fields, a malformed quantity) makes it `invalid` with the reason; it is never dropped.
 * @throws ValidationError only when the object has no name (nothing could report on it).
 */
export function parseNodeOverlay(raw: unknown): ClusterNodeOverlay {
  const parsed = overlaySchema.safeParse(raw);
  if (!parsed.success) {
    const meta = z
      .object({ metadata: z.object({ name: z.string().min(1) }).loose() })
      .loose()
      .safeParse(raw);
    if (!meta.success)
      throw new ValidationError(objectName('nodeOverlay', raw, false), 'metadata.name', 'missing');
    const issue = parsed.error.issues[0];
    const field = issue === undefined ? 'spec' : issue.path.join('.');
    return {
      name: meta.data.metadata.name,
      conditions: readConditions(raw),
      invalid: `nodeOverlay "${meta.data.metadata.name}": ${field}: ${issue?.message ?? 'malformed'}`,
    };
  }
  const { metadata, spec, status } = parsed.data;
  const base = {
    name: metadata.name,
    ...(metadata.generation === undefined ? {} : { generation: metadata.generation }),
    conditions: (status?.conditions ?? []) as Condition[],
  };
  try {
    return { ...base, overlay: toNodeOverlay(metadata.name, spec) };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { ...base, invalid: error.message };
  }
}

function readConditions(raw: unknown): Condition[] {
  const status = z
    .object({ status: z.object({ conditions: z.array(conditionSchema) }).loose() })
    .loose()
    .safeParse(raw);
  return status.success ? (status.data.status.conditions as Condition[]) : [];
}
