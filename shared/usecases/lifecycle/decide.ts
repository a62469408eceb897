import {
  Finalizer,
  findCondition,
  isConditionTrue,
  Label,
  NodeClaimConditionType,
  Resource,
  type Taint,
  transitionTimeMs,
  UNREGISTERED_TAINT,
  WellKnownLabel,
} from '../../core/index.ts';
import type {
  ClusterNodeClaim,
  ConditionUpdate,
  NodeClaimStatusPatch,
  NodeInfo,
  NodePatch,
} from '../../ports/cluster.ts';
import type { DeleteReason } from '../decisions/lifecycle.ts';
import { NOMINATED_PODS_ANNOTATION } from '../state/new-nodeclaim.ts';

// The NodeClaim lifecycle after launch (Karpenter's registration, initialization and liveness) as
// a pure function from one observed NodeClaim and the Nodes sharing its providerID to the steps
// that move it on. lifecycle.ts applies the steps; nothing here reads a clock or does I/O.

/** Not Launched this long after creation: the NodeClaim is deleted (Karpenter's LaunchTimeout). */
export const LAUNCH_TIMEOUT_MS = 5 * 60_000;
/** Launched but not Registered this long after the Launched transition: deleted, instance terminated. */
export const REGISTRATION_TIMEOUT_MS = 15 * 60_000;

