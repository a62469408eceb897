import type { EnvVarKey } from '../shared/runtime/env.ts';
import {
  type FunctionDefinition,
  type Permission,
  type QueueName,
  type ScheduleName,
  shadowReportFunction,
  type Trigger,
} from './functions.ts';

// What a stack of each mode deploys. A live stack is Flotilla, the cluster's autoscaler. A shadow
// stack runs beside the cluster's live autoscaler (Karpenter, or a live Flotilla stack of the same
// cluster): its Lambdas decide as Flotilla would and only log what they would do, so it deploys
// what decides (the catalog, the provisioner and disruption, their schedules, the pod-event queue
// the shim feeds) with rights to read, never what acts (interruption, termination, garbage
// collection, their queues and rules, the node role). Every physical name it sets differs from a
// live stack's, so the two coexist in one account and region.

/** `live` (Flotilla scales the cluster) or `shadow` (it decides beside the live autoscaler and only logs). */
export type StackMode = 'live' | 'shadow';

export const STACK_MODES: readonly StackMode[] = ['live', 'shadow'];

/** What a stack's physical names start with: `flotilla` (`Flotilla`) or `flotilla-shadow` (`FlotillaShadow`). */
export const NAME_PREFIX: Readonly<Record<StackMode, { readonly kebab: string; readonly pascal: string }>> = {
  live: { kebab: 'flotilla', pascal: 'Flotilla' },
  shadow: { kebab: 'flotilla-shadow', pascal: 'FlotillaShadow' },
};

/**
 * The name of a stack's decision bus, one a user can type into a rule (EventBridge allows 256
 * characters of `.`, `-`, `_` and alphanumerics; cluster names are narrower).
 */
export function decisionBusNameFor(clusterName: string, mode: StackMode = 'live'): string {
  return `${NAME_PREFIX[mode].kebab}-${clusterName}-decisions`;
}

/**
 * The Lambdas of a shadow stack: the two that decide, the catalog they plan with, and its own
 * daily comparison of their lines (`SHADOW_ONLY_FUNCTIONS`).
 */
export const SHADOW_FUNCTIONS: readonly string[] = ['catalog', 'provisioner', 'disruption', 'shadow-report'];

/** Lambdas only a shadow stack deploys. */
export const SHADOW_ONLY_FUNCTIONS: readonly FunctionDefinition[] = [shadowReportFunction];

/** The Lambdas whose lines the shadow-report Lambda compares (its `readShadowLines` groups). */
export const SHADOW_LINE_SOURCES: readonly string[] = ['provisioner', 'disruption'];

/** Its one work queue: the shim's pod events, which start the shadow provisioner's runs. */
export const SHADOW_QUEUES: readonly QueueName[] = ['podEvents'];

/** Its schedules: no garbage collection, which only acts; its own daily comparison. */
export const SHADOW_SCHEDULES: readonly ScheduleName[] = [
  'pendingPods',
  'catalogRefresh',
  'disruption',
  'shadowReport',
];

/** Schedules only a shadow stack has. */
const SHADOW_ONLY_SCHEDULES: readonly ScheduleName[] = ['shadowReport'];

/**
 * Whether a shadow Lambda keeps each permission bundle, or why it is withheld. Every bundle is
 * here (the type asks for all), so a new one is placed here before anything compiles.
 */
const IN_SHADOW: Readonly<Record<Permission, 'kept' | { readonly withheld: string }>> = {
  describeInstances: 'kept',
  describeInstanceStatus: 'kept',
  describeCapacityReservations: 'kept',
  resolveNodeClasses: 'kept',
  describeCatalog: 'kept',
  launch: {
    withheld: 'a shadow launches no node: no CreateFleet, RunInstances, launch template or iam:PassRole',
  },
  cleanLaunchTemplates: {
    withheld: "the launch templates are the live autoscaler's, and a shadow makes none to clean up",
  },
  manageInstanceProfiles: {
    withheld:
      "instance profiles are the live autoscaler's: a shadow makes, changes and reads none (no iam: action)",
  },
  terminate: { withheld: 'a shadow terminates no instance' },
  // Its own state table only: its leases and its offering cache.
  stateRead: 'kept',
  stateWrite: 'kept',
  readSummary: 'kept',
  sendTermination: { withheld: 'a shadow has no termination queue: it drains nothing' },
  sendPodEvents: {
    withheld:
      "the provisioner's follow-ups wait for Nodes of its launches and disruption's requests start launches; a shadow launches nothing, and only the shim sends pod events",
  },
  sendDisruptionPasses: {
    withheld: 'a shadow has no disruption-passes queue: its disruption runs one pass per schedule tick',
  },
  // Mapped to the shadow's own group, whose ClusterRole only reads (manifests.ts).
  kubernetes: 'kept',
  // Reading its own Lambdas' log groups.
  readShadowLines: 'kept',
  // Its own bus: a shadow's decisions, each marked `shadow: true`.
  publishDecisions: 'kept',
  // Reading the alarms its NodePools name, as the live stack's disruption does.
  readAlarms: 'kept',
  armWakeUps: { withheld: 'a shadow launches nothing, so nothing is worth waking it for' },
  // Only the clean-up reads its stack, and a shadow stack has none.
  readOwnStack: { withheld: 'a shadow stack removes nothing when it is deleted' },
};

