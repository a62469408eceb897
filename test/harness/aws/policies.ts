import { FLOTILLA_FUNCTIONS } from '../../../infra/functions.ts';
import { SHADOW_FUNCTIONS } from '../../../infra/stack-mode.ts';
import { HarnessError } from '../errors.ts';
import { sharedService } from '../services.ts';
import { shadowRole } from './identity.ts';
import {
  AMI_PARAMETER_PATH,
  HARNESS_STACK_NAME,
  SHADOW_STACK_ARNS,
  SHADOW_STACK_NAMES,
  STACK_ACCOUNT,
  STACK_ARNS,
  STACK_CLUSTER,
  STACK_NAMES,
  STACK_REGION,
} from './stack.ts';

// Each Lambda's IAM policy, as `cdk synth` renders it, with its references resolved to the stack's
// resources as the harness deploys them on moto (stack.ts): the live stack's roles by their
// Lambda's name, the shadow stack's (`mode: 'shadow'`) as `shadow-<name>`. Synthesised once per test run: every
// harness file loads this module (the IAM check's setup file), and only the one that synthesizes
// loads the CDK and the stack, seconds of module loading per file otherwise.

/** An IAM policy document as the template holds it, references resolved. */
export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: readonly Record<string, unknown>[];
}

/** Lambda name (a FLOTILLA_FUNCTIONS row, or `shim`; `shadow-…` for the shadow stack's) → the policies of its role. */
export type StackPolicies = Readonly<Record<string, readonly PolicyDocument[]>>;

type Resource = { Type: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> };

/** The policies of every Lambda role in the synthesized stack (cached for the run). */
export function stackPolicies(): Promise<StackPolicies> {
  return sharedService('stack-policies', synthesizePolicies, 5 * 60_000);
}

