import {
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  DescribeTagsCommand,
  EC2Client,
  type Tag,
} from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, IAMClient, NoSuchEntityException } from '@aws-sdk/client-iam';
import { runSimulation, runUnsafeSimulation } from '@cloud-copilot/iam-simulate';
import { HarnessError } from '../errors.ts';
import type { PolicyDocument } from './policies.ts';
import { STACK_ACCOUNT } from './stack.ts';

// What AWS authorizes when a Flotilla Lambda makes one SDK call, and whether the Lambda's policy
// allows it. A call is a set of requests (action, resource ARN, condition keys), modelled after
// the Service Authorization Reference for the calls Flotilla makes (CreateFleet below). Resource
// tags are read from moto as they stand before the call. The evaluation itself is
// @cloud-copilot/iam-simulate, whose action data also checks that each modelled resource type is
// one the action is authorized on.

/** One authorization AWS makes for a call. */
export interface AuthorizationRequest {
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | readonly string[]>>;
}

/** A call as the SDK client makes it. */
export interface SdkCall {
  /** The client's service id, e.g. `EC2`, `DynamoDB`. */
  readonly service: string;
  /** The command name without `Command`, e.g. `CreateFleet`. */
  readonly operation: string;
  readonly input: Record<string, unknown>;
  readonly region: string;
  /** moto's endpoint, for reading resource tags as they stand. */
  readonly endpoint: string;
}

const lookups = new Map<string, { ec2: EC2Client; iam: IAMClient }>();

function lookup(endpoint: string, region: string) {
  let clients = lookups.get(endpoint);
  if (clients === undefined) {
    const config = {
      endpoint,
      region,
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 3,
    };
    clients = { ec2: new EC2Client(config), iam: new IAMClient(config) };
    lookups.set(endpoint, clients);
  }
  return clients;
}

const tagContext = (prefix: 'aws:RequestTag' | 'aws:ResourceTag', tags: readonly Tag[] | undefined) =>
  Object.fromEntries((tags ?? []).map((t) => [`${prefix}/${t.Key ?? ''}`, t.Value ?? '']));

const requestTags = (tags: readonly Tag[] | undefined) =>
  tags === undefined || tags.length === 0
    ? {}
    : { ...tagContext('aws:RequestTag', tags), 'aws:TagKeys': tags.map((t) => t.Key ?? '') };

async function ec2ResourceTags(call: SdkCall, id: string): Promise<Tag[]> {
  const { ec2 } = lookup(call.endpoint, call.region);
  const out = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: 'resource-id', Values: [id] }] }));
  return (out.Tags ?? []).map((t) => ({ Key: t.Key ?? '', Value: t.Value ?? '' }));
}

function ec2Arn(call: SdkCall, type: string, id: string, account = STACK_ACCOUNT): string {
  return `arn:aws:ec2:${call.region}:${account}:${type}/${id}`;
}

const EC2_ID_TYPES: Record<string, string> = {
  i: 'instance',
  lt: 'launch-template',
  vol: 'volume',
  eni: 'network-interface',
  fleet: 'fleet',
  sg: 'security-group',
  subnet: 'subnet',
};

function ec2ArnOfId(call: SdkCall, id: string): string {
  const type = EC2_ID_TYPES[id.split('-')[0] ?? ''];
  if (type === undefined)
    throw new HarnessError(`the IAM check does not know the EC2 resource type of "${id}"`);
  return ec2Arn(call, type, id);
}

async function instanceProfileTags(call: SdkCall, name: string) {
  const { iam } = lookup(call.endpoint, call.region);
  try {
    const out = await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name }));
    return out.InstanceProfile;
  } catch (error) {
    if (error instanceof NoSuchEntityException) return undefined;
    throw error;
  }
}

