import fs from 'node:fs';
import path from 'node:path';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { parseGoDurationMs } from '../shared/core/duration.ts';
import { FIT_SCORINGS, isFitScoring } from '../shared/core/resource-fit-score.ts';
import { parseFeatureGates } from '../shared/runtime/feature-gates.ts';
import type { FlotillaClusterProps } from './cluster-props.ts';
import { type ClusterSize, DEFAULT_CLUSTER_SIZE } from './cluster-size.ts';
import { FlotillaStack, shadowStackNameFor, stackNameFor } from './flotilla-stack.ts';
import { STACK_MODES, type StackMode } from './stack-mode.ts';

/** A problem with how the app was invoked (e.g. no `-c clusterName=…`). */
export class AppUsageError extends Error {
  override readonly name = 'AppUsageError';
}

export interface BuildAppOptions {
  /** Environment to read `CDK_DEFAULT_ACCOUNT` / `CDK_DEFAULT_REGION` from. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Passed to `App`; for tests. */
  readonly appProps?: ConstructorParameters<typeof App>[0];
}

/**
 * Builds the CDK app: one `FlotillaStack` for the cluster named by the `clusterName` context
 * value, `Flotilla-<cluster>`, or with `-c mode=shadow` its shadow stack `FlotillaShadow-<cluster>`,
 * with cdk-nag's AWS Solutions checks applied.
 *
 * @throws AppUsageError when `clusterName` is missing or not a string, or `mode` neither live nor shadow.
 */
export function buildApp(options: BuildAppOptions = {}): { app: App; stack: FlotillaStack } {
  const env = options.env ?? process.env;
  const app = new App(options.appProps);
  const clusterName: unknown = app.node.tryGetContext('clusterName');
  if (typeof clusterName !== 'string' || clusterName.trim() === '') {
    throw new AppUsageError(
      'clusterName is not set: run `npx cdk synth -c clusterName=<your EKS cluster name>` (or deploy), or add "clusterName" to the context in cdk.json',
    );
  }
  const account = env['CDK_DEFAULT_ACCOUNT'];
  const region = env['CDK_DEFAULT_REGION'];
  const clusterSize = clusterSizeFrom(app);
  const nodeRepair = booleanFrom(app, 'nodeRepair');
  const mode = modeFrom(app);
  const name = mode === 'shadow' ? shadowStackNameFor(clusterName) : stackNameFor(clusterName);
  const stack = new FlotillaStack(app, name, {
    clusterName,
    ...(mode === undefined ? {} : { mode }),
    ...(clusterSize === undefined ? {} : { clusterSize }),
    ...(nodeRepair === undefined ? {} : { nodeRepair }),
    ...karpenterSettingsFrom(app),
    // Without an account or region the stack stays environment-agnostic (synth needs no credentials).
    env: { ...(account === undefined ? {} : { account }), ...(region === undefined ? {} : { region }) },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}

/**
 * `-c mode=live|shadow` (FlotillaClusterProps.mode).
 * @throws AppUsageError for any other value.
 */
function modeFrom(app: App): StackMode | undefined {
  const value: unknown = app.node.tryGetContext('mode');
  if (value === undefined) return undefined;
  const mode = STACK_MODES.find((m) => m === value);
  if (mode === undefined) {
    throw new AppUsageError(
      `mode ${JSON.stringify(value)} is neither ${STACK_MODES.join(' nor ')} (e.g. -c mode=shadow)`,
    );
  }
  return mode;
}

/**
 * `-c clusterNodes=<n> -c clusterPods=<n>`: the size the Lambdas and the shim get memory for
 * (FlotillaClusterProps.clusterSize); either alone keeps the default of the other.
 * @throws AppUsageError when a value is not a whole number.
 */
function clusterSizeFrom(app: App): ClusterSize | undefined {
  const read = (key: string): number | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    if (value === undefined) return undefined;
    const number = typeof value === 'number' ? value : Number(value);
    if (!Number.isInteger(number)) {
      throw new AppUsageError(`${key} ${JSON.stringify(value)} is not a whole number (e.g. -c ${key}=2000)`);
    }
    return number;
  };
  const nodes = read('clusterNodes');
  const pods = read('clusterPods');
  if (nodes === undefined && pods === undefined) return undefined;
  return { nodes: nodes ?? DEFAULT_CLUSTER_SIZE.nodes, pods: pods ?? DEFAULT_CLUSTER_SIZE.pods };
}

/**
 * `-c <key>=true|false` (`nodeRepair`, `isolatedVPC`).
 * @throws AppUsageError when the value is neither true nor false.
 */
function booleanFrom(app: App, key: string): boolean | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new AppUsageError(`${key} ${JSON.stringify(value)} is neither true nor false (e.g. -c ${key}=true)`);
}

