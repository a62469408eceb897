import {
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
  type SecurityGroup,
  type Subnet,
} from '@aws-sdk/client-ec2';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { FlotillaError } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  type AmiStatus,
  type Condition,
  type ConditionStatus,
  type EC2NodeClass,
  type EC2NodeClassStatus,
  NodeClassConditionType,
  type NodeClassResolver,
  type SecurityGroupStatus,
  type SelectorTerm,
  type SubnetStatus,
} from '../../ports/cloud.ts';
import type { Logger } from '../../runtime/logger.ts';
import { AmiSelectionProblem, resolveAmis } from './ami.ts';
import { call } from './errors.ts';
import { ensureInstanceProfile } from './instance-profile.ts';

export interface NodeClassResolverOptions {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
  /** Manages the instance profile of NodeClasses that set `spec.role`; without it they are not ready. */
  readonly iam?: IAMClient;
  readonly clusterName: string;
  readonly region: string;
  /** Kubernetes minor of the cluster, e.g. `1.34` (AMI aliases resolve per version). */
  readonly kubernetesVersion: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Root of AWS's public SSM parameters. @default '/aws/service' */
  readonly ssmParameterPrefix?: string;
}

/** Tag keys an EC2NodeClass may not set (the CRD's CEL rules); Flotilla sets them itself. */
const RESTRICTED_TAG_KEYS = [
  'eks:eks-cluster-name',
  'karpenter.sh/nodepool',
  'karpenter.sh/nodeclaim',
  'karpenter.k8s.aws/ec2nodeclass',
];

interface Check {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

const ok = (type: string): Check => ({ type, status: 'True', reason: type, message: '' });

/**
 * Resolves an EC2NodeClass against EC2 and SSM into the status Karpenter would write: subnets
 * with zones, security groups, AMIs with requirements, the instance profile, and conditions whose
 * messages say what to fix. A NodeClass whose Ready condition is not True launches nothing.
 */
export function makeNodeClassResolver(options: NodeClassResolverOptions): NodeClassResolver {
  const { ec2, logger } = options;
  const amiContext = {
    ec2,
    ssm: options.ssm,
    kubernetesVersion: options.kubernetesVersion,
    ssmParameterPrefix: options.ssmParameterPrefix ?? '/aws/service',
  };

  return {
    async resolve(nodeClass) {
      const spec = nodeClass.spec;
      const checks: Check[] = [];
      checks.push(validate(nodeClass));

      const subnets = await attempt(() => resolveSubnets(ec2, spec.subnetSelectorTerms));
      if (subnets instanceof FlotillaError) {
        checks.push({
          type: NodeClassConditionType.subnetsReady,
          status: 'False',
          reason: 'SubnetsResolutionFailed',
          message: subnets.message,
        });
      } else if (subnets.length === 0) {
        checks.push({
          type: NodeClassConditionType.subnetsReady,
          status: 'False',
          reason: 'SubnetsNotFound',
          message: `no subnet in ${options.region} matches spec.subnetSelectorTerms ${JSON.stringify(spec.subnetSelectorTerms)}; tag the subnets Flotilla should use or fix the terms`,
        });
      } else {
        checks.push(ok(NodeClassConditionType.subnetsReady));
      }

      const groups = await attempt(() => resolveSecurityGroups(ec2, spec.securityGroupSelectorTerms));
      if (groups instanceof FlotillaError) {
        checks.push({
          type: NodeClassConditionType.securityGroupsReady,
          status: 'False',
          reason: 'SecurityGroupsResolutionFailed',
          message: groups.message,
        });
      } else if (groups.length === 0) {
        checks.push({
          type: NodeClassConditionType.securityGroupsReady,
          status: 'False',
          reason: 'SecurityGroupsNotFound',
          message: `no security group in ${options.region} matches spec.securityGroupSelectorTerms ${JSON.stringify(spec.securityGroupSelectorTerms)}; tag the groups or fix the terms`,
        });
      } else {
        checks.push(ok(NodeClassConditionType.securityGroupsReady));
      }

      let amis: readonly AmiStatus[] = [];
      const amiResult = await attempt(() => resolveAmis(amiContext, spec.amiSelectorTerms, spec.amiFamily));
      if (amiResult instanceof FlotillaError) {
        checks.push({
          type: NodeClassConditionType.amisReady,
          status: 'False',
          reason: 'AMIResolutionFailed',
          message: amiResult.message,
        });
      } else if (amiResult instanceof AmiSelectionProblem) {
        checks.push({
          type: NodeClassConditionType.amisReady,
          status: 'False',
          reason: amiResult.reason,
          message: amiResult.message,
        });
      } else {
        amis = amiResult.amis;
        checks.push(ok(NodeClassConditionType.amisReady));
      }

      let instanceProfile: string | undefined;
      if (spec.instanceProfile !== undefined) {
        instanceProfile = spec.instanceProfile;
        checks.push(ok(NodeClassConditionType.instanceProfileReady));
      } else if (spec.role !== undefined && options.iam !== undefined) {
        const { iam } = options;
        const role = spec.role;
        const managed = await attempt(() =>
          ensureInstanceProfile(
            { iam, clusterName: options.clusterName, region: options.region },
            nodeClass.name,
            role,
          ),
        );
        if (managed instanceof FlotillaError) {
          checks.push({
            type: NodeClassConditionType.instanceProfileReady,
            status: 'False',
            reason: 'InstanceProfileNotReady',
            message: managed.message,
          });
        } else {
          instanceProfile = managed;
          checks.push(ok(NodeClassConditionType.instanceProfileReady));
        }
      } else {
        checks.push({
          type: NodeClassConditionType.instanceProfileReady,
          status: 'False',
          reason: 'InstanceProfileNotManaged',
          message: `spec.role "${spec.role ?? ''}" needs an IAM client to manage its instance profile; set spec.instanceProfile instead`,
        });
      }

      const conditions = toConditions(checks, nodeClass, options.clock.now());
      const status: EC2NodeClassStatus = {
        subnets: subnets instanceof FlotillaError ? [] : subnets,
        securityGroups: groups instanceof FlotillaError ? [] : groups,
        amis,
        ...(instanceProfile === undefined ? {} : { instanceProfile }),
        conditions,
      };
      const ready = conditions.find((c) => c.type === NodeClassConditionType.ready);
      logger.info('ec2NodeClass resolved', {
        nodeClass: nodeClass.name,
        ready: ready?.status,
        reason: ready?.reason,
        subnets: status.subnets.length,
        securityGroups: status.securityGroups.length,
        amis: status.amis.map((a) => a.id),
      });
      return status;
    },
  };
}

async function attempt<T>(run: () => Promise<T>): Promise<T | FlotillaError> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof FlotillaError) return error;
    throw error;
  }
}

