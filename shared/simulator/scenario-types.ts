import type { CapacityType, FitScoring, Taint } from '../core/index.ts';
import type { AlarmState } from '../ports/alarms.ts';
import type { FeatureGates } from '../runtime/feature-gates.ts';
import type { OperatorSettings } from '../runtime/operator-settings.ts';
import type { MinValuesPolicy, PreferencePolicy } from '../runtime/scheduling-policy.ts';

// What a parsed scenario holds: times as milliseconds from the start, manifests as written.

/** A Kubernetes manifest kept as written (NodePool, EC2NodeClass). */
export type ScenarioManifest = Readonly<Record<string, unknown>> & {
  readonly kind: string;
  readonly metadata: { readonly name: string } & Readonly<Record<string, unknown>>;
};

/** A pod template in Kubernetes syntax (`metadata.labels`, `spec`). */
export interface PodTemplate {
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec: Readonly<Record<string, unknown>>;
}

export interface DeploymentWorkload {
  readonly kind: 'Deployment';
  readonly name: string;
  readonly namespace: string;
  /** Replicas from the start. */
  readonly replicas: number;
  /** Replica changes, in time order (offsets from the start, milliseconds). */
  readonly scale: readonly { readonly atMs: number; readonly replicas: number }[];
  readonly template: PodTemplate;
  /** A PodDisruptionBudget over the Deployment's pods, as `spec` minus the selector. */
  readonly disruptionBudget?: {
    readonly minAvailable?: number | string;
    readonly maxUnavailable?: number | string;
  };
}

export interface JobWorkload {
  readonly kind: 'Job';
  readonly name: string;
  readonly namespace: string;
  /** Created at this offset from the start. */
  readonly atMs: number;
  readonly completions: number;
  readonly parallelism: number;
  /** How long each pod runs once started. */
  readonly runTimeMs: number;
  readonly template: PodTemplate;
}

export type Workload = DeploymentWorkload | JobWorkload;

/** A DaemonSet: one pod of its template on every node the template matches and tolerates. */
export interface ScenarioDaemonSet {
  readonly name: string;
  readonly namespace: string;
  readonly template: PodTemplate;
}

/** A PriorityClass of the cluster besides the built-in ones (scheduling.k8s.io/v1). */
export interface ScenarioPriorityClass {
  readonly name: string;
  readonly value: number;
  /** The class of the pods that name none. */
  readonly globalDefault: boolean;
  readonly description?: string;
}

