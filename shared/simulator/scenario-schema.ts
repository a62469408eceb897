import { z } from 'zod';
import {
  DEFAULT_FIT_SCORING,
  FIT_SCORINGS,
  HIGHEST_USER_DEFINABLE_PRIORITY,
  parseGoDurationMs,
} from '../core/index.ts';
import { resolveFeatureGates } from '../runtime/feature-gates.ts';
import {
  DEFAULT_OPERATOR_SETTINGS,
  type OperatorSettings,
  operatorSettingsProblems,
} from '../runtime/operator-settings.ts';
import {
  DEFAULT_MIN_VALUES_POLICY,
  DEFAULT_PREFERENCE_POLICY,
  MIN_VALUES_POLICIES,
  PREFERENCE_POLICIES,
} from '../runtime/scheduling-policy.ts';

// The scenario file's schema: what each field may hold, with the defaults a scenario leaves out.

/** A Go duration such as `1h30m`, `90s` or `250ms`, or a number of seconds, in milliseconds. */
export function parseDurationMs(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  return parseGoDurationMs(value.trim());
}

const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDurationMs(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(value)} is not a duration such as 90s, 5m or 1h30m`,
    });
    return z.NEVER;
  }
  return ms;
});

const gate = z.boolean().optional();

/**
 * The stack's settings (FlotillaCluster props of the same names): Karpenter's feature gates, its
 * scheduling policies and operator settings. Unset ones take Karpenter's defaults.
 */
const settingsSchema = z
  .strictObject({
    /** FlotillaCluster's `featureGates`, by Karpenter's names. */
    featureGates: z
      .strictObject({
        NodeRepair: gate,
        ReservedCapacity: gate,
        SpotToSpotConsolidation: gate,
        NodeOverlay: gate,
        StaticCapacity: gate,
      })
      .default({}),
    /** Deprecated: `featureGates.SpotToSpotConsolidation`. */
    spotToSpotConsolidation: gate,
    /** Deprecated: `featureGates.NodeRepair`. */
    nodeRepair: gate,
    /** FlotillaCluster's `minValuesPolicy` (Karpenter's MIN_VALUES_POLICY). */
    minValuesPolicy: z.enum(MIN_VALUES_POLICIES).default(DEFAULT_MIN_VALUES_POLICY),
    /** FlotillaCluster's `preferencePolicy` (Karpenter's PREFERENCE_POLICY). */
    preferencePolicy: z.enum(PREFERENCE_POLICIES).default(DEFAULT_PREFERENCE_POLICY),
    /** FlotillaCluster's `maxCostPerHour` (Flotilla's cluster-wide dollar limit, USD per hour). */
    maxCostPerHour: z.number().nonnegative().max(10_000_000).optional(),
    /**
     * FlotillaCluster's `kubeSchedulerScoring`, what disruption's replay expects of kube-scheduler.
     * Unset, the simulated kube-scheduler's own strategy (`kubeScheduler.scoringStrategy`).
     */
    kubeSchedulerScoring: z.enum(FIT_SCORINGS).optional(),
    batchIdleDuration: duration.optional(),
    batchMaxDuration: duration.optional(),
    vmMemoryOverheadPercent: z.number().optional(),
    reservedENIs: z.number().optional(),
    amiRefreshInterval: duration.optional(),
    /** FlotillaCluster's `repackConsolidation` (Flotilla's own repack method). */
    repackConsolidation: z.boolean().default(false),
    /** FlotillaCluster's `runawayGuard` (Flotilla's launch back-off; false, as Karpenter has none). */
    runawayGuard: z.boolean().default(true),
    /**
     * The simulator's own switch, not a FlotillaCluster prop: false, the disruption passes start no
     * command (no emptiness, drift or consolidation) while they still keep the NodeClaims'
     * conditions and expire NodeClaims, an autoscaler that never consolidates for a `shadow` to be
     * compared with.
     */
    disruption: z.boolean().default(true),
  })
  .superRefine((s, ctx) => {
    const { problems } = resolveFeatureGates(s.featureGates, {
      nodeRepair: s.nodeRepair,
      spotToSpotConsolidation: s.spotToSpotConsolidation,
    });
    for (const message of [...problems, ...operatorSettingsProblems(operatorSettingsIn(s))]) {
      ctx.addIssue({ code: 'custom', message });
    }
  });

/** The operator settings a scenario's `settings` set (milliseconds), for Karpenter's checks. */
export function operatorSettingsIn(s: {
  readonly batchIdleDuration?: number | undefined;
  readonly batchMaxDuration?: number | undefined;
  readonly vmMemoryOverheadPercent?: number | undefined;
  readonly reservedENIs?: number | undefined;
  readonly amiRefreshInterval?: number | undefined;
}): Omit<OperatorSettings, 'isolatedVPC'> {
  const d = DEFAULT_OPERATOR_SETTINGS;
  return {
    batchIdleMs: s.batchIdleDuration ?? d.batchIdleMs,
    batchMaxMs: s.batchMaxDuration ?? d.batchMaxMs,
    vmMemoryOverheadPercent: s.vmMemoryOverheadPercent ?? d.vmMemoryOverheadPercent,
    reservedENIs: s.reservedENIs ?? d.reservedENIs,
    amiRefreshMs: s.amiRefreshInterval ?? d.amiRefreshMs,
  };
}

/** A setting a shadow Flotilla in the simulator does not take: given, it is refused, saying why. */
const liveOnly = (why: string) =>
  z
    .unknown()
    .superRefine((_, ctx) => {
      ctx.addIssue({
        code: 'custom',
        message: `a shadow Flotilla does not take this setting: ${why}; the live stack's is under settings`,
      });
    })
    .optional();

