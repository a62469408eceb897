import { createHash } from 'node:crypto';
import { Label } from '../../core/index.ts';
import { aliasFamily, nodeClassFamily, WINDOWS_BUILDS } from '../../ports/ami-family.ts';
import type {
  AmiFamily,
  AmiStatus,
  CapacityReservationLifecycle,
  CapacityReservationStatus,
  EC2NodeClass,
  NodeClassResolution,
  NodeClassResolver,
  PlacementGroupStatus,
} from '../../ports/cloud.ts';
import { userDataProblem } from '../user-data.ts';

export interface MemoryNodeClassResolverOptions {
  /** Zones with one subnet each, e.g. `['us-east-1a', 'us-east-1b']`. */
  readonly zones: readonly string[];
  /** Zone name → zone id; absent zones have no id. */
  readonly zoneIds?: Readonly<Record<string, string>>;
  /** @default the three AL2023 images (amd64 standard, arm64 standard, amd64 nvidia) */
  readonly amis?: readonly AmiStatus[];
  /**
   * The images `al2023@latest` (and any term other than a versioned alias) resolves to at this
   * moment, so that a new release changes what the next refresh resolves. @default `amis`
   */
  readonly latestAmis?: () => readonly AmiStatus[];
  /**
   * What a class with `capacityReservationSelectorTerms` resolves them to (the terms are not
   * evaluated). @default none
   */
  readonly capacityReservations?: readonly CapacityReservationStatus[];
  /**
   * What EC2 says now of the reservations NodeClaims run in, by id (a reservation can end while
   * its nodes run). @default each of `capacityReservations`, as listed
   */
  readonly reservationLifecycles?: () => ReadonlyMap<string, CapacityReservationLifecycle>;
  /**
   * The placement groups of the simulator's network: a selector resolves to the one with its
   * name or id. A selected group not listed is a `cluster` group of that name. @default none
   */
  readonly placementGroups?: readonly PlacementGroupStatus[];
  /**
   * Karpenter's ReservedCapacity feature gate: off, `capacityReservationSelectorTerms` are not
   * resolved, as the AWS resolver. @default true
   */
  readonly reservedCapacity?: boolean;
}

/** AL2023 as the alias resolves it: one image per architecture and variant, with its requirements. */
export const MEMORY_AL2023_AMIS: readonly AmiStatus[] = [
  {
    id: 'ami-0a10000000000a023',
    name: 'amazon-eks-node-al2023-x86_64-standard',
    requirements: [
      { key: Label.arch, operator: 'In', values: ['amd64'] },
      { key: Label.instanceGpuCount, operator: 'DoesNotExist' },
      { key: Label.instanceAcceleratorCount, operator: 'DoesNotExist' },
    ],
  },
  {
    id: 'ami-0a20000000000a023',
    name: 'amazon-eks-node-al2023-arm64-standard',
    requirements: [
      { key: Label.arch, operator: 'In', values: ['arm64'] },
      { key: Label.instanceGpuCount, operator: 'DoesNotExist' },
      { key: Label.instanceAcceleratorCount, operator: 'DoesNotExist' },
    ],
  },
  {
    id: 'ami-0a30000000000a023',
    name: 'amazon-eks-node-al2023-x86_64-nvidia',
    requirements: [
      { key: Label.arch, operator: 'In', values: ['amd64'] },
      { key: Label.instanceGpuCount, operator: 'Exists' },
    ],
  },
];

const VERSIONED_ALIAS = /^al2023@(v[0-9][0-9a-zA-Z.\-_]*)$/;

