import {
  KUBELET_CONFIGURATION_FIELDS,
  type KubeletValueKind,
  parsePercent,
  quantitySign,
} from '../../core/index.ts';
import { nodeClassFamily } from '../../ports/ami-family.ts';
import { type EC2NodeClass, kubeletConfigMap } from '../../ports/cloud.ts';

// `spec.kubelet` is an open map the API server leaves unchecked (Karpenter v1.15). Karpenter's
// controller checks it, and so does Flotilla's status controller, here: every problem makes
// ValidationSucceeded False with the reason Karpenter gives it, and names the field to fix.

/** The ValidationSucceeded reasons of `spec.kubelet` problems, as Karpenter names them. */
export const KubeletReason = {
  /** Not a kubelet configuration field, a value of the wrong JSON type, or one kubelet would refuse or ignore. */
  invalid: 'InvalidKubeletConfiguration',
  /**
   * A CEL expression (a string maxPods; a kubeReserved or systemReserved value that is not a
   * quantity). Karpenter evaluates them only behind its NodeClassCEL feature gate, off by default;
   * Flotilla never does.
   */
  expressionsDisabled: 'KubeletExpressionsDisabled',
  /** A valid field the class's AMI family would not put on its nodes. */
  unsupported: 'UnsupportedKubeletConfiguration',
} as const;
export type KubeletReason = (typeof KubeletReason)[keyof typeof KubeletReason];

export interface KubeletProblem {
  readonly reason: KubeletReason;
  /** Where in `spec.kubelet`: a field, or a field and a key of its map. */
  readonly path: readonly string[];
  /** What is wrong and what to do, without the field. */
  readonly problem: string;
  /** The field and the problem, as the condition says it: `spec.kubelet.maxPods: …`. */
  readonly message: string;
}

/** A problem before it has a reason. */
interface Found {
  readonly path: readonly string[];
  readonly problem: string;
}

const found = (path: readonly string[], problem: string): Found => ({ path, problem });

/** The signals kubelet evicts on; it ignores a threshold keyed by anything else. */
const EVICTION_SIGNALS = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'pid.available',
];
const EVICTION_MAPS = ['evictionHard', 'evictionSoft', 'evictionSoftGracePeriod', 'evictionMinimumReclaim'];
/** The resources kubelet can reserve; it ignores any other key. */
const RESERVABLE = ['cpu', 'memory', 'ephemeral-storage', 'pid'];
const RESERVED_MAPS = ['kubeReserved', 'systemReserved'];

/** Fields Flotilla writes itself on every node, and why a value set here would be lost. */
const FLOTILLA_OWNED: ReadonlyMap<string, string> = new Map([
  [
    'registerWithTaints',
    "Flotilla sets it from the NodeClaim's taints so that the node registers tainted until it is initialized; put taints on the NodePool instead",
  ],
]);

