import {
  DescribePlacementGroupsCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
  type PlacementGroup,
  type SecurityGroup,
  type Subnet,
} from '@aws-sdk/client-ec2';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { FlotillaError } from '../../core/index.ts';
import { nodeClassFamily, windowsBuild } from '../../ports/ami-family.ts';
import {
  type AmiStatus,
  CloudApiError,
  type NodeClassResolver,
  type PlacementGroupSelector,
  type PlacementGroupStatus,
  type Resolved,
  type SecurityGroupStatus,
  type SelectorTerm,
  type SubnetStatus,
} from '../../ports/cloud.ts';
import { AmiSelectionProblem, resolveAmis } from './ami.ts';
import { reservationLifecycles, resolveCapacityReservations } from './capacity-reservations.ts';
import { awsErrorCode, call, toCloudApiError } from './errors.ts';
import {
  deleteInstanceProfile,
  ensureInstanceProfile,
  NodeRoleNotAllowedError,
  NodeRoleNotFoundError,
} from './instance-profile.ts';
import { userDataProblem } from './user-data.ts';

export interface NodeClassResolverOptions {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
  /** Manages the instance profile of NodeClasses that set `spec.role`; without it they are not ready. */
  readonly iam?: IAMClient;
  readonly clusterName: string;
  readonly region: string;
  /** Kubernetes minor of the cluster, e.g. `1.34` (AMI aliases resolve per version). */
  readonly kubernetesVersion: string;
  /** Root of AWS's public SSM parameters. @default '/aws/service' */
  readonly ssmParameterPrefix?: string;
  /** Decides when a capacity block is expiring. @default the system clock */
  readonly now?: () => Date;
  /**
   * Karpenter's ReservedCapacity feature gate: off, `capacityReservationSelectorTerms` are not
   * resolved (no `status.capacityReservations`, no CapacityReservationsReady). @default true
   */
  readonly reservedCapacity?: boolean;
}

/**
 * The offering catalog prices Linux (pricing.ts asks for `operatingSystem` Linux and the Linux/UNIX
 * spot history): a Windows class launches and ranks its offerings by those prices, and says so.
 */
export const WINDOWS_PRICING = {
  type: 'PricingExact',
  reason: 'WindowsLicenseNotPriced',
  message:
    'the offering catalog holds Linux prices: Windows instances are compared and reported at their Linux price, without the Windows license EC2 adds per vCPU, so the cheapest type for the license may differ and costs read low',
} as const;

/** Codes that mean the caller may not make the call: a real answer, not a passing fault. */
const ACCESS_DENIED = new Set(['UnauthorizedOperation', 'AccessDenied', 'AccessDeniedException']);

/**
 * Resolves EC2NodeClasses against EC2, SSM and IAM, part by part: subnets with zones, security
 * groups, AMIs with the requirements of the instance types each serves, and the instance profile
 * (made for `spec.role`, or `spec.instanceProfile` as it is). Nothing matching, a missing role or
 * a denied call is a `failed` part whose message says what to fix; throttling, 5xx answers and
 * timeouts that outlast the SDK's retries are `retry` parts.
 */