/** A node the cluster has when the run starts. */
export interface InitialNode {
  /** The Node's name for a foreign node, the NodeClaim's for Flotilla's. */
  readonly name: string;
  /** Flotilla's NodeClaim of this NodePool; absent: a node Flotilla did not launch. */
  readonly nodePool?: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: 'on-demand' | 'spot';
  /** Labels besides the well-known ones the node gets from its instance. */
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

/** kube-scheduler's NodeResourcesFit scoring: spread (its default) or bin-pack. */
export type ScoringStrategy = FitScoring;

export type ScenarioEvent =
  | {
      /**
       * A rogue controller taints every Node that joins from `atMs` until `untilMs` (no pod
       * tolerates the taint unless the scenario says so), as Karpenter's chaos test does.
       */
      readonly kind: 'RogueTaint';
      readonly atMs: number;
      readonly untilMs?: number;
      readonly taint: Taint;
    }
  | {
      /**
       * EC2 sends a spot interruption warning for `count` running spot instances (oldest first)
       * matching the filters and reclaims them two minutes later; a rebalance recommendation only
       * says they are at elevated risk.
       */
      readonly kind: 'SpotInterruption' | 'RebalanceRecommendation';
      readonly atMs: number;
      readonly count: number;
      readonly nodePool?: string;
      readonly instanceType?: string;
      readonly zone?: string;
    }
  | {
      /** EC2 has no capacity for the matching offerings from `fromMs` until `untilMs`. */
      readonly kind: 'InsufficientCapacity';
      readonly fromMs: number;
      readonly untilMs?: number;
      /** `*` matches any run of characters. */
      readonly instanceType?: string;
      readonly zone?: string;
      readonly capacityType?: CapacityType;
    }
  | {
      /**
       * A user changes a NodePool's or EC2NodeClass's spec: `spec` is merged into it as
       * `kubectl patch --type merge` does (objects merge, lists and values replace, null removes).
       */
      readonly kind: 'UpdateNodePool' | 'UpdateEC2NodeClass';
      readonly atMs: number;
      readonly name: string;
      readonly spec: Readonly<Record<string, unknown>>;
    }
  | {
      /** AWS publishes a new AL2023 release: `al2023@latest` resolves to its images from then on. */
      readonly kind: 'AMIRelease';
      readonly atMs: number;
      readonly version: string;
    }
  | {
      /**
       * A CloudWatch alarm enters `state` at `atMs` (an alarm no event sets does not exist). The
       * alarms a NodePool names in `flotilla.io/rollout-alarms` hold its drift and expiration
       * replacements while one is in ALARM.
       */
      readonly kind: 'AlarmState';
      readonly atMs: number;
      readonly alarm: string;
      readonly state: AlarmState;
    }
  | {
      /**
       * The kubelets of `count` Ready nodes (of `nodePool` when given, by name) report NotReady
       * from `atMs` on and never recover.
       */
      readonly kind: 'NodeNotReady';
      readonly atMs: number;
      readonly count: number;
      readonly nodePool?: string;
    };

export interface ScenarioSettings {
  /** Karpenter's feature gates (the stack's `featureGates`). @default Karpenter's defaults */
  readonly featureGates: FeatureGates;
  /**
   * Karpenter's operator settings the controllers run with (the stack's props of the same names);
   * the simulated catalog always prices from the bundled table, so there is no `isolatedVPC`.
   * @default Karpenter's defaults
   */
  readonly operator: Omit<OperatorSettings, 'isolatedVPC'>;
  /** Karpenter's MIN_VALUES_POLICY. @default 'Strict' */
  readonly minValuesPolicy: MinValuesPolicy;
  /** Karpenter's PREFERENCE_POLICY. @default 'Respect' */
  readonly preferencePolicy: PreferencePolicy;
  /** The stack's `maxCostPerHour` (Flotilla's cluster-wide dollar limit). @default none */
  readonly maxCostPerHour?: number;
  /** The stack's `repackConsolidation` (Flotilla's own repack method). @default false */
  readonly repackConsolidation: boolean;
  /** The stack's `kubeSchedulerScoring`. @default the simulated kube-scheduler's strategy */
  readonly kubeSchedulerScoring: FitScoring;
  /** The stack's `runawayGuard` (Flotilla's launch back-off). @default true */
  readonly runawayGuard: boolean;
  /**
   * Whether the disruption passes start commands; off, they keep the NodeClaims' conditions and
   * expire NodeClaims but disrupt nothing (the simulator's switch, not a stack's). @default true
   */
  readonly disruption: boolean;
}

/**
 * The settings a shadow Flotilla's stack takes in the simulator, each at Karpenter's default unless
 * the scenario sets it: what its provisioner and disruption passes decide with. It sees the
 * simulated EC2 and the EC2NodeClasses through the live stack, and waits no batch window.
 */
export interface ShadowSettings {
  readonly featureGates: Pick<FeatureGates, 'SpotToSpotConsolidation' | 'NodeOverlay' | 'StaticCapacity'>;
  readonly minValuesPolicy: MinValuesPolicy;
  readonly preferencePolicy: PreferencePolicy;
  /** The stack's `repackConsolidation`. @default false */
  readonly repackConsolidation: boolean;
  /** The stack's `kubeSchedulerScoring`. @default the simulated kube-scheduler's strategy */
  readonly kubeSchedulerScoring: FitScoring;
  /** The stack's `runawayGuard`. @default true */
  readonly runawayGuard: boolean;
}

/** A shadow Flotilla beside the live one: it decides on the same cluster and cloud, writing nothing. */
export interface ScenarioShadow {
  readonly settings: ShadowSettings;
}

export interface Scenario {
  readonly name: string;
  readonly description?: string;
  readonly region: string;
  readonly zones: readonly string[];
  /** Virtual start instant, epoch milliseconds. */
  readonly startMs: number;
  readonly durationMs: number;
  readonly sampleIntervalMs: number;
  /** From launch until the instance runs and its node registers. */
  readonly bootDelayMs: number;
  /** The stack's settings (FlotillaCluster props) the controllers run with. */
  readonly settings: ScenarioSettings;
  /** A shadow Flotilla beside the live one, compared with it in the record. @default none */
  readonly shadow?: ScenarioShadow;
  /** kube-scheduler's NodeResourcesFit scoring strategy. @default 'LeastAllocated' */
  readonly scoringStrategy: ScoringStrategy;
  /** Per start-up taint key, how long after its node registers the taint's agent removes it. */
  readonly startupTaintRemovalMs: ReadonlyMap<string, number>;
  /** Nodes there at the start (each one node: `count` is expanded). */
  readonly nodes: readonly InitialNode[];
  /** PriorityClasses the pods may name, besides system-node-critical and system-cluster-critical. */
  readonly priorityClasses: readonly ScenarioPriorityClass[];
  readonly daemonSets: readonly ScenarioDaemonSet[];
  readonly nodePools: readonly ScenarioManifest[];
  readonly ec2NodeClasses: readonly ScenarioManifest[];
  /** NodeOverlays, applied as a user applies them (none unless the scenario lists some). */
  readonly nodeOverlays: readonly ScenarioManifest[];
  readonly workloads: readonly Workload[];
  readonly events: readonly ScenarioEvent[];
}