/** Why a shadow cannot set what shapes the instance types: it reads the simulated EC2 of the live stack. */
const SEEN_THROUGH_THE_LIVE_STACK = 'it sees the simulated EC2 as the live stack has it configured';
/** Why a shadow cannot set its batch window. */
const NO_WINDOW_OF_ITS_OWN =
  "it plans on the pods the live provisioner's batch took, waiting no window of its own (its waits would move the simulated world)";

/**
 * A shadow Flotilla's stack settings: what its provisioner and disruption passes decide with, each
 * at Karpenter's default unless set (not the live stack's: it is a stack of its own). The rest of
 * `settings` is the live stack's alone, and refused here with the reason.
 */
const shadowSettingsSchema = z.strictObject({
  featureGates: z
    .strictObject({
      SpotToSpotConsolidation: gate,
      NodeOverlay: gate,
      StaticCapacity: gate,
      NodeRepair: liveOnly('it repairs no node'),
      ReservedCapacity: liveOnly(SEEN_THROUGH_THE_LIVE_STACK),
    })
    .default({}),
  minValuesPolicy: z.enum(MIN_VALUES_POLICIES).default(DEFAULT_MIN_VALUES_POLICY),
  preferencePolicy: z.enum(PREFERENCE_POLICIES).default(DEFAULT_PREFERENCE_POLICY),
  repackConsolidation: z.boolean().default(false),
  kubeSchedulerScoring: z.enum(FIT_SCORINGS).optional(),
  runawayGuard: z.boolean().default(true),
  batchIdleDuration: liveOnly(NO_WINDOW_OF_ITS_OWN),
  batchMaxDuration: liveOnly(NO_WINDOW_OF_ITS_OWN),
  vmMemoryOverheadPercent: liveOnly(SEEN_THROUGH_THE_LIVE_STACK),
  reservedENIs: liveOnly(SEEN_THROUGH_THE_LIVE_STACK),
  amiRefreshInterval: liveOnly(
    'it resolves no EC2NodeClass and launches with the status the live stack keeps',
  ),
  disruption: liveOnly('its disruption passes are what observe the cluster for the comparison'),
});

const name = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lowercase name (letters, digits and -)')
  .max(63);
const count = z.number().int().nonnegative();
const stringMap = z.record(z.string(), z.string());

const podTemplate = z.strictObject({
  metadata: z.strictObject({ labels: stringMap.optional(), annotations: stringMap.optional() }).optional(),
  spec: z.looseObject({
    containers: z
      .array(z.looseObject({ name: z.string().min(1) }))
      .min(1, 'a pod template needs at least one container'),
  }),
});

const deployment = z.strictObject({
  kind: z.literal('Deployment'),
  name,
  namespace: name.default('default'),
  replicas: count,
  scale: z.array(z.strictObject({ at: duration, replicas: count })).default([]),
  template: podTemplate,
  disruptionBudget: z
    .strictObject({
      minAvailable: z
        .union([count, z.string().regex(/^\d+%$/, 'an integer or a percentage such as 50%')])
        .optional(),
      maxUnavailable: z
        .union([count, z.string().regex(/^\d+%$/, 'an integer or a percentage such as 50%')])
        .optional(),
    })
    .refine((b) => (b.minAvailable === undefined) !== (b.maxUnavailable === undefined), {
      message: 'set exactly one of minAvailable and maxUnavailable',
    })
    .optional(),
});