/** Taints a node carries while it comes up; a node with any of them is not initialized. */
const EPHEMERAL_TAINTS: readonly Taint[] = [
  { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
  { key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' },
  UNREGISTERED_TAINT,
];
const EPHEMERAL_TAINT_PREFIX = 'readiness.k8s.io/';

/** Resources every node reports; the rest are extended resources a device plugin registers. */
const STANDARD_RESOURCES: ReadonlySet<string> = new Set([
  Resource.cpu,
  Resource.memory,
  Resource.pods,
  Resource.ephemeralStorage,
]);

/** One thing to do to a NodeClaim (and its Node); a union on `kind`, applied in order. */
export type LifecycleStep =
  | {
      readonly kind: 'register';
      readonly nodeName: string;
      readonly nodePatch: NodePatch;
      readonly statusPatch: NodeClaimStatusPatch;
      /** The node came up without `karpenter.sh/unregistered:NoExecute`. */
      readonly unregisteredTaintMissing: boolean;
    }
  | {
      readonly kind: 'initialize';
      readonly nodeName: string;
      readonly nodePatch: NodePatch;
      readonly statusPatch: NodeClaimStatusPatch;
    }
  /** A condition changed without a transition worth its own log line (waiting for the node). */
  | { readonly kind: 'condition'; readonly update: ConditionUpdate }
  /** The `Ready` condition follows the others (its own step, since it is no decision to log). */
  | { readonly kind: 'ready'; readonly update: ConditionUpdate }
  | {
      /**
       * Delete the NodeClaim and leave the rest to termination, which terminates its instance (if
       * one was launched) and then releases the finalizer.
       */
      readonly kind: 'delete';
      readonly reason: DeleteReason;
      readonly message: string;
    };

/** What the lifecycle saw of one NodeClaim, for the decision. */
export interface LifecycleInput {
  readonly claim: ClusterNodeClaim;
  /** Nodes whose `spec.providerID` equals the claim's `status.providerId` (any number). */
  readonly nodes: readonly NodeInfo[];
  readonly nowMs: number;
}

const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;
const hasTaint = (taints: readonly Taint[] | undefined, t: Taint) =>
  (taints ?? []).some((x) => sameTaint(x, t));

const conditionOf = (claim: ClusterNodeClaim, type: string) => findCondition(claim.status.conditions, type);
const isTrue = (claim: ClusterNodeClaim, type: string) => isConditionTrue(claim.status.conditions, type);

/** A condition update only when it changes status, reason or message (so a repeat is a no-op). */
function changed(claim: ClusterNodeClaim, update: ConditionUpdate): ConditionUpdate | undefined {
  const current = conditionOf(claim, update.type);
  return current?.status === update.status &&
    current.reason === update.reason &&
    current.message === update.message
    ? undefined
    : update;
}

/** Why a registered node is not initialized yet, or undefined when it is. */
export function initializationBlocker(
  claim: ClusterNodeClaim,
  node: Pick<NodeInfo, 'ready' | 'taints' | 'allocatable'>,
): { readonly reason: string; readonly message: string } | undefined {
  if (!node.ready) return { reason: 'NodeNotReady', message: 'Node status is NotReady' };
  const startup = claim.startupTaints.filter((t) => hasTaint(node.taints, t));
  if (startup.length > 0) {
    return {
      reason: 'StartupTaintsExist',
      message: `StartupTaint "${startup.map(formatTaint).join('", "')}" still exists`,
    };
  }
  const ephemeral = (node.taints ?? []).filter(
    (t) => EPHEMERAL_TAINTS.some((e) => sameTaint(e, t)) || t.key.startsWith(EPHEMERAL_TAINT_PREFIX),
  );
  if (ephemeral.length > 0) {
    return {
      reason: 'KnownEphemeralTaintsExist',
      message: `KnownEphemeralTaint "${ephemeral.map(formatTaint).join('", "')}" still exists`,
    };
  }
  const missing = Object.entries(claim.requests)
    .filter(([name, quantity]) => quantity > 0 && !STANDARD_RESOURCES.has(name))
    .filter(([name]) => (node.allocatable[name] ?? 0) <= 0)
    .map(([name]) => name);
  if (missing.length > 0) {
    return {
      reason: 'ResourceNotRegistered',
      message: `Resource "${missing.join('", "')}" was requested but not registered`,
    };
  }
  return undefined;
}

function formatTaint(t: Taint): string {
  return `${t.key}${t.value === undefined || t.value === '' ? '' : `=${t.value}`}:${t.effect}`;
}

/** The Node patch that registers it for the claim (Karpenter's syncNode). */
function registrationPatch(claim: ClusterNodeClaim, node: NodeInfo): NodePatch {
  const syncTaints = node.labels[WellKnownLabel.doNotSyncTaints] !== 'true';
  // Taints are synced once, before the registered label: afterwards an agent may remove a startup
  // taint and the next pass must not put it back.
  const alreadyRegistered = node.labels[Label.registered] === 'true';
  // The pods planned onto the claim matter only while it is on its way: not copied to the Node.
  const { [NOMINATED_PODS_ANNOTATION]: _nominated, ...nodeAnnotations } = claim.annotations;
  const addTaints =
    syncTaints && !alreadyRegistered
      ? [...claim.taints, ...claim.startupTaints].filter((t) => !sameTaint(t, UNREGISTERED_TAINT))
      : [];
  return {
    labels: { ...claim.labels, [Label.registered]: 'true' },
    ...(Object.keys(nodeAnnotations).length > 0 ? { annotations: nodeAnnotations } : {}),
    ...(node.finalizers.includes(Finalizer.termination) ? {} : { addFinalizers: [Finalizer.termination] }),
    // The NodeClaim owns its Node, as in Karpenter.
    addOwnerReferences: [
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        name: claim.name,
        uid: claim.uid,
        blockOwnerDeletion: true,
      },
    ],
    ...(addTaints.length > 0 ? { addTaints } : {}),
    ...(hasTaint(node.taints, UNREGISTERED_TAINT) ? { removeTaints: [UNREGISTERED_TAINT] } : {}),
  };
}

/** The node as it will be after `patch` (labels and taints only), for the initialization check. */
function afterPatch(node: NodeInfo, patch: NodePatch): NodeInfo {
  let taints = (node.taints ?? []).filter((t) => !(patch.removeTaints ?? []).some((r) => sameTaint(r, t)));
  for (const t of patch.addTaints ?? []) if (!hasTaint(taints, t)) taints = [...taints, t];
  const labels: Record<string, string> = { ...node.labels };
  for (const [k, v] of Object.entries(patch.labels ?? {})) {
    if (v === null) delete labels[k];
    else labels[k] = v;
  }
  return { ...node, labels, taints };
}

/**
 * The steps that move one NodeClaim through registration, initialization and liveness. Empty when
 * nothing is to be done, so a repeated pass over an unchanged cluster writes nothing. NodeClaims
 * being deleted are left to termination.
 */
export function decideLifecycle(input: LifecycleInput): LifecycleStep[] {
  const steps = decideSteps(input);
  if (input.claim.deleting || steps.some((s) => s.kind === 'delete')) return steps;
  const ready = readyCondition(input.claim, steps);
  return ready === undefined ? steps : [...steps, { kind: 'ready', update: ready }];
}

/** The conditions whose conjunction is the NodeClaim's `Ready` (a print column). */
const READY_DEPENDENTS = [
  NodeClaimConditionType.launched,
  NodeClaimConditionType.registered,
  NodeClaimConditionType.initialized,
];

/**
 * The `Ready` condition after `steps`, when it changes: True once the claim is Launched, Registered
 * and Initialized; otherwise False when one of them is False and Unknown while they are pending.
 */
function readyCondition(
  claim: ClusterNodeClaim,
  steps: readonly LifecycleStep[],
): ConditionUpdate | undefined {
  const after = new Map(claim.status.conditions.map((c) => [c.type, c.status as string]));
  for (const step of steps) {
    const updates =
      step.kind === 'condition'
        ? [step.update]
        : step.kind === 'register' || step.kind === 'initialize'
          ? (step.statusPatch.conditions ?? [])
          : [];
    for (const u of updates) after.set(u.type, u.status);
  }
  const pending = READY_DEPENDENTS.filter((type) => after.get(type) !== 'True');
  const update: ConditionUpdate =
    pending.length === 0
      ? {
          type: NodeClaimConditionType.ready,
          status: 'True',
          reason: NodeClaimConditionType.ready,
          message: '',
        }
      : {
          type: NodeClaimConditionType.ready,
          status: pending.some((type) => after.get(type) === 'False') ? 'False' : 'Unknown',
          reason: 'UnhealthyDependents',
          message: pending.map((type) => `${type}=${after.get(type) ?? 'Unknown'}`).join(', '),
        };
  return changed(claim, update);
}

function decideSteps(input: LifecycleInput): LifecycleStep[] {
  const { claim, nowMs } = input;
  if (claim.deleting) return [];

  const launched = conditionOf(claim, NodeClaimConditionType.launched);
  if (launched?.status !== 'True') {
    const age = claim.createdAtMs === undefined ? 0 : nowMs - claim.createdAtMs;
    if (age < LAUNCH_TIMEOUT_MS) return [];
    return [
      {
        kind: 'delete',
        reason: 'launch_timeout',
        message: `nodeClaim "${claim.name}" was not launched within ${LAUNCH_TIMEOUT_MS / 60_000}m of its creation`,
      },
    ];
  }

  const steps: LifecycleStep[] = [];
  let node: NodeInfo | undefined;
  if (isTrue(claim, NodeClaimConditionType.registered)) {
    node =
      input.nodes.find((n) => n.name === claim.status.nodeName) ??
      (input.nodes.length === 1 ? input.nodes[0] : undefined);
  } else {
    const registering = input.nodes.filter((n) => !n.deleting);
    if (registering.length === 1 && registering[0] !== undefined) {
      const found = registering[0];
      const nodePatch = registrationPatch(claim, found);
      steps.push({
        kind: 'register',
        nodeName: found.name,
        nodePatch,
        statusPatch: {
          nodeName: found.name,
          conditions: [
            {
              type: NodeClaimConditionType.registered,
              status: 'True',
              reason: NodeClaimConditionType.registered,
              message: '',
            },
          ],
        },
        unregisteredTaintMissing:
          found.labels[Label.registered] !== 'true' && !hasTaint(found.taints, UNREGISTERED_TAINT),
      });
      node = afterPatch(found, nodePatch);
    } else {
      const launchedMs = transitionTimeMs(launched);
      if (launchedMs !== undefined && nowMs - launchedMs >= REGISTRATION_TIMEOUT_MS) {
        return [
          {
            kind: 'delete',
            reason: 'registration_timeout',
            message: `nodeClaim "${claim.name}" launched ${claim.status.providerId ?? 'an instance'} but no node registered within ${REGISTRATION_TIMEOUT_MS / 60_000}m`,
          },
        ];
      }
      const update: ConditionUpdate =
        registering.length === 0
          ? {
              type: NodeClaimConditionType.registered,
              status: 'Unknown',
              reason: 'NodeNotFound',
              message: `Node not registered with cluster (providerID ${claim.status.providerId ?? 'unknown'})`,
            }
          : {
              type: NodeClaimConditionType.registered,
              status: 'False',
              reason: 'MultipleNodesFound',
              message: `Invariant violated, matched multiple nodes: ${registering.map((n) => n.name).join(', ')}`,
            };
      const change = changed(claim, update);
      return change === undefined ? [] : [{ kind: 'condition', update: change }];
    }
  }

  if (node === undefined || isTrue(claim, NodeClaimConditionType.initialized)) return steps;
  const blocker = initializationBlocker(claim, node);
  if (blocker === undefined) {
    steps.push({
      kind: 'initialize',
      nodeName: node.name,
      nodePatch: { labels: { [Label.initialized]: 'true' } },
      statusPatch: {
        conditions: [
          {
            type: NodeClaimConditionType.initialized,
            status: 'True',
            reason: NodeClaimConditionType.initialized,
            message: '',
          },
        ],
      },
    });
  } else {
    const change = changed(claim, {
      type: NodeClaimConditionType.initialized,
      status: 'Unknown',
      ...blocker,
    });
    if (change !== undefined) steps.push({ kind: 'condition', update: change });
  }
  return steps;
}