/** The authorizations one call needs. */
export async function authorizationsOf(call: SdkCall): Promise<AuthorizationRequest[]> {
  const service = call.service.toLowerCase();
  const action = `${service}:${call.operation}`;
  const region = { 'aws:RequestedRegion': call.region };
  const input = call.input;
  const one = (resource: string, context: AuthorizationRequest['context'] = {}): AuthorizationRequest[] => [
    { action, resource, context: { ...region, ...context } },
  ];
  switch (service) {
    case 'ec2':
      return ec2Authorizations(call, action, region);
    case 'ssm': {
      const name = String(input['Name'] ?? '');
      // AWS's public parameters belong to no account.
      const account = name.startsWith('/aws/') ? '' : STACK_ACCOUNT;
      return one(`arn:aws:ssm:${call.region}:${account}:parameter/${name.replace(/^\//, '')}`);
    }
    case 'dynamodb': {
      const tables =
        call.operation === 'BatchWriteItem' || call.operation === 'BatchGetItem'
          ? Object.keys((input['RequestItems'] ?? {}) as Record<string, unknown>)
          : [String(input['TableName'] ?? '')];
      return tables.map((t) => ({
        action,
        resource: `arn:aws:dynamodb:${call.region}:${STACK_ACCOUNT}:table/${t}`,
        context: region,
      }));
    }
    case 'sqs': {
      const url = String(input['QueueUrl'] ?? '');
      const queue = url.slice(url.lastIndexOf('/') + 1);
      const sqsAction = call.operation === 'SendMessageBatch' ? 'sqs:SendMessage' : action;
      return [
        {
          action: sqsAction,
          resource: `arn:aws:sqs:${call.region}:${STACK_ACCOUNT}:${queue}`,
          context: region,
        },
      ];
    }
    case 's3':
      return s3Authorizations(call, region);
    case 'eks':
      return one(`arn:aws:eks:${call.region}:${STACK_ACCOUNT}:cluster/${String(input['name'] ?? '')}`);
    case 'pricing':
      return one('*');
    case 'sts':
      // GetCallerIdentity needs no permission; Flotilla makes no other STS call.
      return call.operation === 'GetCallerIdentity' ? [] : one('*');
    case 'iam':
      return iamAuthorizations(call, action, region);
    case 'eventbridge': {
      if (call.operation !== 'PutEvents') {
        throw new HarnessError(
          `the IAM check does not model events:${call.operation}; add it to test/harness/aws/authorize.ts`,
        );
      }
      // One authorization per bus the entries name (a name, or an ARN as it stands).
      const buses = new Set(
        ((input['Entries'] ?? []) as { EventBusName?: string }[]).map((e) => e.EventBusName ?? 'default'),
      );
      return [...buses].map((bus) => ({
        action: 'events:PutEvents',
        resource: bus.startsWith('arn:')
          ? bus
          : `arn:aws:events:${call.region}:${STACK_ACCOUNT}:event-bus/${bus}`,
        context: region,
      }));
    }
    case 'scheduler': {
      if (call.operation === 'ListSchedules') return one('*');
      const group = String(input['GroupName'] ?? 'default');
      const schedule = one(
        `arn:aws:scheduler:${call.region}:${STACK_ACCOUNT}:schedule/${group}/${String(input['Name'] ?? '')}`,
      );
      if (call.operation === 'DeleteSchedule' || call.operation === 'GetSchedule') return schedule;
      if (call.operation !== 'CreateSchedule' && call.operation !== 'UpdateSchedule') {
        throw new HarnessError(
          `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
        );
      }
      // Scheduler assumes the target's role: the caller must be allowed to pass it to Scheduler.
      const role = String((input['Target'] as { RoleArn?: string } | undefined)?.RoleArn ?? '');
      return [
        ...schedule,
        {
          action: 'iam:PassRole',
          resource: role,
          context: { ...region, 'iam:PassedToService': 'scheduler.amazonaws.com' },
        },
      ];
    }
    case 'cloudformation': {
      if (call.operation !== 'DescribeStacks') {
        throw new HarnessError(
          `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
        );
      }
      // Authorized on the stack it names by id (Flotilla names no stack by its bare name).
      return one(String(input['StackName'] ?? '*'));
    }
    case 'cloudwatch': {
      if (call.operation !== 'DescribeAlarms') {
        throw new HarnessError(
          `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
        );
      }
      // Authorized on each alarm it names (every alarm of the account and region when it names none).
      const names = (input['AlarmNames'] ?? ['*']) as string[];
      return names.map((name) => ({
        action,
        resource: `arn:aws:cloudwatch:${call.region}:${STACK_ACCOUNT}:alarm:${name}`,
        context: region,
      }));
    }
    case 'cloudwatch logs': {
      // Log-group actions are authorized on the group's ARN as IAM policies name it (`:*`).
      const logsAction = `logs:${call.operation}`;
      if (call.operation !== 'FilterLogEvents') {
        throw new HarnessError(
          `the IAM check does not model ${logsAction}; add it to test/harness/aws/authorize.ts`,
        );
      }
      const group = String(input['logGroupName'] ?? '');
      return [
        {
          action: logsAction,
          resource: `arn:aws:logs:${call.region}:${STACK_ACCOUNT}:log-group:${group}:*`,
          context: region,
        },
      ];
    }
    default:
      throw new HarnessError(
        `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
      );
  }
}

async function ec2Authorizations(
  call: SdkCall,
  action: string,
  region: Record<string, string>,
): Promise<AuthorizationRequest[]> {
  const input = call.input;
  const op = call.operation;
  if (op.startsWith('Describe') || op.startsWith('Get')) return [{ action, resource: '*', context: region }];
  switch (op) {
    case 'CreateLaunchTemplate': {
      const tags = (
        input['TagSpecifications'] as { ResourceType?: string; Tags?: Tag[] }[] | undefined
      )?.find((t) => t.ResourceType === 'launch-template')?.Tags;
      const resource = ec2Arn(call, 'launch-template', '*');
      return [
        { action, resource, context: { ...region, ...requestTags(tags) } },
        {
          action: 'ec2:CreateTags',
          resource,
          context: { ...region, ...requestTags(tags), 'ec2:CreateAction': 'CreateLaunchTemplate' },
        },
      ];
    }
    case 'CreateFleet':
      return createFleetAuthorizations(call, action, region);
    case 'CreateTags': {
      const tags = input['Tags'] as Tag[] | undefined;
      const out: AuthorizationRequest[] = [];
      for (const id of (input['Resources'] ?? []) as string[]) {
        out.push({
          action,
          resource: ec2ArnOfId(call, id),
          context: {
            ...region,
            ...tagContext('aws:ResourceTag', await ec2ResourceTags(call, id)),
            ...requestTags(tags),
          },
        });
      }
      return out;
    }
    case 'TerminateInstances': {
      const out: AuthorizationRequest[] = [];
      for (const id of (input['InstanceIds'] ?? []) as string[]) {
        out.push({
          action,
          resource: ec2Arn(call, 'instance', id),
          context: { ...region, ...tagContext('aws:ResourceTag', await ec2ResourceTags(call, id)) },
        });
      }
      return out;
    }
    case 'DeleteLaunchTemplate': {
      const template = await launchTemplate(call, input['LaunchTemplateId'], input['LaunchTemplateName']);
      return [
        {
          action,
          resource: ec2Arn(call, 'launch-template', template?.id ?? String(input['LaunchTemplateId'] ?? '*')),
          context: { ...region, ...tagContext('aws:ResourceTag', template?.tags) },
        },
      ];
    }
    default:
      throw new HarnessError(
        `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
      );
  }
}

async function launchTemplate(call: SdkCall, id: unknown, name: unknown) {
  const { ec2 } = lookup(call.endpoint, call.region);
  const out = await ec2.send(
    new DescribeLaunchTemplatesCommand(
      typeof id === 'string' ? { LaunchTemplateIds: [id] } : { LaunchTemplateNames: [String(name)] },
    ),
  );
  const template = out.LaunchTemplates?.[0];
  if (template?.LaunchTemplateId === undefined) return undefined;
  const versions = await ec2.send(
    new DescribeLaunchTemplateVersionsCommand({
      LaunchTemplateId: template.LaunchTemplateId,
      Versions: ['$Latest'],
    }),
  );
  return {
    id: template.LaunchTemplateId,
    tags: template.Tags ?? [],
    data: versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData,
  };
}

/**
 * CreateFleet (type instant) is authorized on what the Service Authorization Reference lists for it
 * (the fleet, instances and volumes it creates with the request's tags, the launch template, the
 * subnets and the image); the fleet then launches through RunInstances with the caller's
 * permissions, authorized on the instance, volume and network interface it creates (the network
 * interface with the tags the launch template gives it), the launch template, subnets, image and
 * security groups. The instance profile's role is passed to EC2.
 */
async function createFleetAuthorizations(
  call: SdkCall,
  _action: string,
  region: Record<string, string>,
): Promise<AuthorizationRequest[]> {
  const input = call.input as {
    TagSpecifications?: { ResourceType?: string; Tags?: Tag[] }[];
    LaunchTemplateConfigs?: {
      LaunchTemplateSpecification?: { LaunchTemplateId?: string; LaunchTemplateName?: string };
      Overrides?: { SubnetId?: string; ImageId?: string }[];
    }[];
  };
  const tagsFor = (type: string) => input.TagSpecifications?.find((t) => t.ResourceType === type)?.Tags;
  const out: AuthorizationRequest[] = [];
  const created = (action: string, createAction: string, type: string, tags: Tag[] | undefined) => {
    const resource = ec2Arn(call, type, '*');
    out.push({ action, resource, context: { ...region, ...requestTags(tags) } });
    if (tags !== undefined && tags.length > 0) {
      out.push({
        action: 'ec2:CreateTags',
        resource,
        context: { ...region, ...requestTags(tags), 'ec2:CreateAction': createAction },
      });
    }
  };
  const existing = (
    action: string,
    resource: string,
    context: Record<string, string | readonly string[]> = {},
  ) => out.push({ action, resource, context: { ...region, ...context } });

  const subnets = new Set<string>();
  const images = new Set<string>();
  const groups = new Set<string>();
  const profiles = new Set<string>();
  const templates: { id: string; tags: Tag[] }[] = [];
  let interfaceTags: Tag[] | undefined;
  for (const config of input.LaunchTemplateConfigs ?? []) {
    const spec = config.LaunchTemplateSpecification;
    const template = await launchTemplate(call, spec?.LaunchTemplateId, spec?.LaunchTemplateName);
    if (template === undefined) continue;
    templates.push({ id: template.id, tags: template.tags });
    const data = template.data;
    if (data?.ImageId) images.add(data.ImageId);
    for (const g of data?.SecurityGroupIds ?? []) groups.add(g);
    for (const nic of data?.NetworkInterfaces ?? []) for (const g of nic.Groups ?? []) groups.add(g);
    if (data?.IamInstanceProfile?.Name) profiles.add(data.IamInstanceProfile.Name);
    interfaceTags ??= data?.TagSpecifications?.find((t) => t.ResourceType === 'network-interface')?.Tags;
    for (const o of config.Overrides ?? []) {
      if (o.SubnetId) subnets.add(o.SubnetId);
      if (o.ImageId) images.add(o.ImageId);
    }
  }

  const fleet = 'ec2:CreateFleet';
  created(fleet, 'CreateFleet', 'fleet', tagsFor('fleet'));
  created(fleet, 'CreateFleet', 'instance', tagsFor('instance'));
  created(fleet, 'CreateFleet', 'volume', tagsFor('volume'));
  const run = 'ec2:RunInstances';
  for (const [type, tags] of [
    ['instance', tagsFor('instance')],
    ['volume', tagsFor('volume')],
    ['network-interface', interfaceTags],
  ] as const) {
    out.push({
      action: run,
      resource: ec2Arn(call, type, '*'),
      context: { ...region, ...requestTags(tags) },
    });
  }
  if (interfaceTags !== undefined && interfaceTags.length > 0) {
    existing('ec2:CreateTags', ec2Arn(call, 'network-interface', '*'), {
      ...requestTags(interfaceTags),
      'ec2:CreateAction': 'RunInstances',
    });
  }
  for (const action of [fleet, run]) {
    for (const t of templates) {
      existing(action, ec2Arn(call, 'launch-template', t.id), tagContext('aws:ResourceTag', t.tags));
    }
    for (const id of subnets) existing(action, ec2Arn(call, 'subnet', id));
    for (const id of images) existing(action, ec2Arn(call, 'image', id, ''));
  }
  for (const id of groups) existing(run, ec2Arn(call, 'security-group', id));
  for (const name of profiles) {
    const profile = await instanceProfileTags(call, name);
    for (const role of profile?.Roles ?? []) {
      existing('iam:PassRole', role.Arn ?? `arn:aws:iam::${STACK_ACCOUNT}:role/${role.RoleName}`, {
        'iam:PassedToService': 'ec2.amazonaws.com',
      });
    }
  }
  return out;
}

/**
 * S3 object calls are authorized on the object's ARN (`arn:aws:s3:::<bucket>/<key>`), bucket calls on
 * the bucket's; HeadObject needs s3:GetObject, listing s3:ListBucket. `aws:ResourceAccount` is the
 * bucket owner's account: every bucket on moto is the test account's.
 */
function s3Authorizations(call: SdkCall, region: Record<string, string>): AuthorizationRequest[] {
  const bucket = String(call.input['Bucket'] ?? '');
  const key = String(call.input['Key'] ?? '');
  const context = { ...region, 'aws:ResourceAccount': STACK_ACCOUNT };
  const onObject = (action: string) => [{ action, resource: `arn:aws:s3:::${bucket}/${key}`, context }];
  const onBucket = (action: string) => [{ action, resource: `arn:aws:s3:::${bucket}`, context }];
  switch (call.operation) {
    case 'GetObject':
    case 'HeadObject':
      return onObject('s3:GetObject');
    case 'PutObject':
      return onObject('s3:PutObject');
    case 'DeleteObject':
      return onObject('s3:DeleteObject');
    case 'ListObjectsV2':
    case 'HeadBucket':
      return onBucket('s3:ListBucket');
    default:
      throw new HarnessError(
        `the IAM check does not model s3:${call.operation}; add it to test/harness/aws/authorize.ts`,
      );
  }
}

async function iamAuthorizations(
  call: SdkCall,
  action: string,
  region: Record<string, string>,
): Promise<AuthorizationRequest[]> {
  const input = call.input;
  const name = String(input['InstanceProfileName'] ?? '');
  const resource = `arn:aws:iam::${STACK_ACCOUNT}:instance-profile/${name}`;
  switch (call.operation) {
    case 'GetInstanceProfile':
      return [{ action, resource, context: region }];
    case 'CreateInstanceProfile': {
      const tags = input['Tags'] as Tag[] | undefined;
      const out: AuthorizationRequest[] = [
        { action, resource, context: { ...region, ...requestTags(tags) } },
      ];
      // Tags given at creation need iam:TagInstanceProfile too, on the profile as it will be.
      if (tags !== undefined && tags.length > 0) {
        out.push({
          action: 'iam:TagInstanceProfile',
          resource,
          context: { ...region, ...requestTags(tags), ...tagContext('aws:ResourceTag', tags) },
        });
      }
      return out;
    }
    case 'TagInstanceProfile':
    case 'AddRoleToInstanceProfile':
    case 'RemoveRoleFromInstanceProfile':
    case 'DeleteInstanceProfile': {
      const profile = await instanceProfileTags(call, name);
      const context = {
        ...region,
        ...tagContext('aws:ResourceTag', profile?.Tags),
        ...(call.operation === 'TagInstanceProfile' ? requestTags(input['Tags'] as Tag[] | undefined) : {}),
      };
      const out: AuthorizationRequest[] = [{ action, resource, context }];
      if (call.operation === 'AddRoleToInstanceProfile') {
        out.push({
          action: 'iam:PassRole',
          resource: `arn:aws:iam::${STACK_ACCOUNT}:role/${String(input['RoleName'] ?? '')}`,
          context: { ...region, 'iam:PassedToService': 'ec2.amazonaws.com' },
        });
      }
      return out;
    }
    default:
      throw new HarnessError(
        `the IAM check does not model ${action}; add it to test/harness/aws/authorize.ts`,
      );
  }
}

/** Why `policies` do not allow `request`, or undefined when they do. */
export async function denial(
  principal: string,
  policies: readonly PolicyDocument[],
  request: AuthorizationRequest,
): Promise<string | undefined> {
  const simulation = {
    request: {
      principal,
      action: request.action,
      resource: { resource: request.resource, accountId: STACK_ACCOUNT },
      contextVariables: Object.fromEntries(
        Object.entries(request.context).map(([k, v]) => [k, typeof v === 'string' ? v : [...v]]),
      ),
    },
    identityPolicies: policies.map((policy, i) => ({ name: `policy-${i}`, policy: policy as never })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: undefined,
  };
  // AWS's public SSM parameters are owned by no account (`arn:aws:ssm:<region>::parameter/aws/…`),
  // an ARN the simulator's input validation refuses; their evaluation runs unvalidated.
  if (/^arn:aws:ssm:[^:]*::parameter\/aws\//.test(request.resource)) {
    const result = runUnsafeSimulation(simulation, {});
    return result === 'Allowed'
      ? undefined
      : `${result}: ${request.action} on ${request.resource} with ${JSON.stringify(request.context)}`;
  }
  const result = await runSimulation(simulation, {});
  if (result.resultType === 'error') {
    throw new HarnessError(
      `the IAM check could not evaluate ${request.action} on ${request.resource}: ${JSON.stringify(result.errors).slice(0, 1000)}`,
    );
  }
  if (result.overallResult === 'Allowed') return undefined;
  return `${result.overallResult}: ${request.action} on ${request.resource} with ${JSON.stringify(request.context)}`;
}