const job = z.strictObject({
  kind: z.literal('Job'),
  name,
  namespace: name.default('default'),
  at: duration.prefault(0),
  completions: z.number().int().min(1),
  parallelism: z.number().int().min(1).optional(),
  runTime: duration,
  template: podTemplate,
});

/** A DaemonSet: one pod of `template` on every node it matches and tolerates. */
const daemonSet = z.strictObject({
  name,
  namespace: name.default('kube-system'),
  template: podTemplate,
});

/** A PriorityClass pods may name in `priorityClassName` (the built-in system ones always exist). */
const priorityClass = z.strictObject({
  name,
  value: z.number().int().min(-2_147_483_648).max(HIGHEST_USER_DEFINABLE_PRIORITY),
  globalDefault: z.boolean().default(false),
  description: z.string().optional(),
});

const taint = z.strictObject({
  key: z.string().min(1),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
});

/**
 * Nodes the cluster has when the run starts: with `nodePool`, NodeClaims of that NodePool
 * (Flotilla's, which it may consolidate); without, nodes of something else (a Cluster Autoscaler
 * node group, say), which Flotilla never touches.
 */
const initialNode = z.strictObject({
  name: name.optional(),
  count: z.number().int().min(1).default(1),
  nodePool: z.string().optional(),
  instanceType: z.string().min(1),
  zone: z.string().optional(),
  capacityType: z.enum(['on-demand', 'spot']).default('on-demand'),
  labels: stringMap.optional(),
  taints: z.array(taint).optional(),
});

/** The agent that removes a start-up taint does so this long after its node registers. */
const startupTaintRemoval = z.strictObject({ key: z.string().min(1), after: duration });

const instanceEvent = {
  at: duration,
  count: z.number().int().min(1).default(1),
  nodePool: z.string().optional(),
  instanceType: z.string().optional(),
  zone: z.string().optional(),
};
const spotInterruption = z.strictObject({ kind: z.literal('SpotInterruption'), ...instanceEvent });
const rebalanceRecommendation = z.strictObject({
  kind: z.literal('RebalanceRecommendation'),
  ...instanceEvent,
});

const insufficientCapacity = z.strictObject({
  kind: z.literal('InsufficientCapacity'),
  from: duration.prefault(0),
  until: duration.optional(),
  instanceType: z.string().optional(),
  zone: z.string().optional(),
  capacityType: z.enum(['on-demand', 'spot', 'reserved']).optional(),
});

/** Fields of a spec, merged as `kubectl patch --type merge` does (RFC 7386). */
const specPatch = z
  .record(z.string(), z.unknown())
  .refine((patch) => Object.keys(patch).length > 0, 'name at least one spec field to change');
const updateNodePool = z.strictObject({
  kind: z.literal('UpdateNodePool'),
  at: duration,
  name,
  spec: specPatch,
});
const updateEC2NodeClass = z.strictObject({
  kind: z.literal('UpdateEC2NodeClass'),
  at: duration,
  name,
  spec: specPatch,
});
const amiRelease = z.strictObject({
  kind: z.literal('AMIRelease'),
  at: duration,
  version: z.string().regex(/^v[0-9][0-9a-zA-Z.\-_]*$/, 'must be a release version such as v20260115'),
});

/** A rogue controller taints every node that joins from `at` (until `until`), as Karpenter's chaos test does. */
const rogueTaint = z.strictObject({
  kind: z.literal('RogueTaint'),
  at: duration.prefault(0),
  until: duration.optional(),
  key: z.string().min(1),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'NoExecute']),
});

/** A CloudWatch alarm (one a NodePool's flotilla.io/rollout-alarms names, say) enters `state` at `at`. */
const alarmState = z.strictObject({
  kind: z.literal('AlarmState'),
  at: duration.prefault(0),
  alarm: z.string().min(1).max(255),
  state: z.enum(['OK', 'ALARM', 'INSUFFICIENT_DATA']),
});

/** Kubelets of `count` Ready nodes (of `nodePool`) report NotReady from `at` on. */
const nodeNotReady = z.strictObject({
  kind: z.literal('NodeNotReady'),
  at: duration,
  count: z.number().int().min(1).default(1),
  nodePool: z.string().optional(),
});

const manifest = (kind: string, apiVersion: string) =>
  z.looseObject({
    apiVersion: z.literal(apiVersion),
    kind: z.literal(kind),
    // The name is checked against the CRD (a DNS subdomain), with the rest of the manifest.
    metadata: z.looseObject({ name: z.string() }),
  });

