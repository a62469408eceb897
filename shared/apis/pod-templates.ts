import { Annotation } from '../core/well-known.ts';
import { isRecord } from './fields.ts';
import { readyStatus } from './pod-disruption-info.ts';
import { pruneResize, resizeStatus } from './pod-resize.ts';

const optionalReady = (ready: string | undefined) => (ready === undefined ? {} : { ready });
const optionalResize = (resize: unknown) => (resize === undefined ? {} : { resize });

// Pods as Flotilla keeps many of them: what a workload's pods share (namespace, labels, owners, the
// scheduling part of the spec, its ResourceClaims) is one template, converted once; what is each
// pod's own (name, uid, times, node, phase, and the container statuses an in-place resize set apart
// from the spec) is a handful of fields. The kube adapter reads large pod lists this way, and the
// shim's cluster summary is written this way. Nothing here throws on a malformed pod: its fields
// travel as they are, and the conversion rejects them as toPod does.

/** The annotations of a pod that Flotilla reads; others are left out of a template. */
const READ_ANNOTATIONS: readonly string[] = [
  Annotation.doNotDisrupt,
  Annotation.configMirror,
  'controller.kubernetes.io/pod-deletion-cost',
];

/** The spec fields a pod's conversions read (scheduling, disruption, drains). */
const SPEC_FIELDS: readonly string[] = [
  'overhead',
  'resources',
  'resourceClaims',
  'nodeSelector',
  'affinity',
  'tolerations',
  'topologySpreadConstraints',
  'priority',
  'priorityClassName',
  'schedulingGates',
  'terminationGracePeriodSeconds',
];

/** What pods of one workload share, pruned to what Flotilla reads. Plain JSON. */
export type PodTemplate = Readonly<Record<string, unknown>>;

/** A pod's own fields, as they came (a malformed value is kept for the conversion to report). */
export interface PodInstance {
  readonly name: unknown;
  readonly uid: unknown;
  readonly creationTimestamp?: unknown;
  readonly deletionTimestamp?: unknown;
  readonly nodeName?: unknown;
  readonly phase?: unknown;
  readonly startTime?: unknown;
  /** The status of its `Ready` condition (not kept in the cluster summary's rows). */
  readonly ready?: unknown;
  /**
   * What its status says of its containers' requests, when that may change them (in-place resize;
   * a PodResize of pod-resize.ts, as it came).
   */
  readonly resize?: unknown;
}

/** A pod split into its template and its own fields. */
export interface SplitPod {
  readonly template: PodTemplate;
  /** The template as JSON: equal keys, equal templates. */
  readonly key: string;
  readonly instance: PodInstance;
}

function pick(source: unknown, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isRecord(source)) return out;
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

function pruneContainers(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((c) => {
    if (!isRecord(c)) return c;
    const resources = isRecord(c['resources'])
      ? pick(c['resources'], ['requests', 'claims'])
      : c['resources'];
    return {
      ...pick(c, ['name', 'ports', 'restartPolicy']),
      ...(resources === undefined ? {} : { resources }),
    };
  });
}

function pruneVolumes(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.flatMap((v) => {
    if (!isRecord(v)) return [v];
    if (v['persistentVolumeClaim'] == null && v['ephemeral'] == null) return [];
    return [pick(v, ['name', 'persistentVolumeClaim', 'ephemeral'])];
  });
}

/** Splits a raw pod (plain JSON as the API server sends it) into template and instance. */
export function splitPod(raw: unknown): SplitPod {
  const pod = isRecord(raw) ? raw : {};
  const meta = isRecord(pod['metadata']) ? pod['metadata'] : {};
  const spec = isRecord(pod['spec']) ? pod['spec'] : undefined;
  const status = isRecord(pod['status']) ? pod['status'] : {};
  const annotations = isRecord(meta['annotations'])
    ? pick(meta['annotations'], READ_ANNOTATIONS)
    : meta['annotations'];
  const owners = Array.isArray(meta['ownerReferences'])
    ? meta['ownerReferences'].map((o) => (isRecord(o) ? pick(o, ['kind', 'name', 'uid', 'controller']) : o))
    : meta['ownerReferences'];
  const volumes = spec === undefined ? undefined : pruneVolumes(spec['volumes']);
  const template: Record<string, unknown> = {
    metadata: {
      ...pick(meta, ['namespace', 'labels']),
      ...(annotations === undefined ? {} : { annotations }),
      ...(owners === undefined ? {} : { ownerReferences: owners }),
    },
    ...(spec === undefined
      ? pod['spec'] === undefined
        ? {}
        : { spec: pod['spec'] }
      : {
          spec: {
            ...(spec['containers'] === undefined ? {} : { containers: pruneContainers(spec['containers']) }),
            ...(spec['initContainers'] === undefined
              ? {}
              : { initContainers: pruneContainers(spec['initContainers']) }),
            ...pick(spec, SPEC_FIELDS),
            ...(volumes === undefined || (Array.isArray(volumes) && volumes.length === 0) ? {} : { volumes }),
          },
        }),
  };
  const instance: PodInstance = {
    name: meta['name'],
    uid: meta['uid'],
    ...(meta['creationTimestamp'] === undefined ? {} : { creationTimestamp: meta['creationTimestamp'] }),
    ...(meta['deletionTimestamp'] === undefined ? {} : { deletionTimestamp: meta['deletionTimestamp'] }),
    ...(spec?.['nodeName'] === undefined ? {} : { nodeName: spec['nodeName'] }),
    ...(status['phase'] === undefined ? {} : { phase: status['phase'] }),
    ...(status['startTime'] === undefined ? {} : { startTime: status['startTime'] }),
    ...optionalReady(readyStatus(status['conditions'])),
    ...optionalResize(pruneResize(spec, status)),
  };
  return { template, key: JSON.stringify(template), instance };
}

/** The pod again, as plain JSON with only the fields Flotilla reads. */
export function joinPod(template: PodTemplate, instance: PodInstance): Record<string, unknown> {
  const meta = isRecord(template['metadata']) ? template['metadata'] : {};
  const spec = template['spec'];
  const { conditions: resizeConditions, ...resize } = resizeStatus(instance.resize);
  const conditions = [
    ...(instance.ready === undefined ? [] : [{ type: 'Ready', status: instance.ready }]),
    ...(Array.isArray(resizeConditions) ? resizeConditions : []),
  ];
  const status: Record<string, unknown> = { ...resize };
  if (instance.phase !== undefined) status['phase'] = instance.phase;
  if (instance.startTime !== undefined) status['startTime'] = instance.startTime;
  if (conditions.length > 0) status['conditions'] = conditions;
  return {
    metadata: {
      ...meta,
      name: instance.name,
      uid: instance.uid,
      ...(instance.creationTimestamp === undefined ? {} : { creationTimestamp: instance.creationTimestamp }),
      ...(instance.deletionTimestamp === undefined ? {} : { deletionTimestamp: instance.deletionTimestamp }),
    },
    ...(spec === undefined
      ? {}
      : {
          spec: isRecord(spec)
            ? { ...spec, ...(instance.nodeName === undefined ? {} : { nodeName: instance.nodeName }) }
            : spec,
        }),
    status,
  };
}
