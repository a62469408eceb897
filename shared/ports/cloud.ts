import type {
  CapacityType,
  InstanceType,
  Labels,
  NodeSelectorRequirement,
  ResourceList,
  Taint,
} from '../core/index.ts';
import type { EC2NodeClass } from './ec2nodeclass.ts';
import type { OfferingKey } from './offering.ts';

// The Cloud port: what the use cases ask of EC2, in Karpenter's vocabulary. The AWS adapter lives
// in shared/adapters/aws; the simulator's in-memory one in shared/adapters/memory. The EC2NodeClass
// it launches with is in ec2nodeclass.ts, the offering cache in catalog.ts and the NodeClass
// controller's cloud side in nodeclass-resolver.ts; this module names them all.
//
// Domain types (InstanceType, Offering, requirements, taints) come from shared/core.

export type {
  CapacityType,
  Condition,
  ConditionStatus,
  InstanceType,
  Labels,
  NodeSelectorRequirement,
  Offering,
  Taint,
} from '../core/index.ts';
export * from './catalog.ts';
export * from './ec2nodeclass.ts';
export * from './nodeclass-resolver.ts';
export { isBackedOff, type OfferingKey, offeringKeyString } from './offering.ts';

// ---------------------------------------------------------------------------------------------
// Launch and instances

export interface LaunchRequest {
  /** The NodeClaim name; it derives the idempotency token and the `karpenter.sh/nodeclaim` tag. */
  readonly nodeClaimName: string;
  /**
   * Its NodePool; absent for a standalone NodeClaim, whose instance is tagged with an empty
   * `karpenter.sh/nodepool` (as Karpenter tags it).
   */
  readonly nodePoolName?: string;
  /** The NodeClass with a resolved, Ready status. */
  readonly nodeClass: EC2NodeClass;
  /** Candidate types (already filtered by the scheduler: compatible and big enough). */
  readonly instanceTypes: readonly InstanceType[];
  /** The NodeClaim's requirements; only offering keys (zone, capacity type, zone id) are evaluated here. */
  readonly requirements: readonly NodeSelectorRequirement[];
  /** Labels kubelet registers the node with. */
  readonly labels: Labels;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  /**
   * The NodeClaim's `spec.resources.requests`: one that requests `eks.amazonaws.com/nitro-sandbox`
   * launches with Nitro Enclaves enabled. @default none
   */
  readonly requests?: ResourceList;
}

export type InstanceState = 'pending' | 'running' | 'shutting-down' | 'terminated' | 'stopping' | 'stopped';

export interface CloudInstance {
  readonly instanceId: string;
  /** `aws:///<zone>/<instance id>`, as the Node's spec.providerID. */
  readonly providerId: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  /** The capacity reservation the instance runs in (capacity type `reserved`). */
  readonly capacityReservationId?: string;
  readonly capacityReservationType?: 'default' | 'capacity-block';
  /** The reservation it runs in is interruptible (EC2's `interruptible-capacity-reservation` lifecycle). */
  readonly capacityReservationInterruptible?: boolean;
  readonly state: InstanceState;
  readonly imageId?: string;
  /** The subnet of its primary network interface. */
  readonly subnetId?: string;
  /** The security groups of its primary network interface. */
  readonly securityGroupIds?: readonly string[];
  /**
   * The placement group it runs in (EC2 names it; the id where EC2 gives it), and in a
   * `partition` group the partition EC2 put it in (`1`…N); absent when none.
   */
  readonly placementGroup?: { readonly name?: string; readonly id?: string; readonly partition?: string };
  readonly launchTime?: Date;
  readonly privateDnsName?: string;
  readonly nodeClaimName?: string;
  readonly nodePoolName?: string;
  readonly nodeClassName?: string;
  readonly tags: Readonly<Record<string, string>>;
}

/**
 * EC2 as the use cases need it. Every method is idempotent; errors are the typed errors below.
 */
