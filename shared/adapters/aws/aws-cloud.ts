import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { Clock } from '../../ports/clock.ts';
import { CatalogUnavailableError, type Cloud, type OfferingKey } from '../../ports/cloud.ts';
import { cloudDrift } from '../../ports/cloud-drift.ts';
import {
  type OfferingCache,
  UNAVAILABLE_OFFERING_TTL_SECONDS,
  type UnavailableOfferings,
} from '../../ports/state.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { ProviderSettings } from '../class-instance-types.ts';
import { nodeClassFamily } from './ami.ts';
import { reservationAvailability } from './capacity-reservations.ts';
import { makeDynamoOfferingCache, makeDynamoUnavailableOfferings } from './dynamo-state.ts';
import { toInstanceTypes } from './instance-types.ts';
import { makeInstanceOps } from './instances.ts';
import { makeLauncher } from './launch.ts';
import { type LaunchTemplateStore, makeLaunchTemplateStore } from './launch-templates.ts';
import type { ClusterInfo } from './user-data.ts';

export interface AwsCloudOptions {
  readonly ec2: EC2Client;
  readonly dynamodb: DynamoDBClient;
  /** The state table (see STATE_TABLE for its key schema). */
  readonly tableName: string;
  readonly region: string;
  readonly cluster: ClusterInfo;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * Karpenter's AWS settings and ReservedCapacity gate (the stack's `vmMemoryOverheadPercent`,
   * `reservedENIs` and `featureGates.ReservedCapacity`). @default Karpenter's defaults
   */
  readonly provider?: ProviderSettings;
}

export interface AwsCloud extends Cloud {
  readonly offeringCache: OfferingCache;
  readonly unavailableOfferings: UnavailableOfferings;
  readonly launchTemplates: LaunchTemplateStore;
}

/** The Cloud port on EC2, with the offering cache and ICE back-offs in DynamoDB. */
export function makeAwsCloud(options: AwsCloudOptions): AwsCloud {
  const { ec2, dynamodb, tableName, region, cluster, clock, logger } = options;
  const offeringCache = makeDynamoOfferingCache({ dynamodb, tableName, logger, now: () => clock.now() });
  const unavailableOfferings = makeDynamoUnavailableOfferings({ dynamodb, tableName, logger });
  const launchTemplates = makeLaunchTemplateStore({
    ec2,
    clusterName: cluster.name,
    now: () => clock.now(),
    logger,
  });
  const instances = makeInstanceOps({ ec2, clusterName: cluster.name, logger });
  const launcher = makeLauncher({
    ec2,
    cluster,
    clock,
    logger,
    unavailable: unavailableOfferings,
    launchTemplates,
    instances,
    familyOf: (request) => nodeClassFamily(request.nodeClass.spec),
  });
  return {
    offeringCache,
    unavailableOfferings,
    launchTemplates,
    async instanceTypes(nodeClass) {
      const catalog = await offeringCache.readCatalog(region);
      if (catalog === undefined) {
        throw new CatalogUnavailableError(
          `the offering cache has no catalog for ${region} yet; the catalog Lambda fills it on its schedule (invoke it once by hand after a fresh deploy)`,
        );
      }
      const unavailable = await unavailableOfferings.list(clock.now());
      // What each selected reservation can still take is read fresh: launches use it up. With the
      // ReservedCapacity gate off there is none to read.
      const reservations =
        options.provider?.reservedCapacity === false ? [] : (nodeClass.status?.capacityReservations ?? []);
      const reservationCapacity =
        reservations.length === 0
          ? undefined
          : await reservationAvailability(
              ec2,
              reservations.map((r) => r.id),
            );
      return toInstanceTypes(catalog.instanceTypes, {
        region,
        nodeClass,
        family: nodeClassFamily(nodeClass.spec),
        unavailable: new Set(unavailable.keys()),
        ...(reservationCapacity === undefined ? {} : { reservationCapacity }),
        ...(options.provider === undefined ? {} : { provider: options.provider }),
      });
    },
    planLaunch: (request) => launcher.plan(request),
    launch: (request, record, options) => launcher.launch(request, record, options),
    create: async (request) => launcher.launch(request, await launcher.plan(request)),
    findByNodeClaim: (nodeClaimName) => instances.findByNodeClaim(nodeClaimName),
    delete: (instanceId) => instances.delete(instanceId),
    nameInstance: (instanceId, nodeName) => instances.name(instanceId, nodeName),
    get: (instanceId) => instances.get(instanceId),
    async isDrifted(instanceId, nodeClass) {
      const instance = await instances.get(instanceId);
      return instance === undefined ? undefined : cloudDrift(instance, nodeClass);
    },
    list: () => instances.list(),
    markUnavailable: (offerings, reason) =>
      unavailableOfferings.mark(offerings, reason, clock.now(), UNAVAILABLE_OFFERING_TTL_SECONDS),
  };
}

/**
 * Backs off the offering of an interrupted spot instance for the ICE TTL, as Karpenter does on a
 * Spot Interruption Warning. For the interruption handler.
 */
export function markInterruptedOffering(
  unavailable: UnavailableOfferings,
  clock: Clock,
  instance: Pick<OfferingKey, 'instanceType' | 'zone'> & {
    readonly capacityType?: OfferingKey['capacityType'];
  },
): Promise<void> {
  return unavailable.mark(
    [
      {
        instanceType: instance.instanceType,
        zone: instance.zone,
        capacityType: instance.capacityType ?? 'spot',
      },
    ],
    'spot interruption',
    clock.now(),
    UNAVAILABLE_OFFERING_TTL_SECONDS,
  );
}
