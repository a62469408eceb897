import { z } from 'zod';
import { parseQuantity, ValidationError } from '../core/index.ts';
import type {
  BlockDeviceMapping,
  EC2NodeClass,
  EC2NodeClassStatus,
  MetadataOptions,
} from '../ports/cloud.ts';
import { objectName } from './fields.ts';
import { parseKubelet } from './kubelet.ts';

/** EC2NodeClass defaults (ec2nodeclass_defaults.go): IMDSv2 required, one hop. */
export const DEFAULT_METADATA_OPTIONS: MetadataOptions = {
  httpEndpoint: 'enabled',
  httpProtocolIPv6: 'disabled',
  httpPutResponseHopLimit: 1,
  httpTokens: 'required',
};

const stringMap = z.record(z.string(), z.string());

const selectorTerm = z
  .object({
    tags: stringMap.exactOptional(),
    id: z.string().exactOptional(),
    name: z.string().exactOptional(),
  })
  .loose();

const amiSelectorTerm = z
  .object({
    alias: z.string().exactOptional(),
    id: z.string().exactOptional(),
    name: z.string().exactOptional(),
    owner: z.string().exactOptional(),
    tags: stringMap.exactOptional(),
    ssmParameter: z.string().exactOptional(),
  })
  .loose();

const capacityReservationSelectorTerm = z
  .object({
    id: z
      .string()
      .regex(/^cr-[0-9a-z]+$/)
      .exactOptional(),
    tags: stringMap.exactOptional(),
    ownerID: z
      .string()
      .regex(/^[0-9]{12}$/)
      .exactOptional(),
    instanceMatchCriteria: z.enum(['open', 'targeted']).exactOptional(),
  })
  .loose();

const capacityReservationStatus = z.object({
  id: z.string(),
  availabilityZone: z.string(),
  instanceType: z.string(),
  instanceMatchCriteria: z.enum(['open', 'targeted']),
  ownerID: z.string(),
  reservationType: z.enum(['default', 'capacity-block']).default('default'),
  state: z.enum(['active', 'expiring']).default('active'),
  endTime: z.string().exactOptional(),
  interruptible: z.boolean().exactOptional(),
});

const quantity = z.union([z.string(), z.number()]);

const blockDeviceMapping = z.object({
  deviceName: z.string(),
  rootVolume: z.boolean().exactOptional(),
  ebs: z
    .object({
      deleteOnTermination: z.boolean().exactOptional(),
      encrypted: z.boolean().exactOptional(),
      iops: z.number().int().exactOptional(),
      kmsKeyID: z.string().exactOptional(),
      snapshotID: z.string().exactOptional(),
      throughput: z.number().int().exactOptional(),
      volumeSize: quantity.exactOptional(),
      volumeType: z.enum(['standard', 'io1', 'io2', 'gp2', 'sc1', 'st1', 'gp3']).exactOptional(),
    })
    .exactOptional(),
});

/** A metav1.Condition as Karpenter's CRDs store it. */
export const conditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().default(''),
  message: z.string().default(''),
  lastTransitionTime: z.string().default(''),
  observedGeneration: z.number().int().exactOptional(),
});

const requirement = z.object({
  key: z.string(),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte', 'Lte']),
  values: z.array(z.string()).exactOptional(),
});

/**
 * The annotation that holds the placement group `spec.placementGroupSelector` resolved to, as JSON.
 * Karpenter's CRD has no status field for it (Karpenter keeps it in memory), so a status field
 * would be pruned by the API server where Karpenter's CRDs are installed.
 */
export const PLACEMENT_GROUP_ANNOTATION = 'flotilla.io/placement-group';

const placementGroupStatus = z.object({
  id: z.string(),
  name: z.string().default(''),
  state: z.string().default(''),
  strategy: z.string().default(''),
  partitionCount: z.number().int().exactOptional(),
  spreadLevel: z.string().exactOptional(),
});