export interface Cloud {
  /**
   * Instance types usable with `nodeClass` (its AMIs' architectures, its subnets' zones), with
   * capacity and overhead from its kubelet settings and offerings whose `available` reflects the
   * ICE back-offs now. Reads the offering cache; EC2 only for what the class's capacity
   * reservations can still take (`reserved` offerings, one DescribeCapacityReservations).
   * @throws CatalogUnavailableError when the cache has not been filled yet.
   */
  instanceTypes(nodeClass: EC2NodeClass): Promise<readonly InstanceType[]>;
  /**
   * Decides the launch of a NodeClaim: the exact request the cloud will be sent (offerings, subnet,
   * launch template, idempotency token), as a record the caller keeps on the NodeClaim before
   * calling `launch`. Makes no launch.
   * @throws NodeClassNotReadyError, InsufficientCapacityError (every offering backed off),
   *   CloudApiError.
   */
  planLaunch(request: LaunchRequest): Promise<LaunchRecord>;
  /**
   * Sends a recorded launch. Sending the same record again never launches a second instance: it
   * returns the instance the first send launched (the record carries the idempotency token), or
   * the instance already tagged with the NodeClaim.
   * @throws InsufficientCapacityError or LaunchRejectedError when the cloud answered that nothing
   *   was launched (final for this record); CloudApiError when the answer is unknown (throttled,
   *   timed out): an instance may exist, so send the same record again rather than a new one.
   */
  launch(request: LaunchRequest, record: LaunchRecord, options?: LaunchOptions): Promise<CloudInstance>;
  /** `planLaunch` then `launch`, keeping nothing in between (callers that cannot crash midway). */
  create(request: LaunchRequest): Promise<CloudInstance>;
  /**
   * The instance tagged with the NodeClaim's name that is not terminated yet (pending, running,
   * stopping, stopped or shutting down). Right after a launch
   * EC2 may not list it yet (eventual consistency): an answer of none is final only once
   * `INSTANCE_LOOKUP_WINDOW_MS` has passed since the launch was sent.
   */
  findByNodeClaim(nodeClaimName: string): Promise<CloudInstance | undefined>;
  /**
   * Terminates an instance this cluster launched. An instance already gone counts as success.
   * @throws InstanceNotOwnedError when the instance lacks this cluster's tags; CloudApiError.
   */
  delete(instanceId: string): Promise<void>;
  /**
   * Tags an instance this cluster launched with its node's name (`Name`), as Karpenter's tagging
   * does once the node registers. An instance already gone counts as success.
   * @throws CloudApiError.
   */
  nameInstance(instanceId: string, nodeName: string): Promise<void>;
  /** The instance, or undefined when EC2 no longer knows it. */
  get(instanceId: string): Promise<CloudInstance | undefined>;
  /** Every non-terminated instance this cluster owns (for garbage collection). */
  list(): Promise<readonly CloudInstance[]>;
  /** Backs offerings off for the ICE TTL (3 minutes), e.g. after a spot interruption warning. */
  markUnavailable(offerings: readonly OfferingKey[], reason: string): Promise<void>;
  /**
   * Why the instance has drifted from the EC2NodeClass's resolved status (its AMI, subnet or
   * security groups are no longer the class's), or undefined when it has not, when the class has
   * no status, or when the instance is gone.
   * @throws CloudApiError.
   */
  isDrifted(instanceId: string, nodeClass: EC2NodeClass): Promise<CloudDriftReason | undefined>;
}

/**
 * A launch decided for a NodeClaim (Cloud.planLaunch), kept on the NodeClaim between the decision
 * and the launch so that a resumed launch replays it instead of deciding another.
 */
export interface LaunchRecord {
  /** When the launch was decided, epoch ms; the instance lookup waits out its window from here. */
  readonly decidedAtMs: number;
  /** The cloud adapter's encoding of the exact request; opaque to the use cases. */
  readonly request: string;
}

export interface LaunchOptions {
  /**
   * The record was just planned and has never been sent (the caller recorded it on the NodeClaim
   * right before this send): no instance can carry the NodeClaim's tag yet, so none is looked up
   * first. @default false (a replay: the instance tagged with the NodeClaim, if any, is the answer)
   */
  readonly firstSend?: boolean;
}

/**
 * How long after a launch was sent EC2 may still not list its instance (DescribeInstances is
 * eventually consistent). Termination and garbage collection treat "no instance" as final only
 * after this.
 */
export const INSTANCE_LOOKUP_WINDOW_MS = 90_000;

/** The cloud's reasons a NodeClaim is drifted, as Karpenter's AWS provider names them. */
export type CloudDriftReason =
  | 'AMIDrift'
  | 'SubnetDrift'
  | 'SecurityGroupDrift'
  | 'PlacementGroupDrift'
  | 'CapacityReservationDrift';

export {
  CatalogUnavailableError,
  CloudApiError,
  InstanceNotOwnedError,
  InsufficientCapacityError,
  isRetryableCloudError,
  LaunchRejectedError,
  NodeClassNotReadyError,
  SpotServiceLinkedRoleError,
} from './errors.ts';