/**
 * Karpenter's feature gates and operator settings from the context, by the props' names:
 * `-c featureGates=NodeOverlay=true,StaticCapacity=true` (parsed as Karpenter parses
 * `--feature-gates`), `-c batchIdleDuration=1s`, `-c batchMaxDuration=10s`,
 * `-c amiRefreshInterval=5m` (Go durations), `-c vmMemoryOverheadPercent=0.075`, `-c maxCostPerHour=50`,
 * `-c reservedENIs=1`, `-c isolatedVPC=true`; and `-c extraNodeRoles=KarpenterNodeRole-x,…`,
 * `-c kubeSchedulerScoring=MostAllocated`.
 * Their ranges are the props' (checked at synth).
 * @throws AppUsageError when a value does not parse.
 */
function karpenterSettingsFrom(app: App): Partial<FlotillaClusterProps> {
  const context = (key: string): unknown => app.node.tryGetContext(key);
  const out: {
    -readonly [K in keyof FlotillaClusterProps]?: FlotillaClusterProps[K];
  } = {};
  const gates = context('featureGates');
  if (gates !== undefined) {
    const parsed = parseFeatureGates(String(gates));
    if (parsed.problems.length > 0) {
      throw new AppUsageError(
        `featureGates ${JSON.stringify(gates)}: ${parsed.problems.join('; ')} (e.g. -c featureGates=NodeOverlay=true,StaticCapacity=true)`,
      );
    }
    out.featureGates = parsed.gates;
  }
  for (const key of ['batchIdleDuration', 'batchMaxDuration', 'amiRefreshInterval'] as const) {
    const value = context(key);
    if (value === undefined) continue;
    const ms = parseGoDurationMs(String(value));
    if (ms === undefined) {
      throw new AppUsageError(`${key} ${JSON.stringify(value)} is not a duration (e.g. -c ${key}=10s)`);
    }
    out[key] = Duration.millis(ms);
  }
  for (const key of ['vmMemoryOverheadPercent', 'reservedENIs', 'maxCostPerHour'] as const) {
    const value = context(key);
    if (value === undefined) continue;
    const number = typeof value === 'number' ? value : Number(value);
    if (typeof value === 'boolean' || String(value).trim() === '' || !Number.isFinite(number)) {
      throw new AppUsageError(`${key} ${JSON.stringify(value)} is not a number (e.g. -c ${key}=1)`);
    }
    out[key] = number;
  }
  const roles = context('extraNodeRoles');
  if (roles !== undefined) {
    out.extraNodeRoles = String(roles)
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== '');
  }
  const isolatedVPC = booleanFrom(app, 'isolatedVPC');
  if (isolatedVPC !== undefined) out.isolatedVPC = isolatedVPC;
  const scoring = context('kubeSchedulerScoring');
  if (scoring !== undefined) {
    if (!isFitScoring(scoring)) {
      throw new AppUsageError(
        `kubeSchedulerScoring ${JSON.stringify(scoring)} is neither ${FIT_SCORINGS.join(' nor ')} (e.g. -c kubeSchedulerScoring=MostAllocated)`,
      );
    }
    out.kubeSchedulerScoring = scoring;
  }
  const repack = booleanFrom(app, 'repackConsolidation');
  if (repack !== undefined) out.repackConsolidation = repack;
  const runawayGuard = booleanFrom(app, 'runawayGuard');
  if (runawayGuard !== undefined) out.runawayGuard = runawayGuard;
  const cleanUpOnDestroy = booleanFrom(app, 'cleanUpOnDestroy');
  if (cleanUpOnDestroy !== undefined) out.cleanUpOnDestroy = cleanUpOnDestroy;
  return out;
}

/** Synthesizes the app and writes the cluster-side manifests next to the templates. */
export function synthApp(options: BuildAppOptions = {}): string {
  const { app, stack } = buildApp(options);
  const assembly = app.synth();
  const file = path.join(assembly.directory, `${stack.stackName}.cluster.yaml`);
  fs.writeFileSync(file, stack.flotilla.renderManifests());
  return file;
}