/** An image id of the simulator's network for a family's image (stable, derived from its name). */
function imageId(name: string): string {
  return `ami-0${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/**
 * The images an alias of another family resolves to, as that family's SSM parameters do: AL2 and
 * Bottlerocket one per architecture and variant (standard, NVIDIA), Windows one amd64 image
 * requiring its OS and build.
 */
export function memoryFamilyAmis(family: AmiFamily): readonly AmiStatus[] {
  const build = WINDOWS_BUILDS[family as keyof typeof WINDOWS_BUILDS];
  if (build !== undefined) {
    const name = `${family}-English-Core-EKS_Optimized`;
    return [
      {
        id: imageId(name),
        name,
        requirements: [
          { key: Label.arch, operator: 'In', values: ['amd64'] },
          { key: Label.os, operator: 'In', values: ['windows'] },
          { key: Label.windowsBuild, operator: 'In', values: [build] },
        ],
      },
    ];
  }
  const prefix = family === 'Bottlerocket' ? 'bottlerocket-aws-k8s' : 'amazon-eks-node-al2';
  return MEMORY_AL2023_AMIS.map((ami) => {
    const name = ami.name?.replace('amazon-eks-node-al2023', prefix) ?? prefix;
    return { ...ami, id: imageId(name), name };
  });
}

/**
 * The AL2023 images of one release (e.g. `v20260115`), as `al2023@<version>` resolves them: the
 * three images of MEMORY_AL2023_AMIS with ids and names of their own, derived from the version.
 */
export function memoryAl2023Release(version: string): readonly AmiStatus[] {
  const digest = createHash('sha256').update(version).digest('hex');
  return MEMORY_AL2023_AMIS.map((ami, i) => ({
    ...ami,
    id: `ami-0${i + 1}${digest.slice(0, 15)}`,
    name: `${ami.name}-${version}`,
  }));
}

/**
 * A selected placement group exists in the simulator's network: the configured group of that name
 * or id, else a cluster group of that name or id.
 */
function placementGroupOf(
  nodeClass: EC2NodeClass,
  groups: readonly PlacementGroupStatus[],
): Pick<NodeClassResolution, 'placementGroup'> {
  const selector = nodeClass.spec.placementGroupSelector;
  if (selector === undefined) return {};
  const configured = groups.find((g) => g.name === selector.name || g.id === selector.id);
  if (configured !== undefined) return { placementGroup: { kind: 'resolved', value: configured } };
  const name = selector.name ?? selector.id ?? '';
  const id = selector.id ?? `pg-${Buffer.from(name).toString('hex').slice(0, 17).padEnd(17, '0')}`;
  return {
    placementGroup: { kind: 'resolved', value: { id, name, state: 'available', strategy: 'cluster' } },
  };
}

/**
 * User data that does not render for the class's family, reported as the AWS adapter reports it;
 * rendered once per family, class and user data (`seen`), not on every pass that resolves the class.
 */
function userDataValidation(
  nodeClass: EC2NodeClass,
  seen: Map<string, ReturnType<typeof userDataProblem>>,
): Pick<NodeClassResolution, 'validation'> {
  const family = nodeClassFamily(nodeClass.spec);
  if (family === undefined) return {};
  const key = JSON.stringify([family, nodeClass.name, nodeClass.spec.userData ?? null]);
  if (!seen.has(key)) seen.set(key, userDataProblem(family, nodeClass.name, nodeClass.spec.userData));
  const problem = seen.get(key);
  return problem === undefined ? {} : { validation: [problem] };
}

/**
 * Resolves every EC2NodeClass in a fixed network, for the simulator: one subnet per zone, one
 * security group, the configured AMIs, and the instance profile the class names (or one made for
 * its role). Of the selectors only the aliases are evaluated: a versioned `al2023@v20260115` to
 * that release's images, an alias of another family (AL2, Bottlerocket, Windows) to that family's
 * images; every other part resolves as configured. User data is checked as the AWS adapter
 * checks it (it must render for the class's family).
 */
export function makeMemoryNodeClassResolver(options: MemoryNodeClassResolverOptions): NodeClassResolver {
  const userDataSeen = new Map<string, ReturnType<typeof userDataProblem>>();
  const amisOf = (nodeClass: EC2NodeClass): readonly AmiStatus[] => {
    const alias = nodeClass.spec.amiSelectorTerms.find((t) => t.alias !== undefined)?.alias;
    const version = alias === undefined ? undefined : VERSIONED_ALIAS.exec(alias)?.[1];
    if (version !== undefined) return memoryAl2023Release(version);
    const family = alias === undefined ? undefined : aliasFamily(alias);
    if (family !== undefined && family !== 'AL2023') return memoryFamilyAmis(family);
    return options.latestAmis?.() ?? options.amis ?? MEMORY_AL2023_AMIS;
  };
  return {
    async resolve(nodeClass: EC2NodeClass): Promise<NodeClassResolution> {
      return {
        subnets: {
          kind: 'resolved',
          value: options.zones.map((zone, index) => {
            const zoneID = options.zoneIds?.[zone];
            return {
              id: `subnet-${(index + 1).toString(16).padStart(17, '0')}`,
              zone,
              ...(zoneID === undefined ? {} : { zoneID }),
            };
          }),
        },
        securityGroups: { kind: 'resolved', value: [{ id: 'sg-00000000000000001', name: 'nodes' }] },
        amis: { kind: 'resolved', value: amisOf(nodeClass) },
        instanceProfile: {
          kind: 'resolved',
          value: nodeClass.spec.instanceProfile ?? `flotilla-${nodeClass.name}`,
        },
        ...placementGroupOf(nodeClass, options.placementGroups ?? []),
        ...userDataValidation(nodeClass, userDataSeen),
        ...(options.reservedCapacity === false ||
        (nodeClass.spec.capacityReservationSelectorTerms ?? []).length === 0
          ? {}
          : {
              capacityReservations: { kind: 'resolved', value: options.capacityReservations ?? [] },
            }),
      };
    },
    async release() {},
    async capacityReservations(ids) {
      const known =
        options.reservationLifecycles?.() ??
        new Map(
          (options.capacityReservations ?? []).map((r) => [
            r.id,
            {
              id: r.id,
              reservationType: r.reservationType,
              state: r.state,
              ec2State: 'active',
              ...(r.endTime === undefined ? {} : { endTime: r.endTime }),
            },
          ]),
        );
      const out = new Map<string, CapacityReservationLifecycle>();
      for (const id of ids) {
        const found = known.get(id);
        if (found !== undefined) out.set(id, found);
      }
      return out;
    },
  };
}