const status = z
  .object({
    subnets: z
      .array(z.object({ id: z.string(), zone: z.string(), zoneID: z.string().exactOptional() }))
      .default([]),
    securityGroups: z.array(z.object({ id: z.string(), name: z.string().exactOptional() })).default([]),
    amis: z
      .array(
        z.object({
          id: z.string(),
          name: z.string().exactOptional(),
          deprecated: z.boolean().exactOptional(),
          requirements: z.array(requirement).default([]),
        }),
      )
      .default([]),
    capacityReservations: z.array(capacityReservationStatus).exactOptional(),
    instanceProfile: z.string().exactOptional(),
    conditions: z.array(conditionSchema).default([]),
  })
  .loose();

const specSchema = z
  .object({
    subnetSelectorTerms: z.array(selectorTerm).min(1),
    securityGroupSelectorTerms: z.array(selectorTerm).min(1),
    amiSelectorTerms: z.array(amiSelectorTerm).min(1),
    amiFamily: z
      .enum(['AL2023', 'Bottlerocket', 'AL2', 'Custom', 'Windows2019', 'Windows2022', 'Windows2025'])
      .exactOptional(),
    role: z.string().exactOptional(),
    instanceProfile: z.string().exactOptional(),
    userData: z.string().exactOptional(),
    tags: stringMap.exactOptional(),
    kubelet: z.record(z.string(), z.unknown()).transform(parseKubelet).exactOptional(),
    blockDeviceMappings: z.array(blockDeviceMapping).exactOptional(),
    metadataOptions: z
      .object({
        httpEndpoint: z.enum(['enabled', 'disabled']).default('enabled'),
        httpProtocolIPv6: z.enum(['enabled', 'disabled']).default('disabled'),
        httpPutResponseHopLimit: z.number().int().min(1).max(64).default(1),
        httpTokens: z.enum(['required', 'optional']).default('required'),
      })
      .default(DEFAULT_METADATA_OPTIONS),
    associatePublicIPAddress: z.boolean().exactOptional(),
    detailedMonitoring: z.boolean().exactOptional(),
    instanceStorePolicy: z.enum(['RAID0']).exactOptional(),
    placementGroupSelector: z
      .object({ name: z.string().min(1).exactOptional(), id: z.string().exactOptional() })
      .exactOptional(),
    networkInterfaces: z
      .array(
        z.object({
          networkCardIndex: z.number().int().nonnegative(),
          deviceIndex: z.number().int().nonnegative(),
          interfaceType: z.enum(['interface', 'efa-only']),
        }),
      )
      .exactOptional(),
    ipPrefixCount: z.number().int().nonnegative().exactOptional(),
    cpuOptions: z
      .object({ nestedVirtualization: z.enum(['enabled', 'disabled']).exactOptional() })
      .exactOptional(),
    enclaveOptions: z.object({ enabled: z.boolean() }).exactOptional(),
    connectionTracking: z
      .object({
        tcpEstablishedTimeout: z.number().int().min(60).max(432_000).exactOptional(),
        udpStreamTimeout: z.number().int().min(60).max(180).exactOptional(),
        udpTimeout: z.number().int().min(30).max(60).exactOptional(),
      })
      .refine(
        (c) =>
          c.tcpEstablishedTimeout !== undefined ||
          c.udpStreamTimeout !== undefined ||
          c.udpTimeout !== undefined,
        'at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set',
      )
      .exactOptional(),
    context: z.string().exactOptional(),
    capacityReservationSelectorTerms: z.array(capacityReservationSelectorTerm).max(30).exactOptional(),
  })
  .loose();

/** The `spec` fields Flotilla reads; any other a manifest sets is reported as unsupported. */
const KNOWN_SPEC_FIELDS: ReadonlySet<string> = new Set(Object.keys(specSchema.shape));

