import type {
  CreateFleetCommandInput,
  CreateFleetCommandOutput,
  CreateFleetError,
  EC2Client,
} from '@aws-sdk/client-ec2';

let injected = 0;

/**
 * EC2 has no capacity for `type` (in `zones`, or everywhere; for `capacityType` fleets, or any):
 * its CreateFleet overrides are taken out of the request and come back as
 * InsufficientInstanceCapacity errors, as EC2 reports them. Returns a function that ends the shortage.
 */
export function noCapacityFor(
  client: EC2Client,
  type: string,
  zones?: readonly string[],
  capacityType?: 'spot' | 'on-demand',
): () => void {
  injected += 1;
  const name = `no-capacity-${type}-${injected}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'CreateFleetCommand') return next(args);
      const input = args.input as CreateFleetCommandInput;
      const lifecycle = input.TargetCapacitySpecification?.DefaultTargetCapacityType ?? 'on-demand';
      if (capacityType !== undefined && lifecycle !== capacityType) return next(args);
      const errors: CreateFleetError[] = [];
      const configs = (input.LaunchTemplateConfigs ?? []).map((config) => ({
        ...config,
        Overrides: (config.Overrides ?? []).filter((o) => {
          const iced =
            o.InstanceType === type && (zones === undefined || zones.includes(o.AvailabilityZone ?? ''));
          if (iced) {
            errors.push({
              ErrorCode: 'InsufficientInstanceCapacity',
              ErrorMessage: `We currently do not have sufficient ${type} capacity in the Availability Zone you requested.`,
              Lifecycle: lifecycle === 'spot' ? 'spot' : 'on-demand',
              LaunchTemplateAndOverrides: {
                LaunchTemplateSpecification: config.LaunchTemplateSpecification,
                Overrides: o,
              },
            });
          }
          return !iced;
        }),
      }));
      const left = configs.filter((c) => c.Overrides.length > 0);
      if (left.length === 0) {
        return {
          response: {},
          output: { $metadata: {}, Errors: errors, Instances: [] } as CreateFleetCommandOutput,
        };
      }
      const result = await next({ ...args, input: { ...input, LaunchTemplateConfigs: left } });
      const output = result.output as CreateFleetCommandOutput;
      output.Errors = [...(output.Errors ?? []), ...errors];
      return result;
    },
    { step: 'initialize', name },
  );
  return () => client.middlewareStack.remove(name);
}

/**
 * The account has no EC2 Spot service-linked role and the caller may not create it: every spot
 * CreateFleet comes back with nothing launched and an
 * `AuthFailure.ServiceLinkedRoleCreationNotPermitted` error per override, as EC2 reports it (moto
 * launches spot without the role). On-demand fleets go to moto. Returns a function that ends it.
 */
export function noSpotServiceLinkedRole(client: EC2Client): () => void {
  return refuseFleets(
    client,
    'no-spot-role',
    (input) => input.TargetCapacitySpecification?.DefaultTargetCapacityType === 'spot',
    {
      ErrorCode: 'AuthFailure.ServiceLinkedRoleCreationNotPermitted',
      ErrorMessage:
        'The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances.',
      Lifecycle: 'spot',
    },
  );
}

/**
 * Every CreateFleet that `refused` picks comes back with nothing launched and `error` for each of
 * its overrides, as EC2 reports such a refusal; the others go to moto. Returns a function that ends it.
 */
function refuseFleets(
  client: EC2Client,
  prefix: string,
  refused: (input: CreateFleetCommandInput) => boolean,
  error: Pick<CreateFleetError, 'ErrorCode' | 'ErrorMessage' | 'Lifecycle'>,
): () => void {
  injected += 1;
  const name = `${prefix}-${injected}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'CreateFleetCommand') return next(args);
      const input = args.input as CreateFleetCommandInput;
      if (!refused(input)) return next(args);
      const errors: CreateFleetError[] = (input.LaunchTemplateConfigs ?? []).flatMap((config) =>
        (config.Overrides ?? []).map((o) => ({
          ...error,
          LaunchTemplateAndOverrides: {
            LaunchTemplateSpecification: config.LaunchTemplateSpecification,
            Overrides: o,
          },
        })),
      );
      return {
        response: {},
        output: { $metadata: {}, Errors: errors, Instances: [] } as CreateFleetCommandOutput,
      };
    },
    { step: 'initialize', name },
  );
  return () => client.middlewareStack.remove(name);
}

/**
 * The capacity reservations a launch targets are full: every CreateFleet into a reservation (an
 * on-demand fleet with capacity-reservation options, or a capacity-block fleet) comes back with
 * nothing launched and a `ReservationCapacityExceeded` error per override, as EC2 reports it
 * (moto does not model reservations). Other fleets go to moto. Returns a function that ends it.
 */
export function reservationsFull(client: EC2Client): () => void {
  return refuseFleets(
    client,
    'reservations-full',
    (input) =>
      input.TargetCapacitySpecification?.DefaultTargetCapacityType === 'capacity-block' ||
      input.OnDemandOptions?.CapacityReservationOptions !== undefined,
    {
      ErrorCode: 'ReservationCapacityExceeded',
      ErrorMessage: 'There is insufficient capacity in the targeted Capacity Reservation.',
      Lifecycle: 'on-demand',
    },
  );
}
