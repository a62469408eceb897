import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FlotillaConfigError } from '../../infra/flotilla-cluster.ts';
import { AppUsageError, buildApp } from '../../infra/main.ts';
import { EnvVar, type EnvVarKey } from '../../shared/runtime/env.ts';
import { actionsOf, allStatements, makeStack, NO_BUNDLING } from './stacks.ts';

// Karpenter's feature gates and operator settings as stack props: each reaches the environment of
// the Lambdas that act on it (and no other), with Karpenter's default or the value set; bad values
// and a gate at odds with its deprecated boolean fail the synth; `-c` sets them as Karpenter's
// flags do.

type Built = ReturnType<typeof makeStack>;
type Resource = { readonly Properties?: Record<string, unknown> };

/** Every Lambda's environment, by its row name. */
function environments(built: Built): Record<string, Record<string, unknown>> {
  const resources = built.template.findResources('AWS::Lambda::Function');
  return Object.fromEntries(
    Object.entries(built.cluster.functions).map(([name, fn]) => {
      const id = built.stack.getLogicalId(fn.node.defaultChild as never);
      const props = (resources[id] as Resource | undefined)?.Properties ?? {};
      const env = props['Environment'] as { Variables?: Record<string, unknown> } | undefined;
      return [name, env?.Variables ?? {}];
    }),
  );
}

/** Which Lambdas get `key`, with the value each gets. */
function holders(built: Built, key: EnvVarKey): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(environments(built)).flatMap(([name, env]) =>
      EnvVar[key] in env ? [[name, env[EnvVar[key]]]] : [],
    ),
  );
}

const WHERE: readonly [EnvVarKey, readonly string[], string, string][] = [
  ['nodeRepair', ['garbage-collector'], 'false', 'true'],
  ['spotToSpotConsolidation', ['disruption'], 'false', 'true'],
  ['reservedCapacity', ['provisioner', 'disruption'], 'true', 'false'],
  ['nodeOverlay', ['provisioner', 'disruption'], 'false', 'true'],
  ['staticCapacity', ['provisioner'], 'false', 'true'],
  ['batchIdleMs', ['provisioner'], '1000', '2500'],
  ['batchMaxMs', ['provisioner'], '10000', '20000'],
  ['vmMemoryOverheadPercent', ['provisioner', 'disruption'], '0.075', '0.1'],
  ['reservedENIs', ['provisioner', 'disruption'], '0', '1'],
  ['amiRefreshSeconds', ['provisioner'], '60', '300'],
  ['isolatedVPC', ['catalog'], 'false', 'true'],
  // Flotilla's own, beside Karpenter's: off unless the stack turns repack on.
  ['repackConsolidation', ['disruption'], 'false', 'true'],
  // What disruption's replay expects of kube-scheduler: its default unless the stack says otherwise.
  ['kubeSchedulerScoring', ['disruption'], 'LeastAllocated', 'MostAllocated'],
  // Flotilla's own, which Karpenter does not have: on unless the stack turns it off.
  ['runawayGuard', ['provisioner', 'disruption'], 'true', 'false'],
];

describe("Karpenter's feature gates and settings on FlotillaCluster", () => {
  let defaults: Built;
  let set: Built;
  beforeAll(() => {
    defaults = makeStack();
    set = makeStack({
      featureGates: {
        NodeRepair: true,
        SpotToSpotConsolidation: true,
        ReservedCapacity: false,
        NodeOverlay: true,
        StaticCapacity: true,
      },
      batchIdleDuration: Duration.millis(2500),
      batchMaxDuration: Duration.seconds(20),
      vmMemoryOverheadPercent: 0.1,
      reservedENIs: 1,
      amiRefreshInterval: Duration.minutes(5),
      isolatedVPC: true,
      repackConsolidation: true,
      kubeSchedulerScoring: 'MostAllocated',
      runawayGuard: false,
    });
  });

  it.each(WHERE)('%s reaches %j only, with Karpenter`s default %s', (key, lambdas, fallback) => {
    expect(holders(defaults, key)).toEqual(Object.fromEntries(lambdas.map((l) => [l, fallback])));
  });

  it.each(WHERE)('%s reaches %j only, set to the prop`s value', (key, lambdas, _fallback, value) => {
    expect(holders(set, key)).toEqual(Object.fromEntries(lambdas.map((l) => [l, value])));
  });

  it('keeps nodeRepair and spotToSpotConsolidation working as deprecated names of their gates', () => {
    const aliased = makeStack({
      nodeRepair: true,
      spotToSpotConsolidation: true,
      featureGates: { NodeRepair: true },
    });
    expect(holders(aliased, 'nodeRepair')).toEqual({ 'garbage-collector': 'true' });
    expect(holders(aliased, 'spotToSpotConsolidation')).toEqual({ disruption: 'true' });
  });

  it('lets no role call the Pricing API in an isolated VPC', () => {
    const pricing = (built: Built) =>
      allStatements(built.template).filter((s) => actionsOf(s).includes('pricing:GetProducts'));
    expect(pricing(defaults)).toHaveLength(1);
    expect(pricing(set)).toEqual([]);
  });

  it.each([
    [
      { featureGates: { NodeRepair: true }, nodeRepair: false },
      /nodeRepair is false but the NodeRepair feature gate is true/,
    ],
    [
      { featureGates: { SpotToSpotConsolidation: false }, spotToSpotConsolidation: true },
      /spotToSpotConsolidation is true but/,
    ],
    [{ featureGates: { NodeOverlays: true } }, /featureGates: unknown feature gate "NodeOverlays"/],
    [
      { featureGates: { CapacityBuffer: true } },
      /featureGates: CapacityBuffer: Karpenter's gate is not implemented/,
    ],
    [{ vmMemoryOverheadPercent: 1 }, /vmMemoryOverheadPercent is 1; .* less than 1/],
    [{ vmMemoryOverheadPercent: -0.5 }, /vmMemoryOverheadPercent is -0.5/],
    [{ reservedENIs: -1 }, /reservedENIs is -1; it must be a whole number, 0 or more/],
    [{ reservedENIs: 0.5 }, /reservedENIs is 0.5/],
    [
      { batchIdleDuration: Duration.seconds(5), batchMaxDuration: Duration.seconds(2) },
      /batchMaxDuration \(2000 ms\) is shorter than batchIdleDuration \(5000 ms\)/,
    ],
    [{ batchMaxDuration: Duration.minutes(1) }, /batchMaxDuration is 60000 ms; .* at most 30 s/],
    [{ amiRefreshInterval: Duration.seconds(30) }, /amiRefreshInterval is 30000 ms; .* at least 1 minute/],
    [
      { kubeSchedulerScoring: 'Balanced' },
      /kubeSchedulerScoring is "Balanced"; it must be one of LeastAllocated, MostAllocated/,
    ],
  ])('refuses %j at synth', (props, message) => {
    const build = () => makeStack(props as never);
    expect(build).toThrow(FlotillaConfigError);
    expect(build).toThrow(message);
  });
});