function validate(nodeClass: EC2NodeClass): Check {
  const spec = nodeClass.spec;
  const problems: string[] = [];
  if ((spec.role === undefined) === (spec.instanceProfile === undefined)) {
    problems.push('set exactly one of spec.role and spec.instanceProfile');
  }
  for (const key of Object.keys(spec.tags ?? {})) {
    if (RESTRICTED_TAG_KEYS.includes(key) || key.startsWith('kubernetes.io/cluster')) {
      problems.push(`spec.tags may not set "${key}" (Flotilla sets it); remove it`);
    }
  }
  const aliases = spec.amiSelectorTerms.filter((t) => t.alias !== undefined);
  if (aliases.length > 0 && spec.amiSelectorTerms.length > 1) {
    problems.push('an alias must be the only term in spec.amiSelectorTerms; remove the other terms');
  }
  const high = spec.kubelet?.imageGCHighThresholdPercent;
  const low = spec.kubelet?.imageGCLowThresholdPercent;
  if (high !== undefined && low !== undefined && high <= low) {
    problems.push('spec.kubelet.imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent');
  }
  if ((spec.blockDeviceMappings ?? []).filter((m) => m.rootVolume).length > 1) {
    problems.push('at most one of spec.blockDeviceMappings may set rootVolume: true');
  }
  if (problems.length === 0) return ok(NodeClassConditionType.validationSucceeded);
  return {
    type: NodeClassConditionType.validationSucceeded,
    status: 'False',
    reason: 'ValidationFailed',
    message: problems.join('; '),
  };
}

