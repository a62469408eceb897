// A scenario as the simulator runs it, built from the file as its schema read it: times in
// milliseconds, initial node groups expanded into nodes, workloads and events in their run form.
import type { FitScoring } from '../core/index.ts';
import { FEATURE_GATE_DEFAULTS, resolveFeatureGates } from '../runtime/feature-gates.ts';
import { operatorSettingsIn, type ScenarioDocument } from './scenario-schema.ts';
import type {
  InitialNode,
  PodTemplate,
  Scenario,
  ScenarioEvent,
  ScenarioManifest,
  ScenarioShadow,
  ShadowSettings,
  Workload,
} from './scenario-types.ts';

/** The scenario of a checked document, running in `zones`. */
export function toScenario(s: ScenarioDocument, zones: readonly string[]): Scenario {
  return {
    name: s.name,
    ...(s.description === undefined ? {} : { description: s.description.trim() }),
    region: s.region,
    zones,
    startMs: Date.parse(s.start),
    durationMs: s.duration,
    sampleIntervalMs: s.sampleInterval,
    bootDelayMs: s.bootDelay,
    settings: {
      // Checked by the schema: a gate and its deprecated alias agree.
      featureGates: resolveFeatureGates(s.settings.featureGates, {
        nodeRepair: s.settings.nodeRepair,
        spotToSpotConsolidation: s.settings.spotToSpotConsolidation,
      }).gates,
      minValuesPolicy: s.settings.minValuesPolicy,
      preferencePolicy: s.settings.preferencePolicy,
      ...(s.settings.maxCostPerHour === undefined ? {} : { maxCostPerHour: s.settings.maxCostPerHour }),
      repackConsolidation: s.settings.repackConsolidation,
      kubeSchedulerScoring: s.settings.kubeSchedulerScoring ?? s.kubeScheduler.scoringStrategy,
      runawayGuard: s.settings.runawayGuard,
      operator: operatorSettingsIn(s.settings),
      disruption: s.settings.disruption,
    },
    ...(s.shadow === undefined ? {} : { shadow: toShadow(s.shadow, s.kubeScheduler.scoringStrategy) }),
    scoringStrategy: s.kubeScheduler.scoringStrategy,
    startupTaintRemovalMs: new Map(s.startupTaintRemoval.map((r) => [r.key, r.after])),
    nodes: s.nodes.flatMap((n, i) =>
      Array.from({ length: n.count }, (_, j): InitialNode => {
        const base =
          n.name ?? (n.nodePool === undefined ? `node-${i + 1}` : `${n.nodePool}-initial-${i + 1}`);
        return {
          name: n.count === 1 && n.name !== undefined ? base : `${base}-${j + 1}`,
          ...(n.nodePool === undefined ? {} : { nodePool: n.nodePool }),
          instanceType: n.instanceType,
          zone: n.zone ?? zones[0] ?? '',
          capacityType: n.capacityType,
          labels: n.labels ?? {},
          taints: (n.taints ?? []).map((t) => ({
            key: t.key,
            effect: t.effect,
            ...(t.value === undefined ? {} : { value: t.value }),
          })),
        };
      }),
    ),
    priorityClasses: s.priorityClasses.map((c) => ({
      name: c.name,
      value: c.value,
      globalDefault: c.globalDefault,
      ...(c.description === undefined ? {} : { description: c.description }),
    })),
    daemonSets: s.daemonSets.map((d) => ({
      name: d.name,
      namespace: d.namespace,
      template: d.template as PodTemplate,
    })),
    nodePools: s.nodePools as ScenarioManifest[],
    ec2NodeClasses: s.ec2NodeClasses as ScenarioManifest[],
    nodeOverlays: s.nodeOverlays as ScenarioManifest[],
    workloads: s.workloads.map((w): Workload => {
      const template = w.template as PodTemplate;
      if (w.kind === 'Deployment') {
        return {
          kind: 'Deployment',
          name: w.name,
          namespace: w.namespace,
          replicas: w.replicas,
          scale: w.scale.map((x) => ({ atMs: x.at, replicas: x.replicas })).sort((a, b) => a.atMs - b.atMs),
          template,
          ...(w.disruptionBudget === undefined
            ? {}
            : {
                disruptionBudget: {
                  ...(w.disruptionBudget.minAvailable === undefined
                    ? {}
                    : { minAvailable: w.disruptionBudget.minAvailable }),
                  ...(w.disruptionBudget.maxUnavailable === undefined
                    ? {}
                    : { maxUnavailable: w.disruptionBudget.maxUnavailable }),
                },
              }),
        };
      }
      return {
        kind: 'Job',
        name: w.name,
        namespace: w.namespace,
        atMs: w.at,
        completions: w.completions,
        parallelism: w.parallelism ?? w.completions,
        runTimeMs: w.runTime,
        template,
      };
    }),
    events: s.events.map((e): ScenarioEvent => {
      if (e.kind === 'UpdateNodePool' || e.kind === 'UpdateEC2NodeClass') {
        return { kind: e.kind, atMs: e.at, name: e.name, spec: e.spec };
      }
      if (e.kind === 'AMIRelease') return { kind: 'AMIRelease', atMs: e.at, version: e.version };
      if (e.kind === 'AlarmState') return { kind: 'AlarmState', atMs: e.at, alarm: e.alarm, state: e.state };
      if (e.kind === 'NodeNotReady') {
        return {
          kind: 'NodeNotReady',
          atMs: e.at,
          count: e.count,
          ...(e.nodePool === undefined ? {} : { nodePool: e.nodePool }),
        };
      }
      if (e.kind === 'RogueTaint') {
        return {
          kind: 'RogueTaint',
          atMs: e.at,
          ...(e.until === undefined ? {} : { untilMs: e.until }),
          taint: { key: e.key, effect: e.effect, ...(e.value === undefined ? {} : { value: e.value }) },
        };
      }
      if (e.kind !== 'InsufficientCapacity') {
        return {
          kind: e.kind,
          atMs: e.at,
          count: e.count,
          ...(e.nodePool === undefined ? {} : { nodePool: e.nodePool }),
          ...(e.instanceType === undefined ? {} : { instanceType: e.instanceType }),
          ...(e.zone === undefined ? {} : { zone: e.zone }),
        };
      }
      return {
        kind: 'InsufficientCapacity',
        fromMs: e.from,
        ...(e.until === undefined ? {} : { untilMs: e.until }),
        ...(e.instanceType === undefined ? {} : { instanceType: e.instanceType }),
        ...(e.zone === undefined ? {} : { zone: e.zone }),
        ...(e.capacityType === undefined ? {} : { capacityType: e.capacityType }),
      };
    }),
  };
}

/** The shadow Flotilla a document asks for, each gate it leaves unset at Karpenter's default. */
function toShadow(shadow: NonNullable<ScenarioDocument['shadow']>, scoring: FitScoring): ScenarioShadow {
  const { featureGates, minValuesPolicy, preferencePolicy, repackConsolidation, runawayGuard } =
    shadow.settings;
  const gate = (name: keyof ShadowSettings['featureGates']) =>
    featureGates[name] ?? FEATURE_GATE_DEFAULTS[name];
  return {
    settings: {
      featureGates: {
        SpotToSpotConsolidation: gate('SpotToSpotConsolidation'),
        NodeOverlay: gate('NodeOverlay'),
        StaticCapacity: gate('StaticCapacity'),
      },
      minValuesPolicy,
      preferencePolicy,
      repackConsolidation,
      kubeSchedulerScoring: shadow.settings.kubeSchedulerScoring ?? scoring,
      runawayGuard,
    },
  };
}
