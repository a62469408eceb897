/** Taint effects. */
export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

/** A node taint. */
export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: TaintEffect;
}

/** A pod toleration. An empty `key` with `operator: 'Exists'` tolerates everything. */
export interface Toleration {
  readonly key?: string;
  /** Default `Equal`. */
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  /** Empty means every effect. */
  readonly effect?: TaintEffect;
}

/** Taint Karpenter puts on nodes until they register; never blocks provisioning. */
export const UNREGISTERED_TAINT: Taint = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' };
/** Taint on nodes being disrupted; nothing new schedules there. */
export const DISRUPTED_TAINT: Taint = { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' };

/**
 * Taints a node carries only while it starts; Karpenter does not require pods to tolerate them
 * on nodes that are not yet initialized.
 */
export function isEphemeralTaint(taint: Taint): boolean {
  switch (taint.key) {
    case 'node.kubernetes.io/not-ready':
    case 'node.kubernetes.io/unreachable':
    case 'node.cloudprovider.kubernetes.io/uninitialized':
    case UNREGISTERED_TAINT.key:
      return true;
    default:
      return taint.key.startsWith('readiness.k8s.io/');
  }
}

/** Kubernetes toleration matching. */
export function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect !== undefined && toleration.effect !== taint.effect) return false;
  if (toleration.key === undefined || toleration.key === '') {
    return toleration.operator === 'Exists';
  }
  if (toleration.key !== taint.key) return false;
  if (toleration.operator === 'Exists') return true;
  return (toleration.value ?? '') === (taint.value ?? '');
}

/**
 * The first taint the tolerations do not tolerate, or undefined. `PreferNoSchedule` taints count
 * unless `ignorePreferNoSchedule` (Karpenter treats them as hard until it relaxes the pod).
 */
export function firstUntolerated(
  taints: readonly Taint[],
  tolerations: readonly Toleration[],
  ignorePreferNoSchedule = false,
): Taint | undefined {
  for (const taint of taints) {
    if (ignorePreferNoSchedule && taint.effect === 'PreferNoSchedule') continue;
    if (!tolerations.some((t) => tolerates(t, taint))) return taint;
  }
  return undefined;
}

/** `key=value:Effect`, as kubectl prints it. */
export function formatTaint(taint: Taint): string {
  return `${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
}
