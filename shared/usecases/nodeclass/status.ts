import { NodeClassConditionType } from '../../core/index.ts';
import type {
  AmiStatus,
  CapacityReservationStatus,
  Condition,
  ConditionStatus,
  EC2NodeClass,
  EC2NodeClassStatus,
  NodeClassResolution,
  NodeClassResolver,
  PlacementGroupStatus,
  Resolved,
  SecurityGroupStatus,
  SubnetStatus,
} from '../../ports/cloud.ts';
import { placementGroupMissing } from '../../ports/cloud.ts';
import { kubeletProblems } from './kubelet.ts';

// EC2NodeClass status (Karpenter's nodeclass status controller) as a pure function from the class
// and what resolving it came to, part by part: the conditions SubnetsReady, SecurityGroupsReady,
// AMIsReady, InstanceProfileReady, ValidationSucceeded (kubelet.ts checks `spec.kubelet`),
// PlacementGroupReady (with a placement group selector only) and Ready, with the resolved lists. A part
// that AWS could not answer for now keeps what the status said before.

/** Tag keys an EC2NodeClass may not set (the CRD's CEL rules); Flotilla sets them itself. */
const RESTRICTED_TAG_KEYS: ReadonlySet<string> = new Set([
  'eks:eks-cluster-name',
  'karpenter.sh/nodepool',
  'karpenter.sh/nodeclaim',
  'karpenter.k8s.aws/ec2nodeclass',
]);

/** Reason of a condition whose part has not been answered yet (AWS failed on the first try). */
export const AWAITING_RESOLUTION = 'AwaitingResolution';

/**
 * What the CRD cannot check but Karpenter's controller does, as sentences that say what to fix.
 * Empty when the spec is valid. `spec.kubelet` has its own checks and reasons (kubeletProblems).
 */
export function validateNodeClass(nodeClass: EC2NodeClass): string[] {
  const spec = nodeClass.spec;
  const problems: string[] = [];
  if ((spec.role === undefined) === (spec.instanceProfile === undefined)) {
    problems.push('set exactly one of spec.role and spec.instanceProfile');
  }
  for (const key of Object.keys(spec.tags ?? {})) {
    if (RESTRICTED_TAG_KEYS.has(key) || key.startsWith('kubernetes.io/cluster')) {
      problems.push(`spec.tags may not set "${key}" (Flotilla sets it); remove it`);
    }
  }
  const aliases = spec.amiSelectorTerms.filter((t) => t.alias !== undefined);
  if (aliases.length > 0 && spec.amiSelectorTerms.length > 1) {
    problems.push('an alias must be the only term in spec.amiSelectorTerms; remove the other terms');
  }
  if ((spec.blockDeviceMappings ?? []).filter((m) => m.rootVolume).length > 1) {
    problems.push('at most one of spec.blockDeviceMappings may set rootVolume: true');
  }
  const selector = spec.placementGroupSelector;
  if (selector !== undefined && (selector.id === undefined) === (selector.name === undefined)) {
    problems.push('spec.placementGroupSelector must set exactly one of name and id');
  }
  (spec.capacityReservationSelectorTerms ?? []).forEach((term, i) => {
    const field = `spec.capacityReservationSelectorTerms[${i}]`;
    const others =
      term.tags !== undefined || term.ownerID !== undefined || term.instanceMatchCriteria !== undefined;
    if (term.id !== undefined && others) {
      problems.push(`${field}: id is mutually exclusive with tags, ownerID and instanceMatchCriteria`);
    } else if (term.id === undefined && term.tags === undefined && term.instanceMatchCriteria === undefined) {
      problems.push(`${field}: set one of tags, id or instanceMatchCriteria`);
    }
  });
  problems.push(...networkInterfaceProblems(spec.networkInterfaces));
  for (const field of nodeClass.unsupportedFields ?? []) {
    problems.push(
      `spec.${field} is not supported by Flotilla; remove it (nodes would be launched without it)`,
    );
  }
  return problems;
}