const ec2NodeClass = z.object({
  metadata: z
    .object({
      name: z.string(),
      uid: z.string().exactOptional(),
      generation: z.number().int().exactOptional(),
      finalizers: z.array(z.string()).exactOptional(),
      annotations: stringMap.exactOptional(),
      deletionTimestamp: z.unknown().optional(),
    })
    .loose(),
  spec: specSchema,
  status: status.exactOptional(),
});

/**
 * Parses an EC2NodeClass object as the API server returns it (`karpenter.k8s.aws/v1`), applying
 * the CRD defaults. Volume sizes become bytes.
 * @throws ValidationError listing every problem.
 */
export function parseEC2NodeClass(raw: unknown): EC2NodeClass {
  const result = ec2NodeClass.safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new ValidationError(objectName('ec2NodeClass', raw, false), 'spec', problems.join('; '), {
      cause: result.error,
    });
  }
  const { metadata, spec, status: rawStatus } = result.data;
  const object = `ec2NodeClass "${metadata.name}"`;
  const blockDeviceMappings = spec.blockDeviceMappings?.map((mapping, index): BlockDeviceMapping => {
    const { volumeSize, ...ebs } = mapping.ebs ?? {};
    return {
      deviceName: mapping.deviceName,
      ...(mapping.rootVolume === undefined ? {} : { rootVolume: mapping.rootVolume }),
      ...(mapping.ebs === undefined
        ? {}
        : {
            ebs: {
              ...ebs,
              ...(volumeSize === undefined
                ? {}
                : {
                    volumeSizeBytes: parseQuantity(volumeSize, 'base', {
                      object,
                      field: `spec.blockDeviceMappings[${index}].ebs.volumeSize`,
                    }),
                  }),
            },
          }),
    };
  });
  const { blockDeviceMappings: _ignored, ...rest } = spec;
  const unsupportedFields = Object.keys(spec)
    .filter((key) => !KNOWN_SPEC_FIELDS.has(key))
    .sort();
  for (const key of unsupportedFields) delete (rest as Record<string, unknown>)[key];
  return {
    name: metadata.name,
    ...(metadata.uid === undefined ? {} : { uid: metadata.uid }),
    ...(metadata.generation === undefined ? {} : { generation: metadata.generation }),
    ...(metadata.finalizers === undefined ? {} : { finalizers: metadata.finalizers }),
    ...(metadata.deletionTimestamp === undefined || metadata.deletionTimestamp === null
      ? {}
      : { deleting: true }),
    spec: { ...rest, ...(blockDeviceMappings === undefined ? {} : { blockDeviceMappings }) },
    ...(unsupportedFields.length === 0 ? {} : { unsupportedFields }),
    ...(rawStatus === undefined
      ? {}
      : { status: withPlacementGroup(rawStatus as EC2NodeClassStatus, spec, metadata.annotations) }),
  };
}

/**
 * The status with the resolved placement group read from its annotation, for a class that selects
 * one. An annotation that does not parse counts as no group: the class then resolves again and
 * launches nothing until it has one (see `isNodeClassReady`).
 */
function withPlacementGroup(
  status: EC2NodeClassStatus,
  spec: z.infer<typeof specSchema>,
  annotations: Readonly<Record<string, string>> | undefined,
): EC2NodeClassStatus {
  // A status field of that name (written by an earlier Flotilla) is not read.
  const { placementGroups: _field, ...rest } = status;
  const raw = annotations?.[PLACEMENT_GROUP_ANNOTATION];
  if (spec.placementGroupSelector === undefined || raw === undefined) return rest;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return rest;
  }
  const group = placementGroupStatus.safeParse(json);
  return group.success ? { ...rest, placementGroups: [group.data] } : rest;
}

/** The annotation value for a resolved placement group (null removes the annotation). */
export function placementGroupAnnotation(status: EC2NodeClassStatus): string | null {
  const group = status.placementGroups?.[0];
  return group === undefined ? null : JSON.stringify(group);
}