/** Builds the conditions, keeping each one's lastTransitionTime while its status is unchanged. */
function toConditions(checks: readonly Check[], nodeClass: EC2NodeClass, now: Date): Condition[] {
  const previous = new Map((nodeClass.status?.conditions ?? []).map((c) => [c.type, c]));
  const notReady = checks.filter((c) => c.status !== 'True');
  const ready: Check =
    notReady.length === 0
      ? { type: NodeClassConditionType.ready, status: 'True', reason: 'Ready', message: '' }
      : {
          type: NodeClassConditionType.ready,
          status: 'False',
          reason: 'NotReady',
          message: notReady.map((c) => `${c.type}=${c.status}: ${c.message}`).join('; '),
        };
  return [...checks, ready].map((check) => {
    const before = previous.get(check.type);
    const lastTransitionTime =
      before !== undefined && before.status === check.status && before.lastTransitionTime !== ''
        ? before.lastTransitionTime
        : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    return {
      ...check,
      lastTransitionTime,
      ...(nodeClass.generation === undefined ? {} : { observedGeneration: nodeClass.generation }),
    };
  });
}

/** One query per term; id terms together, as Karpenter does. Terms are ORed. */
function termFilters(terms: readonly SelectorTerm[], idFilter: string, nameFilter?: string): Filter[][] {
  const queries: Filter[][] = [];
  const ids = terms.flatMap((t) => (t.id === undefined ? [] : [t.id]));
  if (ids.length > 0) queries.push([{ Name: idFilter, Values: ids }]);
  for (const term of terms) {
    if (term.id !== undefined) continue;
    const filters: Filter[] = [];
    if (term.name !== undefined && nameFilter !== undefined)
      filters.push({ Name: nameFilter, Values: [term.name] });
    for (const [key, value] of Object.entries(term.tags ?? {})) {
      filters.push(
        value === '*' ? { Name: 'tag-key', Values: [key] } : { Name: `tag:${key}`, Values: [value] },
      );
    }
    if (filters.length > 0) queries.push(filters);
  }
  return queries;
}

/** Subnets matching the terms, most free IPs first. */
export async function resolveSubnets(
  ec2: EC2Client,
  terms: readonly SelectorTerm[],
): Promise<SubnetStatus[]> {
  const found = new Map<string, Subnet>();
  for (const filters of termFilters(terms, 'subnet-id')) {
    let nextToken: string | undefined;
    do {
      const page = await call('ec2:DescribeSubnets', () =>
        ec2.send(
          new DescribeSubnetsCommand({ Filters: filters, ...(nextToken ? { NextToken: nextToken } : {}) }),
        ),
      );
      for (const subnet of page.Subnets ?? []) if (subnet.SubnetId) found.set(subnet.SubnetId, subnet);
      nextToken = page.NextToken;
    } while (nextToken);
  }
  return [...found.values()]
    .sort(
      (a, b) =>
        (b.AvailableIpAddressCount ?? 0) - (a.AvailableIpAddressCount ?? 0) ||
        (a.SubnetId ?? '').localeCompare(b.SubnetId ?? ''),
    )
    .map((s) => ({
      id: s.SubnetId ?? '',
      zone: s.AvailabilityZone ?? '',
      ...(s.AvailabilityZoneId === undefined ? {} : { zoneID: s.AvailabilityZoneId }),
    }));
}

export async function resolveSecurityGroups(
  ec2: EC2Client,
  terms: readonly SelectorTerm[],
): Promise<SecurityGroupStatus[]> {
  const found = new Map<string, SecurityGroup>();
  for (const filters of termFilters(terms, 'group-id', 'group-name')) {
    let nextToken: string | undefined;
    do {
      const page = await call('ec2:DescribeSecurityGroups', () =>
        ec2.send(
          new DescribeSecurityGroupsCommand({
            Filters: filters,
            ...(nextToken ? { NextToken: nextToken } : {}),
          }),
        ),
      );
      for (const group of page.SecurityGroups ?? []) if (group.GroupId) found.set(group.GroupId, group);
      nextToken = page.NextToken;
    } while (nextToken);
  }
  return [...found.values()]
    .sort((a, b) => (a.GroupId ?? '').localeCompare(b.GroupId ?? ''))
    .map((g) => ({ id: g.GroupId ?? '', ...(g.GroupName === undefined ? {} : { name: g.GroupName }) }));
}