/** Whether a Lambda of a `mode` stack may get `permission`. */
export function isPermitted(mode: StackMode, permission: Permission): boolean {
  return mode === 'live' || IN_SHADOW[permission] === 'kept';
}

/** Why a shadow Lambda never gets `permission`; undefined when it may. */
export function withheldInShadow(permission: Permission): string | undefined {
  const placed = IN_SHADOW[permission];
  return placed === 'kept' ? undefined : placed.withheld;
}

/**
 * Variables a shadow Lambda does not get: the URLs of queues it may not send to (the pod-event
 * queue is the shim's to send to) or that it does not have, the pass interval only passes between
 * ticks read, the node role and instance profile it does not have, and the wake-ups it arms none of.
 */
const WITHHELD_IN_SHADOW_ENV: ReadonlySet<EnvVarKey> = new Set<EnvVarKey>([
  'podEventQueueUrl',
  'interruptionQueueUrl',
  'terminationQueueUrl',
  'disruptionQueueUrl',
  'disruptionIntervalSeconds',
  'nodeRoleName',
  'instanceProfileName',
  'wakeUpGroup',
  'wakeUpRoleArn',
  'podEventQueueArn',
]);

/** The work queues a `mode` stack deploys. */
export function queuesOf(mode: StackMode, all: readonly QueueName[]): readonly QueueName[] {
  return mode === 'live' ? all : all.filter((name) => SHADOW_QUEUES.includes(name));
}

/** The schedules a `mode` stack deploys. */
export function schedulesOf(mode: StackMode, all: readonly ScheduleName[]): readonly ScheduleName[] {
  return mode === 'live'
    ? all.filter((name) => !SHADOW_ONLY_SCHEDULES.includes(name))
    : all.filter((name) => SHADOW_SCHEDULES.includes(name));
}

/**
 * The Lambdas a `mode` stack deploys from `definitions`: all of them as they are in a live stack;
 * in a shadow stack the rows of `SHADOW_FUNCTIONS`, each triggered only by the shadow's queues and
 * schedules, without the withheld bundles and variables, and told its mode (`EnvVar.mode`), then
 * `SHADOW_ONLY_FUNCTIONS`.
 */
export function functionsOf(
  mode: StackMode,
  definitions: readonly FunctionDefinition[],
): readonly FunctionDefinition[] {
  if (mode === 'live') return definitions;
  // A shadow removes nothing: neither the stack's deletion nor the cluster's triggers it.
  const deployed = (trigger: Trigger) =>
    trigger.kind === 'queue'
      ? SHADOW_QUEUES.includes(trigger.queue)
      : trigger.kind === 'schedule' && SHADOW_SCHEDULES.includes(trigger.schedule);
  const deciding = definitions
    .filter((definition) => SHADOW_FUNCTIONS.includes(definition.name))
    .map((definition) => ({
      ...definition,
      description: `${definition.description} (shadow: decides and logs only)`,
      triggers: definition.triggers.filter(deployed),
      env: [...definition.env.filter((key) => !WITHHELD_IN_SHADOW_ENV.has(key)), 'mode' as const],
      permissions: definition.permissions.filter((permission) => isPermitted(mode, permission)),
    }));
  return [
    ...deciding,
    ...SHADOW_ONLY_FUNCTIONS.map((definition) => ({
      ...definition,
      env: [...definition.env, 'mode' as const],
    })),
  ];
}
