import {
  type Affinity,
  type Container,
  type ContainerPort,
  type InitContainer,
  type Pod,
  type PodAffinityTerm,
  type TopologySpreadConstraint,
  ValidationError,
} from '../core/index.ts';
import {
  nonEmpty,
  optional,
  readEach,
  readList,
  readNumber,
  readObject,
  readResources,
  readString,
  readStringMap,
  readStrings,
  requireString,
  toLabelSelector,
  toNodeSelectorTerm,
  toToleration,
} from './fields.ts';

// The scheduling fields of a pod spec (containers and their ports, requests, node selector,
// affinity, tolerations, topology spread, whether it claims devices through Dynamic Resource
// Allocation), shared by pods and DaemonSet templates. Each conversion throws ValidationError
// naming the object and the field.

/** The scheduling fields of a pod spec (also used for DaemonSet templates). */
export function toPodSpec(
  spec: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): Omit<Pod, 'uid' | 'name' | 'namespace'> {
  const containers = readEach(spec['containers'], object, `${field}.containers`, (c, at) =>
    toContainer(c, object, at),
  );
  const initContainers = readEach(
    spec['initContainers'],
    object,
    `${field}.initContainers`,
    (c, at): InitContainer => ({
      ...toContainer(c, object, at),
      ...(readString(c['restartPolicy'], object, `${at}.restartPolicy`) === 'Always'
        ? { restartPolicy: 'Always' as const }
        : {}),
    }),
  );
  const resources = readObject(spec['resources'], object, `${field}.resources`);
  const affinity = readObject(spec['affinity'], object, `${field}.affinity`);
  const tolerations = readList(spec['tolerations'], object, `${field}.tolerations`).map((t, i) =>
    toToleration(t, object, `${field}.tolerations[${i}]`),
  );
  const spread = readEach(
    spec['topologySpreadConstraints'],
    object,
    `${field}.topologySpreadConstraints`,
    (c, at) => toSpread(c, object, at),
  );
  return {
    containers,
    ...(initContainers.length > 0 ? { initContainers } : {}),
    ...(claimsDevices(spec, object, field) ? { dynamicResources: true as const } : {}),
    ...optional('overhead', readResources(spec['overhead'], object, `${field}.overhead`)),
    ...optional('podRequests', readResources(resources?.['requests'], object, `${field}.resources.requests`)),
    ...optional(
      'nodeSelector',
      nonEmpty(readStringMap(spec['nodeSelector'], object, `${field}.nodeSelector`)),
    ),
    ...optional('affinity', affinity ? toAffinity(affinity, object, `${field}.affinity`) : undefined),
    ...(tolerations.length > 0 ? { tolerations } : {}),
    ...(spread.length > 0 ? { topologySpreadConstraints: spread } : {}),
  };
}

/**
 * Whether the spec asks for devices through Dynamic Resource Allocation, as Karpenter's
 * HasDRARequirements reads it: `resourceClaims`, or `resources.claims` of any container or init
 * container, not empty.
 */