/** A Go duration (`time.ParseDuration`): `"0"`, or numbers with units, optionally signed. */
const GO_DURATION = /^[+-]?(?:0|(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;

/** Every problem of `spec.kubelet`, invalid ones first, then expressions, then unsupported fields. */
export function kubeletProblems(nodeClass: EC2NodeClass): KubeletProblem[] {
  const kubelet = nodeClass.spec.kubelet;
  if (kubelet === undefined) return [];
  const config = kubeletConfigMap(kubelet);
  const invalid = [...fieldProblems(config), ...semanticProblems(config)];
  const expressions = expressionProblems(config);
  // A value the parser set aside always has a problem above; this keeps it so if the rules drift.
  for (const [field, value] of Object.entries(kubelet.unreadable ?? {})) {
    if (![...invalid, ...expressions].some((f) => f.path[0] === field))
      invalid.push(found([field], `Flotilla cannot use ${show(value)}`));
  }
  const withReason = (reason: KubeletReason) => (f: Found) => ({
    reason,
    ...f,
    message: `spec.kubelet.${f.path[0]}${f.path
      .slice(1)
      .map((key) => `["${key}"]`)
      .join('')}: ${f.problem}`,
  });
  return [
    ...invalid.map(withReason(KubeletReason.invalid)),
    ...expressions.map(withReason(KubeletReason.expressionsDisabled)),
    ...familyProblems(nodeClass).map(withReason(KubeletReason.unsupported)),
  ];
}

/** Each field against the upstream kubelet configuration: known by that name, of its JSON kind. */
function fieldProblems(config: Readonly<Record<string, unknown>>): Found[] {
  const problems: Found[] = [];
  for (const [field, value] of sorted(config)) {
    const kind = KUBELET_CONFIGURATION_FIELDS.get(field);
    if (kind === undefined) {
      const near = [...KUBELET_CONFIGURATION_FIELDS.keys()].find(
        (k) => k.toLowerCase() === field.toLowerCase(),
      );
      problems.push(
        found(
          [field],
          `is not a kubelet configuration field${near === undefined ? '' : ` (did you mean ${near}?)`}; remove it`,
        ),
      );
    } else if (!fits(value, kind) && !(field === 'maxPods' && typeof value === 'string')) {
      // (A string maxPods is an expression: see expressionProblems.)
      problems.push(found([field], `must be ${describe(kind)}, not ${show(value)}`));
    }
  }
  return problems;
}

/** What kubelet would refuse or silently ignore although each field has the right JSON kind. */
function semanticProblems(config: Readonly<Record<string, unknown>>): Found[] {
  const problems: Found[] = [];
  for (const [field, why] of FLOTILLA_OWNED) {
    if (config[field] !== undefined) problems.push(found([field], `may not be set; ${why}`));
  }
  for (const field of EVICTION_MAPS) {
    for (const [signal, value] of sorted(stringMap(config[field]) ?? {})) {
      if (!EVICTION_SIGNALS.includes(signal)) {
        problems.push(
          found([field, signal], `is not an eviction signal; use ${EVICTION_SIGNALS.join(', ')}`),
        );
      }
      const problem =
        field === 'evictionSoftGracePeriod' ? gracePeriodProblem(value) : thresholdProblem(value);
      if (problem !== undefined) problems.push(found([field, signal], problem));
    }
  }
  problems.push(...softEvictionProblems(config));
  for (const field of RESERVED_MAPS) {
    for (const [resource, value] of sorted(stringMap(config[field]) ?? {})) {
      if (!RESERVABLE.includes(resource)) {
        problems.push(
          found([field, resource], `is not a resource kubelet reserves; use ${RESERVABLE.join(', ')}`),
        );
      }
      if (value.startsWith('-')) problems.push(found([field, resource], `"${value}" must not be negative`));
    }
  }
  for (const field of ['imageGCHighThresholdPercent', 'imageGCLowThresholdPercent']) {
    const value = config[field];
    if (Number.isInteger(value) && ((value as number) < 0 || (value as number) > 100))
      problems.push(found([field], `${value} must be between 0 and 100`));
  }
  for (const field of ['maxPods', 'podsPerCore', 'evictionMaxPodGracePeriod']) {
    const value = config[field];
    if (Number.isInteger(value) && (value as number) < 0)
      problems.push(found([field], `${value} must not be negative`));
  }
  const high = config['imageGCHighThresholdPercent'];
  const low = config['imageGCLowThresholdPercent'];
  if (Number.isInteger(high) && Number.isInteger(low) && (high as number) <= (low as number)) {
    problems.push(
      found(
        ['imageGCHighThresholdPercent'],
        `${high} must be greater than imageGCLowThresholdPercent (${low}), or images are never collected`,
      ),
    );
  }
  return problems;
}

/**
 * kubelet ignores a soft threshold without a grace period and refuses a grace period without a
 * threshold, so the two maps need the same signals (a map left out has none).
 */
function softEvictionProblems(config: Readonly<Record<string, unknown>>): Found[] {
  const soft = config['evictionSoft'] === undefined ? {} : stringMap(config['evictionSoft']);
  const grace =
    config['evictionSoftGracePeriod'] === undefined ? {} : stringMap(config['evictionSoftGracePeriod']);
  // A map of the wrong kind already has its problem.
  if (soft === undefined || grace === undefined) return [];
  return [
    ...Object.keys(soft)
      .filter((signal) => !Object.hasOwn(grace, signal))
      .sort()
      .map((signal) =>
        found(['evictionSoft', signal], `has no grace period; set evictionSoftGracePeriod["${signal}"] too`),
      ),
    ...Object.keys(grace)
      .filter((signal) => !Object.hasOwn(soft, signal))
      .sort()
      .map((signal) =>
        found(
          ['evictionSoftGracePeriod', signal],
          'has no evictionSoft threshold for the signal; set one or remove the grace period',
        ),
      ),
  ];
}

/** An eviction threshold is a percentage from 0 to 100 or a quantity that is not negative. */
function thresholdProblem(value: string): string | undefined {
  if (value.endsWith('%')) {
    const percent = parsePercent(value);
    return percent !== undefined && percent >= 0 && percent <= 100
      ? undefined
      : `"${value}" must be a percentage from 0% to 100% or a quantity`;
  }
  const sign = quantitySign(value);
  if (sign === undefined) return `"${value}" must be a percentage or a quantity such as "500Mi"`;
  return sign < 0 ? `"${value}" must not be negative` : undefined;
}

function gracePeriodProblem(value: string): string | undefined {
  if (!GO_DURATION.test(value)) return `"${value}" must be a duration such as "1m30s"`;
  return value.startsWith('-') && /[1-9]/.test(value) ? `"${value}" must not be negative` : undefined;
}

/** Values Karpenter would take as CEL expressions, which Flotilla does not evaluate. */
function expressionProblems(config: Readonly<Record<string, unknown>>): Found[] {
  const advice =
    'Flotilla does not evaluate kubelet expressions (Karpenter does only with its NodeClassCEL feature gate, off by default)';
  const problems: Found[] = [];
  const maxPods = config['maxPods'];
  if (typeof maxPods === 'string')
    problems.push(found(['maxPods'], `${show(maxPods)} is an expression; ${advice}; set a number`));
  for (const field of RESERVED_MAPS) {
    const map = config[field];
    if (!isPlainObject(map)) continue;
    for (const [resource, value] of sorted(map)) {
      if (typeof value === 'string' && quantitySign(value) === undefined) {
        problems.push(
          found(
            [field, resource],
            `${show(value)} is not a quantity, so it is an expression; ${advice}; set a quantity such as "500Mi"`,
          ),
        );
      }
    }
  }
  return problems;
}

/**
 * Valid fields the class's AMI family would drop: every family but AL2023 applies only the managed
 * fields (and Bottlerocket has no pods-per-core setting), and AL2, Windows and Bottlerocket give
 * kubelet one DNS server. Custom writes its own user data, so nothing is dropped for it.
 */
function familyProblems(nodeClass: EC2NodeClass): Found[] {
  const kubelet = nodeClass.spec.kubelet;
  const family = nodeClassFamily(nodeClass.spec);
  if (kubelet === undefined || family === undefined || family === 'AL2023' || family === 'Custom') return [];
  const dropped = Object.keys(kubelet.unmanaged ?? {}).filter(
    (field) => KUBELET_CONFIGURATION_FIELDS.has(field) && !FLOTILLA_OWNED.has(field),
  );
  if (family === 'Bottlerocket' && kubelet.podsPerCore !== undefined) dropped.push('podsPerCore');
  const problems = dropped
    .sort()
    .map((field) =>
      found(
        [field],
        `the ${family} AMI family does not apply it, so nodes would run without it; remove it (AL2023 applies every kubelet field)`,
      ),
    );
  const dns = kubelet.clusterDNS ?? [];
  if (dns.length > 1) {
    problems.push(
      found(
        ['clusterDNS'],
        `the ${family} AMI family gives kubelet one DNS server, but ${dns.length} are set; keep one`,
      ),
    );
  }
  return problems;
}

/** The range of a Go int32, which kubelet reads an int32 field into. */
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function fits(value: unknown, kind: KubeletValueKind): boolean {
  // A null leaves the field unset, whatever its type.
  if (value === null) return true;
  if (typeof kind === 'object') {
    if ('array' in kind) return Array.isArray(value) && value.every((v) => fits(v, kind.array));
    return isPlainObject(value) && Object.values(value).every((v) => fits(v, kind.map));
  }
  switch (kind) {
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'int32':
      return Number.isSafeInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX;
    case 'int64':
      return Number.isSafeInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'duration':
      return typeof value === 'string' && GO_DURATION.test(value);
    case 'object':
      return isPlainObject(value);
  }
}

/** `kind` as a phrase: "an integer", "a map of lists of strings"; an int32 with its range. */
function describe(kind: KubeletValueKind): string {
  const phrase = noun(kind, false);
  const range = kind === 'int32' ? ` (${INT32_MIN} to ${INT32_MAX})` : '';
  return `${/^[aeiou]/.test(phrase) ? 'an' : 'a'} ${phrase}${range}`;
}

function noun(kind: KubeletValueKind, plural: boolean): string {
  const s = plural ? 's' : '';
  if (typeof kind === 'object') {
    return 'array' in kind ? `list${s} of ${noun(kind.array, true)}` : `map${s} of ${noun(kind.map, true)}`;
  }
  if (kind === 'int32') return `32-bit integer${s}`;
  if (kind === 'int64') return `integer${s}`;
  return kind === 'duration' ? `duration${s} (such as "30s")` : `${kind}${s}`;
}

function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A map of strings, or undefined when `value` is anything else. */
function stringMap(value: unknown): Readonly<Record<string, string>> | undefined {
  return isPlainObject(value) && Object.values(value).every((v) => typeof v === 'string')
    ? (value as Readonly<Record<string, string>>)
    : undefined;
}

function sorted<T>(map: Readonly<Record<string, T>>): [string, T][] {
  return Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A value as JSON, cut short. */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
