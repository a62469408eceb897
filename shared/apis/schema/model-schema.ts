import * as models from '@kubernetes/client-node';
import type { SchemaProps } from './openapi.ts';

// Schemas of Kubernetes' built-in types (PodSpec, ObjectMeta, …) built from the OpenAPI models
// @kubernetes/client-node is generated from, so built-in objects are held to the fields and types
// the API server declares, as `kubectl apply --validate=strict` holds them.

interface Attribute {
  readonly baseName: string;
  readonly type: string;
  readonly format: string;
}
type Model = { getAttributeTypeMap(): readonly Attribute[] };

/** Maps of resource quantities: a quantity may be written as a number too (`cpu: 2`). */
const QUANTITY_MAPS = new Set(['requests', 'limits', 'overhead', 'capacity', 'allocatable', 'hard', 'used']);
const QUANTITY: SchemaProps = { format: 'quantity' };
const ANY: SchemaProps = { 'x-kubernetes-preserve-unknown-fields': true };

const cache = new Map<string, SchemaProps>();

function typeSchema(type: string, format: string, name: string): SchemaProps {
  const array = /^Array<(.+)>$/.exec(type);
  if (array !== null) return { type: 'array', items: typeSchema(array[1] ?? 'any', '', '') };
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map !== null) {
    const value = map[1] ?? 'any';
    return {
      type: 'object',
      additionalProperties:
        value === 'string' && QUANTITY_MAPS.has(name) ? QUANTITY : typeSchema(value, '', ''),
    };
  }
  switch (type) {
    case 'string':
      return { type: 'string' };
    case 'number':
      return format === 'int32' || format === 'int64' ? { type: 'integer', format } : { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'Date':
      return { type: 'string', format: 'date-time' };
    case 'IntOrString':
      return { 'x-kubernetes-int-or-string': true };
    case 'any':
      return ANY;
    default:
      return modelSchema(type);
  }
}

/**
 * The schema of a built-in type by its client-node model name, e.g. `V1PodSpec`. Unknown names
 * give a schema that accepts anything (never a false refusal).
 */
export function modelSchema(modelName: string): SchemaProps {
  const cached = cache.get(modelName);
  if (cached !== undefined) return cached;
  const model = (models as unknown as Record<string, Model | undefined>)[modelName];
  if (typeof model?.getAttributeTypeMap !== 'function') return ANY;
  const properties: Record<string, SchemaProps> = {};
  const schema: SchemaProps = { type: 'object', properties };
  cache.set(modelName, schema);
  for (const attribute of model.getAttributeTypeMap()) {
    properties[attribute.baseName] = typeSchema(attribute.type, attribute.format, attribute.baseName);
  }
  return schema;
}