/** The CRD's rules on `spec.networkInterfaces`, for objects that did not pass through it. */
function networkInterfaceProblems(interfaces: EC2NodeClass['spec']['networkInterfaces']): string[] {
  if (interfaces === undefined || interfaces.length === 0) return [];
  const problems: string[] = [];
  if (
    !interfaces.some(
      (n) => n.networkCardIndex === 0 && n.deviceIndex === 0 && n.interfaceType === 'interface',
    )
  ) {
    problems.push(
      "spec.networkInterfaces must include the primary interface (networkCardIndex 0, deviceIndex 0, interfaceType 'interface')",
    );
  }
  const seen = new Set<string>();
  const efaCards = new Set<number>();
  for (const n of interfaces) {
    const key = `${n.networkCardIndex}/${n.deviceIndex}`;
    if (seen.has(key))
      problems.push(`spec.networkInterfaces lists card ${n.networkCardIndex} device ${n.deviceIndex} twice`);
    seen.add(key);
    if (n.interfaceType !== 'efa-only') continue;
    if (efaCards.has(n.networkCardIndex))
      problems.push(
        `spec.networkInterfaces has more than one efa-only interface on card ${n.networkCardIndex}`,
      );
    efaCards.add(n.networkCardIndex);
  }
  return problems;
}