export function makeNodeClassResolver(options: NodeClassResolverOptions): NodeClassResolver {
  const { ec2 } = options;
  const amiContext = {
    ec2,
    ssm: options.ssm,
    kubernetesVersion: options.kubernetesVersion,
    ssmParameterPrefix: options.ssmParameterPrefix ?? '/aws/service',
  };
  const profiles =
    options.iam === undefined
      ? undefined
      : { iam: options.iam, clusterName: options.clusterName, region: options.region };

  return {
    async resolve(nodeClass) {
      const spec = nodeClass.spec;
      const subnets = await attempt(
        () => resolveSubnets(ec2, spec.subnetSelectorTerms),
        'SubnetsResolutionFailed',
        (found) =>
          found.length > 0
            ? undefined
            : {
                reason: 'SubnetsNotFound',
                message: `no subnet in ${options.region} matches spec.subnetSelectorTerms ${JSON.stringify(spec.subnetSelectorTerms)}; tag the subnets Flotilla should use or fix the terms`,
              },
      );
      const securityGroups = await attempt(
        () => resolveSecurityGroups(ec2, spec.securityGroupSelectorTerms),
        'SecurityGroupsResolutionFailed',
        (found) =>
          found.length > 0
            ? undefined
            : {
                reason: 'SecurityGroupsNotFound',
                message: `no security group in ${options.region} matches spec.securityGroupSelectorTerms ${JSON.stringify(spec.securityGroupSelectorTerms)}; tag the groups or fix the terms`,
              },
      );
      const amiResult = await attempt(
        () => resolveAmis(amiContext, spec.amiSelectorTerms, spec.amiFamily),
        'AMIResolutionFailed',
        (result) =>
          result instanceof AmiSelectionProblem
            ? { reason: result.reason, message: result.message }
            : undefined,
      );
      const amis: Resolved<readonly AmiStatus[]> =
        amiResult.kind !== 'resolved'
          ? amiResult
          : amiResult.value instanceof AmiSelectionProblem
            ? { kind: 'failed', reason: amiResult.value.reason, message: amiResult.value.message }
            : { kind: 'resolved', value: amiResult.value.amis };

      let instanceProfile: Resolved<string>;
      if (spec.instanceProfile !== undefined) {
        instanceProfile = { kind: 'resolved', value: spec.instanceProfile };
      } else if (spec.role !== undefined && profiles !== undefined) {
        const role = spec.role;
        instanceProfile = await attempt(
          () => ensureInstanceProfile(profiles, nodeClass.name, role, nodeClass.status?.instanceProfile),
          'InstanceProfileNotReady',
          () => undefined,
        );
      } else {
        instanceProfile = {
          kind: 'failed',
          reason: 'InstanceProfileNotManaged',
          message: `spec.role "${spec.role ?? ''}" needs an IAM client to manage its instance profile; set spec.instanceProfile instead`,
        };
      }
      const family = nodeClassFamily(spec);
      const userData =
        family === undefined ? undefined : userDataProblem(family, nodeClass.name, spec.userData);
      const checks = {
        ...(userData === undefined ? {} : { validation: [userData] }),
        ...(windowsBuild(family) === undefined ? {} : { limitations: [WINDOWS_PRICING] }),
      };
      const terms = options.reservedCapacity === false ? [] : (spec.capacityReservationSelectorTerms ?? []);
      const reservations =
        terms.length === 0
          ? {}
          : {
              capacityReservations: await attempt(
                () => resolveCapacityReservations(ec2, terms, options.now?.() ?? new Date()),
                'CapacityReservationsResolutionFailed',
                () => undefined,
              ),
            };
      const selector = spec.placementGroupSelector;
      if (selector === undefined)
        return { subnets, securityGroups, amis, instanceProfile, ...reservations, ...checks };
      const wanted = selector.id ?? selector.name ?? '';
      const placementGroup = await attempt(
        () => describePlacementGroup(ec2, selector),
        'PlacementGroupResolutionFailed',
        (found) =>
          found === undefined
            ? {
                reason: 'PlacementGroupNotFound',
                message: `placement group "${wanted}" (spec.placementGroupSelector) does not exist in ${options.region}; create it or fix the selector`,
              }
            : found.state !== 'available'
              ? {
                  reason: 'PlacementGroupNotAvailable',
                  message: `placement group "${wanted}" is ${found.state}, not available; instances can be launched into it once it is`,
                }
              : undefined,
      );
      return {
        subnets,
        securityGroups,
        amis,
        instanceProfile,
        // `check` made a missing group a failure, so a resolved part holds one.
        placementGroup:
          placementGroup.kind !== 'resolved' || placementGroup.value === undefined
            ? (placementGroup as Resolved<PlacementGroupStatus>)
            : { kind: 'resolved', value: placementGroup.value },
        ...reservations,
        ...checks,
      };
    },

    capacityReservations: (ids, now) => reservationLifecycles(ec2, ids, now),

    async release(nodeClass) {
      if (nodeClass.spec.role === undefined || profiles === undefined) return;
      await deleteInstanceProfile(profiles, nodeClass.name, nodeClass.status?.instanceProfile);
    },
  };
}

/**
 * Runs one part of a resolution. `check` turns a value that is a user's problem (nothing matched)
 * into a failure; a thrown CloudApiError is a `retry` when AWS failed for now and a failure with
 * `failedReason` otherwise (access denied, a malformed filter); a missing node role is a failure.
 */
async function attempt<T>(
  run: () => Promise<T>,
  failedReason: string,
  check: (value: T) => { readonly reason: string; readonly message: string } | undefined,
): Promise<Resolved<T>> {
  try {
    const value = await run();
    const problem = check(value);
    return problem === undefined ? { kind: 'resolved', value } : { kind: 'failed', ...problem };
  } catch (error) {
    if (error instanceof CloudApiError && error.retryable && !ACCESS_DENIED.has(error.awsCode)) {
      return { kind: 'retry', message: error.message };
    }
    if (error instanceof NodeRoleNotFoundError) {
      return { kind: 'failed', reason: 'NodeRoleNotFound', message: error.message };
    }
    if (error instanceof NodeRoleNotAllowedError) {
      return { kind: 'failed', reason: 'NodeRoleNotAllowed', message: error.message };
    }
    if (error instanceof FlotillaError)
      return { kind: 'failed', reason: failedReason, message: error.message };
    throw error;
  }
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

/** EC2's answer to a placement group name or id it does not know. */
const UNKNOWN_PLACEMENT_GROUP = new Set([
  'InvalidPlacementGroup.Unknown',
  'InvalidPlacementGroupId.NotFound',
]);

/** The placement group the selector names (by id or by name), or undefined when EC2 knows none. */
export async function describePlacementGroup(
  ec2: EC2Client,
  selector: PlacementGroupSelector,
): Promise<PlacementGroupStatus | undefined> {
  let groups: PlacementGroup[];
  try {
    const page = await ec2.send(
      new DescribePlacementGroupsCommand(
        selector.id !== undefined ? { GroupIds: [selector.id] } : { GroupNames: [selector.name ?? ''] },
      ),
    );
    groups = page.PlacementGroups ?? [];
  } catch (error) {
    if (UNKNOWN_PLACEMENT_GROUP.has(awsErrorCode(error))) return undefined;
    throw toCloudApiError('ec2:DescribePlacementGroups', error);
  }
  const group = groups.find((g) =>
    selector.id !== undefined ? g.GroupId === selector.id : g.GroupName === selector.name,
  );
  if (group?.GroupId === undefined) return undefined;
  return {
    id: group.GroupId,
    name: group.GroupName ?? '',
    state: group.State ?? '',
    strategy: group.Strategy ?? '',
    ...(group.PartitionCount === undefined ? {} : { partitionCount: group.PartitionCount }),
    ...(group.SpreadLevel === undefined ? {} : { spreadLevel: group.SpreadLevel }),
  };
}
