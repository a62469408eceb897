// Pod priority as Kubernetes' Priority admission plugin resolves it when a pod is created: the
// value of the PriorityClass the pod names (the two built-in system classes always exist), or,
// for a pod naming none, the value of the global default class, else 0. A pod naming a class that
// does not exist is refused. Pure.

/** The built-in PriorityClasses every cluster has, with their values. */
export const SYSTEM_PRIORITY_CLASSES: ReadonlyMap<string, number> = new Map([
  ['system-node-critical', 2_000_001_000],
  ['system-cluster-critical', 2_000_000_000],
]);

/** The highest value a PriorityClass other than the built-in ones may have. */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;

/** The prefix Kubernetes reserves for the built-in PriorityClasses' names. */
export const SYSTEM_PRIORITY_CLASS_PREFIX = 'system-';

/** A PriorityClass as admission reads it. */
export interface PriorityClass {
  readonly name: string;
  readonly value: number;
  /** The class of pods that name none. @default false */
  readonly globalDefault?: boolean;
}

/** What admission makes of a pod's priority: its value, or why the pod is refused. */
export type PriorityAdmission =
  | { readonly kind: 'admitted'; readonly priority: number }
  | { readonly kind: 'refused'; readonly field: 'priorityClassName' | 'priority'; readonly message: string };

/**
 * The priority a pod gets at admission from `priorityClassName` and the cluster's `classes` (the
 * built-in ones need not be listed). Without a class name: the global default class's value (the
 * lowest, should there be several), else 0. A `priority` the pod already sets must equal the
 * value admission computes.
 */
export function admitPriority(
  spec: { readonly priorityClassName?: string | undefined; readonly priority?: number | undefined },
  classes: readonly PriorityClass[],
): PriorityAdmission {
  const name = spec.priorityClassName;
  let priority: number;
  if (name === undefined || name === '') {
    const defaults = classes.filter((c) => c.globalDefault === true).map((c) => c.value);
    priority = defaults.length === 0 ? 0 : Math.min(...defaults);
  } else {
    const value = classes.find((c) => c.name === name)?.value ?? SYSTEM_PRIORITY_CLASSES.get(name);
    if (value === undefined) {
      return {
        kind: 'refused',
        field: 'priorityClassName',
        message: `no PriorityClass with name ${name} was found (the cluster has ${priorityClassNames(classes).join(', ')})`,
      };
    }
    priority = value;
  }
  if (spec.priority !== undefined && spec.priority !== priority) {
    return {
      kind: 'refused',
      field: 'priority',
      message: `the integer value of priority (${spec.priority}) must not be provided in pod spec; admission computed ${priority} from ${name === undefined || name === '' ? 'the default' : `PriorityClass ${name}`}`,
    };
  }
  return { kind: 'admitted', priority };
}

/** Every PriorityClass a cluster with `classes` has, the built-in ones included, sorted. */
export function priorityClassNames(classes: readonly PriorityClass[]): string[] {
  return [...new Set([...SYSTEM_PRIORITY_CLASSES.keys(), ...classes.map((c) => c.name)])].sort();
}