export const scenarioSchema = z.strictObject({
  name,
  description: z.string().optional(),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region such as us-east-1')
    .default('us-east-1'),
  zones: z.array(z.string()).min(1).optional(),
  start: z.iso.datetime({ offset: true }).default('2026-01-01T00:00:00Z'),
  duration,
  // Defaults go through the duration parser like any value written in the file.
  sampleInterval: duration.prefault('30s'),
  bootDelay: duration.prefault('45s'),
  /** The stack's settings the scenario runs with (FlotillaCluster props), at their defaults. */
  settings: settingsSchema.prefault({}),
  /**
   * A shadow Flotilla beside the live one (a FlotillaCluster in shadow mode): it decides on the same
   * cluster and cloud with its own settings and writes nothing; the record compares the two.
   */
  shadow: z.strictObject({ settings: shadowSettingsSchema.prefault({}) }).optional(),
  /**
   * kube-scheduler's configuration, as far as it changes where pods go. Flotilla, and a shadow
   * beside it, are told its scoring strategy (the stack's `kubeSchedulerScoring`) unless their
   * settings say otherwise.
   */
  kubeScheduler: z
    .strictObject({ scoringStrategy: z.enum(FIT_SCORINGS).default(DEFAULT_FIT_SCORING) })
    .default({ scoringStrategy: DEFAULT_FIT_SCORING }),
  startupTaintRemoval: z.array(startupTaintRemoval).default([]),
  nodes: z.array(initialNode).default([]),
  priorityClasses: z.array(priorityClass).default([]),
  daemonSets: z.array(daemonSet).default([]),
  nodePools: z.array(manifest('NodePool', 'karpenter.sh/v1')).min(1, 'at least one NodePool'),
  ec2NodeClasses: z
    .array(manifest('EC2NodeClass', 'karpenter.k8s.aws/v1'))
    .min(1, 'at least one EC2NodeClass'),
  /** NodeOverlays (karpenter.sh/v1alpha1) applied with the NodePools. */
  nodeOverlays: z.array(manifest('NodeOverlay', 'karpenter.sh/v1alpha1')).default([]),
  workloads: z.array(z.discriminatedUnion('kind', [deployment, job])).default([]),
  events: z
    .array(
      z.discriminatedUnion('kind', [
        spotInterruption,
        rebalanceRecommendation,
        insufficientCapacity,
        updateNodePool,
        updateEC2NodeClass,
        amiRelease,
        rogueTaint,
        nodeNotReady,
        alarmState,
      ]),
    )
    .default([]),
});

type AnySchema = z.ZodType;

/** The schema inside defaults, optionals and pipes. */
function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: AnySchema; in?: AnySchema };
    const inner = def.type === 'pipe' ? def.in : def.innerType;
    if (inner === undefined) return s;
    s = inner;
  }
}

/** For a discriminated union, the option whose `kind` the value has. */
function option(schema: AnySchema, value: unknown): AnySchema | undefined {
  const def = schema.def as { type: string; options?: readonly AnySchema[] };
  if (def.type !== 'union') return schema;
  const kind = (value as { kind?: unknown } | null | undefined)?.kind;
  return def.options?.find((o) => {
    const shape = (unwrap(o).def as { shape?: Record<string, AnySchema> }).shape;
    const literal = shape?.['kind']?.def as { values?: readonly unknown[] } | undefined;
    return literal?.values?.includes(kind) === true;
  });
}

/** A scenario file as its schema reads it, before the checks between its parts. */
export type ScenarioDocument = z.infer<typeof scenarioSchema>;

/** The fields the scenario schema declares for the object at `path` of `raw` (for "did you mean"). */
export function scenarioFieldsAt(raw: unknown, path: readonly (string | number)[]): string[] {
  let schema: AnySchema | undefined = scenarioSchema;
  let value = raw;
  for (const segment of path) {
    if (schema === undefined) return [];
    schema = option(unwrap(schema), value);
    if (schema === undefined) return [];
    const def = unwrap(schema).def as {
      type: string;
      element?: AnySchema;
      shape?: Record<string, AnySchema>;
    };
    schema = def.type === 'array' ? def.element : def.shape?.[String(segment)];
    value = (value as Record<string | number, unknown> | null | undefined)?.[segment];
  }
  if (schema === undefined) return [];
  const found = option(unwrap(schema), value);
  const shape =
    found === undefined ? undefined : (unwrap(found).def as { shape?: Record<string, AnySchema> }).shape;
  return Object.keys(shape ?? {});
}