async function synthesizePolicies(): Promise<StackPolicies> {
  const [{ App }, { FlotillaStack }] = await Promise.all([
    import('aws-cdk-lib'),
    import('../../../infra/flotilla-stack.ts'),
  ]);
  const app = new App({
    context: { 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-path-metadata': true },
  });
  for (const [id, mode] of [
    ['Flotilla', 'live'],
    ['FlotillaShadow', 'shadow'],
  ] as const) {
    new FlotillaStack(app, id, {
      clusterName: STACK_CLUSTER,
      env: { account: STACK_ACCOUNT, region: STACK_REGION },
      // Deployed as a team would that keeps its own AMI ids under /team/ (ssmParameter terms).
      amiParameterPaths: [AMI_PARAMETER_PATH],
      mode,
    });
  }
  const assembly = app.synth();
  const resourcesOf = (id: string) =>
    assembly.getStackByName(id).template.Resources as Record<string, Resource>;
  return {
    ...rolePolicies(
      resourcesOf('Flotilla'),
      liveDeployed,
      FLOTILLA_FUNCTIONS.map((f) => f.name),
      (n) => n,
    ),
    ...rolePolicies(resourcesOf('FlotillaShadow'), shadowDeployed, SHADOW_FUNCTIONS, shadowRole),
  };
}

/** What the harness deployed for a resource of the live stack, by its construct path. */
function liveDeployed(path: string, ref: boolean): string | undefined {
  if (path.endsWith('/SummaryBucket/Resource'))
    return ref ? STACK_NAMES.summaryBucket : STACK_ARNS.summaryBucket;
  if (path.endsWith('/StateTable/Resource')) return STACK_ARNS.stateTable;
  if (path.endsWith('/PodEventsQueue/Resource')) return STACK_ARNS.queues.podEvents;
  if (path.endsWith('/InterruptionQueue/Resource')) return STACK_ARNS.queues.interruption;
  if (path.endsWith('/TerminationQueue/Resource')) return STACK_ARNS.queues.termination;
  if (path.endsWith('/DisruptionPassesQueue/Resource')) return STACK_ARNS.queues.disruptionPasses;
  if (path.endsWith('/NodeRole/Resource')) return STACK_ARNS.nodeRole;
  if (path.endsWith('/DecisionBus/Resource')) return ref ? STACK_NAMES.decisionBus : STACK_ARNS.decisionBus;
  if (path.endsWith('/WakeUpRole/Resource')) return ref ? STACK_NAMES.wakeUpRole : STACK_ARNS.wakeUpRole;
  return undefined;
}

/** What the harness deployed for a resource of the shadow stack (its own table, bucket, queue and log groups). */
function shadowDeployed(path: string, ref: boolean): string | undefined {
  if (path.endsWith('/SummaryBucket/Resource'))
    return ref ? SHADOW_STACK_NAMES.summaryBucket : SHADOW_STACK_ARNS.summaryBucket;
  if (path.endsWith('/StateTable/Resource')) return SHADOW_STACK_ARNS.stateTable;
  if (path.endsWith('/PodEventsQueue/Resource')) return SHADOW_STACK_ARNS.podEvents;
  if (path.endsWith('/DecisionBus/Resource'))
    return ref ? SHADOW_STACK_NAMES.decisionBus : SHADOW_STACK_ARNS.decisionBus;
  if (path.endsWith('ProvisionerLogGroup/Resource'))
    return ref ? SHADOW_STACK_NAMES.logGroups.provisioner : SHADOW_STACK_ARNS.logGroups.provisioner;
  if (path.endsWith('DisruptionLogGroup/Resource'))
    return ref ? SHADOW_STACK_NAMES.logGroups.disruption : SHADOW_STACK_ARNS.logGroups.disruption;
  return undefined;
}

/**
 * The policies of the Lambda roles of `functions` and of the shim in one synthesized stack, keyed
 * by `key(name)`, their references resolved with `deployedOf`.
 */
function rolePolicies(
  resources: Record<string, Resource>,
  deployedOf: (path: string, ref: boolean) => string | undefined,
  functions: readonly string[],
  key: (name: string) => string,
): Record<string, PolicyDocument[]> {
  const pathOf = (id: string) => String(resources[id]?.Metadata?.['aws:cdk:path'] ?? '');
  /**
   * Logical id → what the harness deployed for it, by the construct the resource belongs to: its
   * ARN, or for a bucket's `Ref` its name (S3 ARNs are built from it).
   */
  const deployed = (id: string, ref = false): string | undefined => deployedOf(pathOf(id), ref);
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    if (keys.length === 1 && keys[0] === 'Ref') {
      const ref = String(object['Ref']);
      if (ref === 'AWS::Partition') return 'aws';
      if (ref === 'AWS::Region') return STACK_REGION;
      if (ref === 'AWS::AccountId') return STACK_ACCOUNT;
      if (ref === 'AWS::URLSuffix') return 'amazonaws.com';
      // The stack as the harness deploys it in moto's CloudFormation (deployStack): its id ends in a
      // uuid CloudFormation chooses, so the policy's own-stack ARN is matched on the rest.
      if (ref === 'AWS::StackId') {
        return `arn:aws:cloudformation:${STACK_REGION}:${STACK_ACCOUNT}:stack/${HARNESS_STACK_NAME}/*`;
      }
      return deployed(ref, true) ?? `unresolved:${ref}`;
    }
    if (keys.length === 1 && keys[0] === 'Fn::GetAtt') {
      const [id] = object['Fn::GetAtt'] as [string, string];
      // Anything else (log groups, failure queues) cannot match a call a test makes.
      return deployed(id) ?? `arn:aws:unresolved:${STACK_REGION}:${STACK_ACCOUNT}:${id}`;
    }
    if (keys.length === 1 && keys[0] === 'Fn::Join') {
      const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => String(resolve(p))).join(separator);
    }
    return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolve(v)]));
  };

  const out: Record<string, PolicyDocument[]> = {};
  for (const name of functions) {
    const pascal = name
      .split('-')
      .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
      .join('');
    const roleId = Object.keys(resources).find(
      (id) => resources[id]?.Type === 'AWS::IAM::Role' && pathOf(id).endsWith(`/${pascal}Role/Resource`),
    );
    if (roleId === undefined)
      throw new HarnessError(`the synthesized stack has no role for the ${name} Lambda`);
    const role = resources[roleId] as Resource;
    const documents: PolicyDocument[] = [];
    for (const ref of (role.Properties?.['ManagedPolicyArns'] ?? []) as { Ref?: string }[]) {
      const managed = ref.Ref === undefined ? undefined : resources[ref.Ref];
      if (managed?.Type !== 'AWS::IAM::ManagedPolicy') continue;
      documents.push(resolve(managed.Properties?.['PolicyDocument']) as PolicyDocument);
    }
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      const roles = (resource.Properties?.['Roles'] ?? []) as { Ref?: string }[];
      if (roles.some((r) => r.Ref === roleId)) {
        documents.push(resolve(resource.Properties?.['PolicyDocument']) as PolicyDocument);
      }
    }
    out[key(name)] = documents;
  }
  // The shim's Pod Identity role: its inline policy.
  const shimRole = Object.values(resources).find(
    (r) =>
      r.Type === 'AWS::IAM::Role' &&
      String(r.Metadata?.['aws:cdk:path'] ?? '').endsWith('/ShimRole/Resource'),
  );
  if (shimRole === undefined) throw new HarnessError('the synthesized stack has no role for the shim');
  out[key('shim')] = ((shimRole.Properties?.['Policies'] ?? []) as { PolicyDocument: unknown }[]).map(
    (p) => resolve(p.PolicyDocument) as PolicyDocument,
  );
  return out;
}
