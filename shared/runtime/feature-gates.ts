// Karpenter's feature gates, by Karpenter's names and with its defaults (Karpenter v1.15's
// `--feature-gates` / FEATURE_GATES). The stack takes them as one `featureGates` prop (or
// `-c featureGates=…`), the simulator as a scenario setting; each Lambda that a gate changes gets
// that gate alone as an environment variable.

/** The gates Flotilla implements, with Karpenter's defaults. */
export const FEATURE_GATE_DEFAULTS = {
  /** Alpha: replace nodes unhealthy past their toleration (the garbage collector's repair pass). */
  NodeRepair: false,
  /** Beta: EC2NodeClass `capacityReservationSelectorTerms` resolved and launched into. */
  ReservedCapacity: true,
  /** Alpha: consolidation may replace spot nodes by cheaper spot nodes. */
  SpotToSpotConsolidation: false,
  /** Alpha: NodeOverlays change the instance types planned with, and get a status. */
  NodeOverlay: false,
  /** Alpha: NodePools with `spec.replicas` are kept at that many nodes. */
  StaticCapacity: false,
} as const satisfies Record<string, boolean>;

export type FeatureGateName = keyof typeof FEATURE_GATE_DEFAULTS;
export type FeatureGates = { readonly [Name in FeatureGateName]: boolean };

export const FEATURE_GATE_NAMES = Object.keys(FEATURE_GATE_DEFAULTS) as readonly FeatureGateName[];

/**
 * Karpenter's other gates: Flotilla does not implement them, so it runs as Karpenter does with each
 * at its default (off). Naming one at that default is accepted (a Karpenter flag copied as it is);
 * turning one on is refused.
 */
export const UNIMPLEMENTED_GATES: ReadonlySet<string> = new Set([
  'CapacityBuffer',
  'TerminateFirstDrift',
  'TerminateFirstRepair',
  'PodDeletionCostManagement',
]);

export const DEFAULT_FEATURE_GATES: FeatureGates = FEATURE_GATE_DEFAULTS;

export const isFeatureGateName = (name: string): name is FeatureGateName =>
  Object.hasOwn(FEATURE_GATE_DEFAULTS, name);

// The spellings Go's strconv.ParseBool accepts, which Karpenter's flag parser uses.
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** A parsed gate list: the gates it sets, and every problem found. */
export interface ParsedFeatureGates {
  readonly gates: Partial<Record<FeatureGateName, boolean>>;
  readonly problems: readonly string[];
}

/**
 * Parses a gate list as Karpenter parses `--feature-gates`: comma-separated `Name=bool` pairs
 * (spaces around names and values ignored, empty entries skipped, a later pair wins), each value
 * one of Go's boolean spellings (`true`, `false`, `1`, `0`, `t`, `F`, …). Unlike Karpenter, which
 * ignores a name it does not know, an unknown name is a problem, and so is one of Karpenter's gates
 * Flotilla does not implement set to true.
 */
export function parseFeatureGates(text: string): ParsedFeatureGates {
  const gates: Partial<Record<FeatureGateName, boolean>> = {};
  const problems: string[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const at = entry.indexOf('=');
    if (at < 0) {
      problems.push(`"${entry}" is not Name=true or Name=false`);
      continue;
    }
    const name = entry.slice(0, at).trim();
    const value = entry.slice(at + 1).trim();
    const on = TRUE.has(value) ? true : FALSE.has(value) ? false : undefined;
    if (on === undefined) {
      problems.push(`${name}: "${value}" is not a boolean (true or false)`);
      continue;
    }
    problems.push(...gateProblems(name, on));
    if (isFeatureGateName(name)) gates[name] = on;
  }
  return { gates, problems };
}

/** What is wrong with setting gate `name` to `on`: an unknown name, or an unimplemented gate on. */
export function gateProblems(name: string, on: boolean): string[] {
  if (isFeatureGateName(name)) return [];
  if (UNIMPLEMENTED_GATES.has(name)) {
    return on
      ? [`${name}: Karpenter's gate is not implemented by Flotilla; it can only be false (its default)`]
      : [];
  }
  return [`unknown feature gate "${name}"; Flotilla's gates are ${FEATURE_GATE_NAMES.join(', ')}`];
}

/** The deprecated boolean settings that each stand for one gate. */
export const GATE_ALIASES = {
  nodeRepair: 'NodeRepair',
  spotToSpotConsolidation: 'SpotToSpotConsolidation',
} as const satisfies Record<string, FeatureGateName>;

/**
 * Every gate's value: set in `gates`, else by its deprecated alias, else Karpenter's default. A
 * gate and its alias that disagree are a problem (neither wins).
 */
export function resolveFeatureGates(
  gates: { readonly [Name in FeatureGateName]?: boolean | undefined },
  aliases: { readonly [Alias in keyof typeof GATE_ALIASES]?: boolean | undefined },
): { readonly gates: FeatureGates; readonly problems: readonly string[] } {
  const out: Record<FeatureGateName, boolean> = { ...DEFAULT_FEATURE_GATES };
  const problems: string[] = [];
  for (const name of FEATURE_GATE_NAMES) {
    const value = gates[name];
    if (value !== undefined) out[name] = value;
  }
  for (const [alias, gate] of Object.entries(GATE_ALIASES) as [
    keyof typeof GATE_ALIASES,
    FeatureGateName,
  ][]) {
    const value = aliases[alias];
    if (value === undefined) continue;
    const set = gates[gate];
    if (set !== undefined && set !== value) {
      problems.push(
        `${alias} is ${value} but the ${gate} feature gate is ${set}; ${alias} is a deprecated name for the gate: set the gate alone`,
      );
      continue;
    }
    out[gate] = value;
  }
  return { gates: out, problems };
}

/** The gates as Karpenter writes them, e.g. `NodeRepair=false,ReservedCapacity=true,…`. */
export function formatFeatureGates(gates: FeatureGates): string {
  return FEATURE_GATE_NAMES.map((name) => `${name}=${gates[name]}`).join(',');
}