function claimsDevices(spec: Readonly<Record<string, unknown>>, object: string, field: string): boolean {
  if (readList(spec['resourceClaims'], object, `${field}.resourceClaims`).length > 0) return true;
  return (['containers', 'initContainers'] as const).some((list) =>
    readEach(spec[list], object, `${field}.${list}`, (c, at) => {
      const resources = readObject(c['resources'], object, `${at}.resources`);
      return readList(resources?.['claims'], object, `${at}.resources.claims`).length > 0;
    }).some(Boolean),
  );
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

function toContainer(c: Readonly<Record<string, unknown>>, object: string, field: string): Container {
  const ports = readEach(c['ports'], object, `${field}.ports`, (p, at): ContainerPort => {
    const containerPort = readNumber(p['containerPort'], object, `${at}.containerPort`, true);
    if (containerPort === undefined) throw new ValidationError(object, `${at}.containerPort`, 'missing');
    const protocol = readString(p['protocol'], object, `${at}.protocol`);
    if (protocol !== undefined && !PROTOCOLS.has(protocol)) {
      throw new ValidationError(
        object,
        `${at}.protocol`,
        `${JSON.stringify(protocol)} is not TCP, UDP or SCTP`,
      );
    }
    return {
      containerPort,
      ...optional('hostPort', readNumber(p['hostPort'], object, `${at}.hostPort`, true)),
      ...optional('protocol', protocol as ContainerPort['protocol']),
      ...optional('hostIP', readString(p['hostIP'], object, `${at}.hostIP`)),
    };
  });
  const resources = readObject(c['resources'], object, `${field}.resources`);
  return {
    ...optional('name', readString(c['name'], object, `${field}.name`)),
    ...optional('requests', readResources(resources?.['requests'], object, `${field}.resources.requests`)),
    ...(ports.length > 0 ? { ports } : {}),
  };
}

function toPodAffinityTerm(
  t: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): PodAffinityTerm {
  const namespaces = readStrings(t['namespaces'], object, `${field}.namespaces`);
  return {
    topologyKey: requireString(t['topologyKey'], object, `${field}.topologyKey`),
    ...optional(
      'labelSelector',
      t['labelSelector'] == null
        ? undefined
        : toLabelSelector(t['labelSelector'], object, `${field}.labelSelector`),
    ),
    ...optional('namespaces', namespaces.length > 0 ? namespaces : undefined),
    ...optional(
      'namespaceSelector',
      t['namespaceSelector'] == null
        ? undefined
        : toLabelSelector(t['namespaceSelector'], object, `${field}.namespaceSelector`),
    ),
  };
}

function toAffinity(a: Readonly<Record<string, unknown>>, object: string, field: string): Affinity {
  const na = readObject(a['nodeAffinity'], object, `${field}.nodeAffinity`);
  const nodeAffinity = (na: Readonly<Record<string, unknown>>): NonNullable<Affinity['nodeAffinity']> => {
    const required = readObject(
      na['requiredDuringSchedulingIgnoredDuringExecution'],
      object,
      `${field}.nodeAffinity.required`,
    );
    const preferred = na['preferredDuringSchedulingIgnoredDuringExecution'];
    return {
      ...optional(
        'requiredDuringSchedulingIgnoredDuringExecution',
        required
          ? {
              nodeSelectorTerms: readList(
                required['nodeSelectorTerms'],
                object,
                `${field}.nodeAffinity.required.nodeSelectorTerms`,
              ).map((t, i) =>
                toNodeSelectorTerm(t, object, `${field}.nodeAffinity.required.nodeSelectorTerms[${i}]`),
              ),
            }
          : undefined,
      ),
      ...optional(
        'preferredDuringSchedulingIgnoredDuringExecution',
        preferred == null
          ? undefined
          : readEach(preferred, object, `${field}.nodeAffinity.preferred`, (p, at) => ({
              weight: requireWeight(p['weight'], object, `${at}.weight`),
              preference: toNodeSelectorTerm(p['preference'], object, `${at}.preference`),
            })),
      ),
    };
  };
  const podTerms = (kind: 'podAffinity' | 'podAntiAffinity') => {
    const src = readObject(a[kind], object, `${field}.${kind}`);
    if (src === undefined) return undefined;
    const required = src['requiredDuringSchedulingIgnoredDuringExecution'];
    const preferred = src['preferredDuringSchedulingIgnoredDuringExecution'];
    return {
      ...optional(
        'requiredDuringSchedulingIgnoredDuringExecution',
        required == null
          ? undefined
          : readEach(required, object, `${field}.${kind}.required`, (t, at) =>
              toPodAffinityTerm(t, object, at),
            ),
      ),
      ...optional(
        'preferredDuringSchedulingIgnoredDuringExecution',
        preferred == null
          ? undefined
          : readEach(preferred, object, `${field}.${kind}.preferred`, (w, at) => {
              const term = readObject(w['podAffinityTerm'], object, `${at}.podAffinityTerm`);
              if (term === undefined) throw new ValidationError(object, `${at}.podAffinityTerm`, 'missing');
              return {
                weight: requireWeight(w['weight'], object, `${at}.weight`),
                podAffinityTerm: toPodAffinityTerm(term, object, at),
              };
            }),
      ),
    };
  };
  return {
    ...optional('nodeAffinity', na === undefined ? undefined : nodeAffinity(na)),
    ...optional('podAffinity', podTerms('podAffinity')),
    ...optional('podAntiAffinity', podTerms('podAntiAffinity')),
  };
}

function requireWeight(value: unknown, object: string, field: string): number {
  const weight = readNumber(value, object, field, true);
  if (weight === undefined) throw new ValidationError(object, field, 'missing');
  return weight;
}

const SPREAD_POLICIES: ReadonlySet<string> = new Set(['Honor', 'Ignore']);

function toSpread(
  c: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): TopologySpreadConstraint {
  const whenUnsatisfiable = readString(c['whenUnsatisfiable'], object, `${field}.whenUnsatisfiable`);
  if (whenUnsatisfiable !== 'DoNotSchedule' && whenUnsatisfiable !== 'ScheduleAnyway') {
    throw new ValidationError(
      object,
      `${field}.whenUnsatisfiable`,
      `${whenUnsatisfiable === undefined ? 'missing' : JSON.stringify(whenUnsatisfiable)}; must be DoNotSchedule or ScheduleAnyway`,
    );
  }
  const policy = (key: 'nodeAffinityPolicy' | 'nodeTaintsPolicy') => {
    const value = readString(c[key], object, `${field}.${key}`);
    if (value !== undefined && !SPREAD_POLICIES.has(value)) {
      throw new ValidationError(object, `${field}.${key}`, `${JSON.stringify(value)} is not Honor or Ignore`);
    }
    return value as 'Honor' | 'Ignore' | undefined;
  };
  const maxSkew = readNumber(c['maxSkew'], object, `${field}.maxSkew`, true);
  if (maxSkew === undefined) throw new ValidationError(object, `${field}.maxSkew`, 'missing');
  const matchLabelKeys = readStrings(c['matchLabelKeys'], object, `${field}.matchLabelKeys`);
  return {
    maxSkew,
    topologyKey: requireString(c['topologyKey'], object, `${field}.topologyKey`),
    whenUnsatisfiable,
    ...optional(
      'labelSelector',
      c['labelSelector'] == null
        ? undefined
        : toLabelSelector(c['labelSelector'], object, `${field}.labelSelector`),
    ),
    ...optional('minDomains', readNumber(c['minDomains'], object, `${field}.minDomains`, true)),
    ...optional('nodeAffinityPolicy', policy('nodeAffinityPolicy')),
    ...optional('nodeTaintsPolicy', policy('nodeTaintsPolicy')),
    ...optional('matchLabelKeys', matchLabelKeys.length > 0 ? matchLabelKeys : undefined),
  };
}
