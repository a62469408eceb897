import { createHash } from 'node:crypto';
import { Label } from '../../core/index.ts';
import type {
  AmiStatus,
  CapacityReservationLifecycle,
  CapacityReservationStatus,
  EC2NodeClass,
  NodeClassResolution,
  NodeClassResolver,
} from '../../ports/cloud.ts';

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

/** A selected placement group exists in the simulator's network: a cluster group of that name or id. */
function placementGroupOf(nodeClass: EC2NodeClass): Pick<NodeClassResolution, 'placementGroup'> {
  const selector = nodeClass.spec.placementGroupSelector;
  if (selector === undefined) return {};
  const name = selector.name ?? selector.id ?? '';
  const id = selector.id ?? `pg-${Buffer.from(name).toString('hex').slice(0, 17).padEnd(17, '0')}`;
  return {
    placementGroup: { kind: 'resolved', value: { id, name, state: 'available', strategy: 'cluster' } },
  };
}

/**
 * Resolves every EC2NodeClass in a fixed network, for the simulator: one subnet per zone, one
 * security group, the configured AMIs, and the instance profile the class names (or one made for
 * its role). Of the selectors only a versioned alias (`al2023@v20260115`) is evaluated, to that
 * release's images; every other part resolves as configured.
 */
export function makeMemoryNodeClassResolver(options: MemoryNodeClassResolverOptions): NodeClassResolver {
  const amisOf = (nodeClass: EC2NodeClass): readonly AmiStatus[] => {
    const alias = nodeClass.spec.amiSelectorTerms.find((t) => t.alias !== undefined)?.alias;
    const version = alias === undefined ? undefined : VERSIONED_ALIAS.exec(alias)?.[1];
    if (version !== undefined) return memoryAl2023Release(version);
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
        ...placementGroupOf(nodeClass),
        ...((nodeClass.spec.capacityReservationSelectorTerms ?? []).length === 0
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
