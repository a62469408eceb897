import type {
  AmiStatus,
  CapacityReservationStatus,
  EC2NodeClass,
  PlacementGroupStatus,
  SecurityGroupStatus,
  SubnetStatus,
} from './ec2nodeclass.ts';

// The NodeClass controller's cloud side: an EC2NodeClass's selectors resolved part by part, and
// what EC2 says of the capacity reservations NodeClaims run in.

/**
 * What EC2 says of a capacity reservation NodeClaims run in, whatever the classes select now.
 * `expiring`: a capacity block inside the window before its end; `ended`: expired or cancelled (an
 * ODCR's instances keep running as on-demand ones); `other`: any other state (pending, failed …).
 */
export interface CapacityReservationLifecycle {
  readonly id: string;
  readonly reservationType: 'default' | 'capacity-block';
  readonly state: 'active' | 'expiring' | 'ended' | 'other';
  /** The state as EC2 names it (`expired`, `cancelled`, `active` …). */
  readonly ec2State: string;
  /** RFC 3339; absent for an ODCR without an end date. */
  readonly endTime?: string;
}

/**
 * What resolving one part of an EC2NodeClass came to: a value; a real answer that the user must act
 * on (`failed`: nothing matches, the role does not exist, access is denied); or `retry` when AWS
 * failed for now (throttling, a 5xx, a timeout), in which case what was known before still holds.
 */
export type Resolved<T> =
  | { readonly kind: 'resolved'; readonly value: T }
  | { readonly kind: 'failed'; readonly reason: string; readonly message: string }
  | { readonly kind: 'retry'; readonly message: string };

/** An EC2NodeClass's selectors resolved against EC2, SSM and IAM, part by part. */
export interface NodeClassResolution {
  readonly subnets: Resolved<readonly SubnetStatus[]>;
  readonly securityGroups: Resolved<readonly SecurityGroupStatus[]>;
  readonly amis: Resolved<readonly AmiStatus[]>;
  readonly instanceProfile: Resolved<string>;
  /** Absent when the class has no `spec.placementGroupSelector`. */
  readonly placementGroup?: Resolved<PlacementGroupStatus>;
  /**
   * What the cloud side cannot launch as the spec asks (user data that does not render for the
   * AMI family): each makes ValidationSucceeded False with its reason. Absent or empty: nothing.
   */
  readonly validation?: readonly { readonly reason: string; readonly message: string }[];
  /**
   * What the cloud side does only approximately for this class (Windows prices): a condition each
   * with status False, Flotilla's own and not part of Ready, so the class launches and says how.
   */
  readonly limitations?: readonly {
    readonly type: string;
    readonly reason: string;
    readonly message: string;
  }[];
  /** Absent when the class sets no `capacityReservationSelectorTerms`. */
  readonly capacityReservations?: Resolved<readonly CapacityReservationStatus[]>;
}

/** Resolves EC2NodeClasses against the cloud (the NodeClass controller's cloud side). */
export interface NodeClassResolver {
  /**
   * Resolves every part; never throws for user mistakes or AWS faults, which come back as
   * `failed` and `retry` parts. Creates the instance profile of a class that sets `spec.role`.
   */
  resolve(nodeClass: EC2NodeClass): Promise<NodeClassResolution>;
  /**
   * Removes what resolving created for a class being deleted (the instance profile managed for
   * `spec.role`). Idempotent; a profile already gone counts as removed.
   * @throws CloudApiError (with `retryable` for AWS faults).
   */
  release(nodeClass: EC2NodeClass): Promise<void>;
  /**
   * What EC2 says now of each capacity reservation in `ids`, by id (one read). A reservation EC2
   * does not list is absent: nothing is known of it, so nothing may be decided on it.
   * @throws CloudApiError.
   */
  capacityReservations(
    ids: readonly string[],
    now: Date,
  ): Promise<ReadonlyMap<string, CapacityReservationLifecycle>>;
}
