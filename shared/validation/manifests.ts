import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { modelSchema } from '../apis/schema/model-schema.ts';
import { checkSchema, type SchemaProblem, type SchemaProps, withDefaults } from '../apis/schema/openapi.ts';

// Checks Kubernetes manifests as the API server would on `kubectl apply --validate=strict`: the
// Karpenter kinds against the CustomResourceDefinitions Flotilla ships (infra/crds), the built-in
// kinds a cluster snapshot holds against Kubernetes' own models.

const CRD_DIR = path.resolve(import.meta.dirname, '..', '..', 'infra', 'crds');

/** The built-in kinds checked, by `apiVersion/kind`, with their model. */
const BUILT_IN: Readonly<Record<string, string>> = {
  'v1/Pod': 'V1Pod',
  'v1/Node': 'V1Node',
  'v1/Namespace': 'V1Namespace',
  'apps/v1/DaemonSet': 'V1DaemonSet',
};

/** A DNS subdomain (RFC 1123), what a cluster-scoped object's name must be. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

interface CrdDocument {
  readonly spec: {
    readonly group: string;
    readonly names: { readonly kind: string };
    readonly versions: readonly {
      readonly name: string;
      readonly schema: { readonly openAPIV3Schema: SchemaProps };
    }[];
  };
}

let crds: ReadonlyMap<string, SchemaProps> | undefined;

/** The schemas of the shipped CRDs by `group/version/kind`, read once. */
export function crdSchemas(): ReadonlyMap<string, SchemaProps> {
  if (crds === undefined) {
    const out = new Map<string, SchemaProps>();
    for (const file of readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(path.join(CRD_DIR, file), 'utf8'))) {
        const crd = doc.toJS() as CrdDocument | null;
        if (crd?.spec?.versions === undefined) continue;
        for (const version of crd.spec.versions) {
          out.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, version.schema.openAPIV3Schema);
        }
      }
    }
    crds = out;
  }
  return crds;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Whether `checkManifest` knows the schema of this kind. */
export function isCheckedKind(apiVersion: unknown, kind: unknown): boolean {
  const key = `${String(apiVersion)}/${String(kind)}`;
  return crdSchemas().has(key) || BUILT_IN[key] !== undefined;
}

export interface ManifestCheckOptions {
  /** The object before a change, for the CRDs' transition rules. */
  readonly old?: unknown;
  /** The object may leave out its name (a pod template, a change). @default false */
  readonly nameOptional?: boolean;
}

/**
 * Every problem of one manifest against its kind's schema: unknown fields, types, formats,
 * patterns, enums, bounds, required fields and the CRD's CEL rules. Paths are inside the
 * manifest. A kind without a schema here gets no problems: the caller decides what it accepts.
 */
export function checkManifest(value: unknown, options: ManifestCheckOptions = {}): SchemaProblem[] {
  if (!isObject(value)) return [{ path: [], message: 'must be a Kubernetes object (a mapping with kind)' }];
  const key = `${String(value['apiVersion'])}/${String(value['kind'])}`;
  const builtIn = BUILT_IN[key];
  const schema = builtIn === undefined ? crdSchemas().get(key) : modelSchema(builtIn);
  if (schema === undefined) return [];
  const problems = checkSchema(value, schema, {
    skipRootFields: ['metadata'],
    ...(options.old === undefined ? {} : { old: options.old }),
  });
  const metadata = value['metadata'];
  if (metadata === undefined || metadata === null) {
    if (options.nameOptional !== true)
      problems.unshift({ path: [], message: 'missing required field "metadata"' });
    return problems;
  }
  const metaProblems = checkSchema(metadata, modelSchema('V1ObjectMeta')).map((p) => ({
    path: ['metadata', ...p.path],
    message: p.message,
  }));
  if (isObject(metadata) && options.nameOptional !== true) {
    const name = metadata['name'];
    if (name === undefined || name === null || name === '') {
      metaProblems.push({ path: ['metadata'], message: 'missing required field "name"' });
    } else if (
      builtIn === undefined &&
      typeof name === 'string' &&
      (!DNS_SUBDOMAIN.test(name) || name.length > 253)
    ) {
      metaProblems.push({
        path: ['metadata', 'name'],
        message: `${JSON.stringify(name)} must be a lowercase RFC 1123 subdomain (letters, digits, - and .)`,
      });
    }
  }
  return [...metaProblems, ...problems];
}

/**
 * The manifest as the API server stores it: the CRD's defaults filled in (e.g. a NodePool's
 * `disruption.consolidateAfter`), so a later merge patch applies to what a cluster would hold.
 */
export function withStoredDefaults<T>(value: T): T {
  if (!isObject(value)) return value;
  const schema = crdSchemas().get(`${String(value['apiVersion'])}/${String(value['kind'])}`);
  return schema === undefined ? value : (withDefaults(value, schema) as T);
}

/** Every problem of a pod spec (a Deployment's or Job's template), paths inside the spec. */
export function checkPodSpec(spec: unknown): SchemaProblem[] {
  return checkSchema(spec, modelSchema('V1PodSpec'));
}