interface Check {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

/** The status computed from one resolution, and the parts that AWS could not answer for now. */
export interface NodeClassStatusResult {
  readonly status: EC2NodeClassStatus;
  /** Condition types whose part is to be resolved again soon (a passing AWS fault). */
  readonly retrying: readonly string[];
}

/**
 * The status of `nodeClass` after resolving it: each part that resolved becomes a True condition
 * with its values; a `failed` part a False condition with the resolver's reason and message and no
 * values; a `retry` part keeps the condition and values of the current status (Unknown with
 * reason AwaitingResolution when there is none yet). Ready is True when every other condition is,
 * False when one is False, Unknown otherwise. Each condition keeps its lastTransitionTime while its
 * status does not change and carries the class's generation.
 */
export function computeNodeClassStatus(
  nodeClass: EC2NodeClass,
  resolution: NodeClassResolution,
  now: Date,
): NodeClassStatusResult {
  const previous = nodeClass.status;
  const before = new Map((previous?.conditions ?? []).map((c) => [c.type, c]));
  const retrying: string[] = [];

  function part<T>(type: string, resolved: Resolved<T>, kept: T | undefined): { check: Check; value?: T } {
    switch (resolved.kind) {
      case 'resolved':
        return { check: { type, status: 'True', reason: type, message: '' }, value: resolved.value };
      case 'failed':
        return { check: { type, status: 'False', reason: resolved.reason, message: resolved.message } };
      case 'retry': {
        retrying.push(type);
        const old = before.get(type);
        const check: Check =
          old === undefined
            ? {
                type,
                status: 'Unknown',
                reason: AWAITING_RESOLUTION,
                message: `not resolved yet, retrying: ${resolved.message}`,
              }
            : { type, status: old.status, reason: old.reason, message: old.message };
        return kept === undefined ? { check } : { check, value: kept };
      }
    }
  }

  const problems = validateNodeClass(nodeClass);
  const kubelet = kubeletProblems(nodeClass);
  const cloudProblems = resolution.validation ?? [];
  const validation: Check =
    problems.length === 0 && kubelet.length === 0 && cloudProblems.length === 0
      ? {
          type: NodeClassConditionType.validationSucceeded,
          status: 'True',
          reason: NodeClassConditionType.validationSucceeded,
          message: '',
        }
      : {
          type: NodeClassConditionType.validationSucceeded,
          status: 'False',
          // The spec's own problems first, then the kubelet's (with Karpenter's reason for the
          // first), else the reason the cloud side gave (e.g. UserDataInvalid).
          reason:
            problems.length > 0
              ? 'ValidationFailed'
              : (kubelet[0]?.reason ?? cloudProblems[0]?.reason ?? 'ValidationFailed'),
          message: [
            ...problems,
            ...kubelet.map((p) => p.message),
            ...cloudProblems.map((p) => p.message),
          ].join('; '),
        };
  const subnets = part<readonly SubnetStatus[]>(
    NodeClassConditionType.subnetsReady,
    resolution.subnets,
    previous?.subnets,
  );
  const groups = part<readonly SecurityGroupStatus[]>(
    NodeClassConditionType.securityGroupsReady,
    resolution.securityGroups,
    previous?.securityGroups,
  );
  const amis = part<readonly AmiStatus[]>(NodeClassConditionType.amisReady, resolution.amis, previous?.amis);
  const profile = part<string>(
    NodeClassConditionType.instanceProfileReady,
    resolution.instanceProfile,
    previous?.instanceProfile,
  );

  // PlacementGroupReady exists only while the class has a selector (and then counts towards Ready).
  const placement =
    resolution.placementGroup === undefined
      ? undefined
      : part<PlacementGroupStatus>(
          NodeClassConditionType.placementGroupReady,
          resolution.placementGroup,
          previous?.placementGroups?.[0],
        );
  // Only a class that selects capacity reservations has the condition (and the status list).
  const reservations =
    resolution.capacityReservations === undefined
      ? undefined
      : part<readonly CapacityReservationStatus[]>(
          NodeClassConditionType.capacityReservationsReady,
          resolution.capacityReservations,
          previous?.capacityReservations,
        );
  const checks = [
    subnets.check,
    groups.check,
    amis.check,
    profile.check,
    ...(reservations === undefined ? [] : [reservations.check]),
    validation,
    ...(placement === undefined ? [] : [placement.check]),
  ];
  const notTrue = checks.filter((c) => c.status !== 'True');
  const ready: Check =
    notTrue.length === 0
      ? {
          type: NodeClassConditionType.ready,
          status: 'True',
          reason: NodeClassConditionType.ready,
          message: '',
        }
      : {
          type: NodeClassConditionType.ready,
          status: notTrue.some((c) => c.status === 'False') ? 'False' : 'Unknown',
          reason: 'NotReady',
          message: notTrue.map((c) => `${c.type}=${c.status}: ${c.message}`).join('; '),
        };
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  // Flotilla's own conditions for what the class does only approximately: False, outside Ready.
  const limitations: Check[] = (resolution.limitations ?? []).map((l) => ({ ...l, status: 'False' }));
  const conditions: Condition[] = [...checks, ready, ...limitations].map((check) => {
    const old = before.get(check.type);
    return {
      ...check,
      lastTransitionTime:
        old !== undefined && old.status === check.status && old.lastTransitionTime !== ''
          ? old.lastTransitionTime
          : stamp,
      ...(nodeClass.generation === undefined ? {} : { observedGeneration: nodeClass.generation }),
    };
  });
  return {
    status: {
      subnets: subnets.value ?? [],
      securityGroups: groups.value ?? [],
      amis: amis.value ?? [],
      ...(reservations === undefined ? {} : { capacityReservations: reservations.value ?? [] }),
      ...(profile.value === undefined ? {} : { instanceProfile: profile.value }),
      ...(placement?.value === undefined ? {} : { placementGroups: [placement.value] }),
      conditions,
    },
    retrying,
  };
}

/** True when a status would change nothing (lists, profile and conditions alike). */
export function sameNodeClassStatus(a: EC2NodeClassStatus | undefined, b: EC2NodeClassStatus): boolean {
  return a !== undefined && canonical(a) === canonical(b);
}

function canonical(status: EC2NodeClassStatus): string {
  const conditions = [...status.conditions]
    .sort((x, y) => x.type.localeCompare(y.type))
    .map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: c.lastTransitionTime,
      observedGeneration: c.observedGeneration,
    }));
  return stableJson({
    subnets: status.subnets,
    securityGroups: status.securityGroups,
    amis: status.amis,
    capacityReservations: status.capacityReservations,
    instanceProfile: status.instanceProfile,
    placementGroups: status.placementGroups,
    conditions,
  });
}

/** JSON with object keys sorted, so objects read back from the API server compare equal. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

/** Whether the status was computed for the class's current generation (every condition says so). */
export function isNodeClassStatusCurrent(nodeClass: EC2NodeClass): boolean {
  const status = nodeClass.status;
  if (status === undefined || status.conditions.length === 0) return false;
  // A selected placement group that is not at hand (a class Karpenter resolved, or an annotation
  // lost or malformed) is resolved again before anything launches.
  if (placementGroupMissing(nodeClass)) return false;
  if (nodeClass.generation === undefined) return true;
  return status.conditions.every((c) => c.observedGeneration === nodeClass.generation);
}

/** Resolves `nodeClass` and computes its status, without writing it (plans, tests, the simulator's set-up). */
export async function resolveNodeClassStatus(
  resolver: NodeClassResolver,
  nodeClass: EC2NodeClass,
  now: Date,
): Promise<EC2NodeClassStatus> {
  return computeNodeClassStatus(nodeClass, await resolver.resolve(nodeClass), now).status;
}