describe('-c featureGates and the settings context', () => {
  const build = (context: Record<string, unknown>) =>
    buildApp({
      env: { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'us-east-1' },
      appProps: { context: { ...NO_BUNDLING, clusterName: 'gated', ...context } },
    });
  const envOf = (stack: ReturnType<typeof build>['stack'], key: EnvVarKey) =>
    Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).flatMap((f) => {
      const env = (f as Resource).Properties?.['Environment'] as
        | { Variables?: Record<string, unknown> }
        | undefined;
      const value = env?.Variables?.[EnvVar[key]];
      return value === undefined ? [] : [value];
    });

  it('reads the gates as Karpenter reads --feature-gates, and the settings by their prop names', () => {
    const { stack } = build({
      featureGates: 'NodeOverlay=true, StaticCapacity=1,ReservedCapacity=false',
      batchIdleDuration: '2s',
      batchMaxDuration: '15s',
      amiRefreshInterval: '10m',
      vmMemoryOverheadPercent: '0.05',
      reservedENIs: '2',
      isolatedVPC: 'true',
      repackConsolidation: 'true',
      kubeSchedulerScoring: 'MostAllocated',
      runawayGuard: 'false',
    });
    expect(envOf(stack, 'repackConsolidation')).toEqual(['true']);
    expect(envOf(stack, 'kubeSchedulerScoring')).toEqual(['MostAllocated']);
    expect(envOf(stack, 'runawayGuard')).toEqual(['false', 'false']);
    expect(envOf(stack, 'nodeOverlay')).toEqual(['true', 'true']);
    expect(envOf(stack, 'staticCapacity')).toEqual(['true']);
    expect(envOf(stack, 'reservedCapacity')).toEqual(['false', 'false']);
    expect(envOf(stack, 'nodeRepair')).toEqual(['false']);
    expect(envOf(stack, 'batchIdleMs')).toEqual(['2000']);
    expect(envOf(stack, 'batchMaxMs')).toEqual(['15000']);
    expect(envOf(stack, 'amiRefreshSeconds')).toEqual(['600']);
    expect(envOf(stack, 'vmMemoryOverheadPercent')).toEqual(['0.05', '0.05']);
    expect(envOf(stack, 'reservedENIs')).toEqual(['2', '2']);
    expect(envOf(stack, 'isolatedVPC')).toEqual(['true']);
  });

  it('reads -c extraNodeRoles as a comma-separated list of roles the launches may pass', () => {
    const { stack } = build({ extraNodeRoles: 'KarpenterNodeRole-demo, OtherNodes' });
    const passed = JSON.stringify(Template.fromStack(stack).findResources('AWS::IAM::ManagedPolicy'));
    expect(passed).toContain(':role/KarpenterNodeRole-demo');
    expect(passed).toContain(':role/OtherNodes');
  });

  it.each([
    [
      { featureGates: 'NodeOverlay=maybe' },
      AppUsageError,
      /featureGates "NodeOverlay=maybe": NodeOverlay: "maybe" is not a boolean/,
    ],
    [{ featureGates: 'Overlay=true' }, AppUsageError, /unknown feature gate "Overlay"/],
    [{ batchIdleDuration: 'soon' }, AppUsageError, /batchIdleDuration "soon" is not a duration/],
    [{ reservedENIs: 'one' }, AppUsageError, /reservedENIs "one" is not a number/],
    [{ isolatedVPC: 'yes' }, AppUsageError, /isolatedVPC "yes" is neither true nor false/],
    [{ repackConsolidation: 'on' }, AppUsageError, /repackConsolidation "on" is neither true nor false/],
    [{ reservedENIs: '-1' }, FlotillaConfigError, /reservedENIs is -1/],
    [
      { kubeSchedulerScoring: 'spread' },
      AppUsageError,
      /kubeSchedulerScoring "spread" is neither LeastAllocated nor MostAllocated/,
    ],
    [
      { featureGates: 'NodeRepair=false', nodeRepair: 'true' },
      FlotillaConfigError,
      /nodeRepair is true but the NodeRepair feature gate is false/,
    ],
  ])('refuses %j', (context, type, message) => {
    expect(() => build(context)).toThrow(type);
    expect(() => build(context)).toThrow(message);
  });
});
