import { FlotillaError } from '../core/errors.ts';
import {
  type CapacityType,
  type Cloud,
  type CloudInstance,
  type LaunchRecord,
  type LaunchRequest,
  NodeClassNotReadyError,
  nodeClassNotReady,
} from '../ports/cloud.ts';
import { noOfferingLeft, selectCandidates } from './launch-plan.ts';

// The Cloud of a shadow stack: it reads EC2 as the live one does and launches nothing. A planned
// launch is the offering EC2's lowest-price allocation would take among the candidates a live
// launch would send (launch-plan.ts, the choice both real adapters make), and "launching" it
// answers with an instance that does not exist, so the use case decides and logs as it would live
// without a launch template made or a fleet asked for. Termination is refused: nothing a shadow
// stack runs deletes an instance.

/** A shadow stack was asked to change EC2. */
export class ShadowWriteError extends FlotillaError {
  readonly code = 'ShadowWriteError';

  constructor(readonly action: string) {
    super(`${action} refused: a shadow stack changes nothing in EC2`);
  }
}

/** The launch a shadow stack would have made, as its record carries it. */
interface ShadowChoice {
  readonly shadow: true;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
}

/** Instance ids a shadow stack answers with: never an EC2 id (those are `i-` and hex). */
export const SHADOW_INSTANCE_PREFIX = 'shadow-';

/** Whether an instance id is one a shadow stack made up. */
export function isShadowInstance(instanceId: string): boolean {
  return instanceId.startsWith(SHADOW_INSTANCE_PREFIX);
}

/** Reads through to `cloud`; plans and "launches" without a write; refuses termination. */
export function shadowCloud(cloud: Cloud, now: () => Date): Cloud {
  async function planLaunch(request: LaunchRequest): Promise<LaunchRecord> {
    const notReady = nodeClassNotReady(request.nodeClass);
    if (notReady !== undefined) throw new NodeClassNotReadyError(request.nodeClass.name, notReady);
    const zoneIds = new Map(
      (request.nodeClass.status?.subnets ?? []).flatMap((s) =>
        s.zoneID ? [[s.zone, s.zoneID] as const] : [],
      ),
    );
    // The shadow's own back-offs are none: it never launched, so EC2 never refused it.
    const selection = selectCandidates(request, new Set(), zoneIds);
    const cheapest = selection?.candidates
      .flatMap((c) => c.offerings.map((o) => ({ type: c.type.name, offering: o })))
      .sort(
        (a, b) =>
          a.offering.priceUsdPerHour - b.offering.priceUsdPerHour ||
          a.type.localeCompare(b.type) ||
          a.offering.zone.localeCompare(b.offering.zone),
      )[0];
    if (selection === undefined || cheapest === undefined) throw noOfferingLeft(request);
    const choice: ShadowChoice = {
      shadow: true,
      instanceType: cheapest.type,
      zone: cheapest.offering.zone,
      capacityType: selection.capacityType,
    };
    return { decidedAtMs: now().getTime(), request: JSON.stringify(choice) };
  }

  async function launch(request: LaunchRequest, record: LaunchRecord): Promise<CloudInstance> {
    const choice = JSON.parse(record.request) as Partial<ShadowChoice>;
    if (choice.shadow !== true || choice.instanceType === undefined || choice.zone === undefined) {
      // A record a live stack made: sending it would launch.
      throw new ShadowWriteError(`launching NodeClaim ${request.nodeClaimName} from a live launch record`);
    }
    const instanceId = `${SHADOW_INSTANCE_PREFIX}${request.nodeClaimName}`;
    return {
      instanceId,
      providerId: `aws:///${choice.zone}/${instanceId}`,
      instanceType: choice.instanceType,
      zone: choice.zone,
      capacityType: choice.capacityType ?? 'on-demand',
      state: 'pending',
      nodeClaimName: request.nodeClaimName,
      ...(request.nodePoolName === undefined ? {} : { nodePoolName: request.nodePoolName }),
      nodeClassName: request.nodeClass.name,
      tags: {},
    };
  }

  return {
    instanceTypes: (nodeClass) => cloud.instanceTypes(nodeClass),
    planLaunch,
    launch,
    create: async (request) => launch(request, await planLaunch(request)),
    findByNodeClaim: (name) => cloud.findByNodeClaim(name),
    delete: async (instanceId) => {
      throw new ShadowWriteError(`terminating ${instanceId}`);
    },
    nameInstance: async (instanceId) => {
      throw new ShadowWriteError(`tagging ${instanceId}`);
    },
    get: (instanceId) => cloud.get(instanceId),
    list: () => cloud.list(),
    // Back-offs live in the shadow's own state table; it launches nothing, so it has none to add.
    markUnavailable: async () => {},
    isDrifted: (instanceId, nodeClass) => cloud.isDrifted(instanceId, nodeClass),
  };
}
