import { type Pod, ValidationError } from '../core/index.ts';
import { toPod } from './pod.ts';
import { podLifecycle } from './pod-disruption-info.ts';
import { joinPod, type SplitPod } from './pod-templates.ts';

/** Converts pods template by template: each distinct template once, then each pod's own fields. */
export interface PodReader {
  /**
   * The pod in domain terms, equal to `toPod` of the whole pod (without volume topology).
   * @throws ValidationError naming the pod and the field, as toPod does.
   */
  read(pod: SplitPod): Pod;
  /** Distinct templates converted so far. */
  templates(): number;
  /** Template key → converted template, for the next reader to start from. */
  converted(): ReadonlyMap<string, Pod | ValidationError>;
}

const PLACEHOLDER = { name: 'template', uid: 'template' } as const;

/** `seed`: templates an earlier reader converted; this one keeps those it uses. */
export function makePodReader(seed?: ReadonlyMap<string, Pod | ValidationError>): PodReader {
  const converted = new Map<string, Pod | ValidationError>();
  return {
    read({ template, key, instance }) {
      let base = converted.get(key);
      if (base === undefined && seed !== undefined) {
        base = seed.get(key);
        if (base !== undefined) converted.set(key, base);
      }
      if (base === undefined) {
        try {
          base = toPod(joinPod(template, PLACEHOLDER) as never);
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          base = error;
        }
        converted.set(key, base);
      }
      // A template that does not convert, or instance fields of the wrong type: the whole pod
      // converts again, so that the error names this pod and its field. So does a pod whose
      // status may change its containers' requests (in-place resize, rare): its own containers.
      if (
        base instanceof ValidationError ||
        instance.resize !== undefined ||
        typeof instance.name !== 'string' ||
        typeof instance.uid !== 'string' ||
        instance.name === '' ||
        instance.uid === '' ||
        !isTime(instance.creationTimestamp) ||
        !isTime(instance.startTime) ||
        !isTime(instance.deletionTimestamp)
      ) {
        return toPod(joinPod(template, instance) as never);
      }
      const createdAtMs = timeMs(instance.creationTimestamp);
      const startedAtMs = timeMs(instance.startTime);
      const deletedAtMs = timeMs(instance.deletionTimestamp);
      const { disruption, ...rest } = base;
      const lifecycle = podLifecycle(instance.phase, instance.ready);
      const own = {
        ...(startedAtMs === undefined ? {} : { startedAtMs }),
        ...(deletedAtMs === undefined ? {} : { deletedAtMs }),
        ...lifecycle,
      };
      const info = Object.keys(own).length === 0 ? disruption : { ...disruption, ...own };
      return {
        ...rest,
        uid: instance.uid,
        name: instance.name,
        ...(createdAtMs === undefined ? {} : { createdAtMs }),
        ...(info === undefined ? {} : { disruption: info }),
      };
    },
    templates: () => converted.size,
    converted: () => converted,
  };
}

function isTime(value: unknown): boolean {
  return value == null || (typeof value === 'string' && !Number.isNaN(Date.parse(value)));
}

function timeMs(value: unknown): number | undefined {
  return typeof value === 'string' ? Date.parse(value) : undefined;
}
