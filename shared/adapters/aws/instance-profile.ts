import { createHash } from 'node:crypto';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  DeleteInstanceProfileCommand,
  GetInstanceProfileCommand,
  type IAMClient,
  type InstanceProfile,
  NoSuchEntityException,
  RemoveRoleFromInstanceProfileCommand,
} from '@aws-sdk/client-iam';
import { Tag } from '../../apis/aws-tags.ts';
import { FlotillaError } from '../../core/errors.ts';
import { awsErrorCode, call, toCloudApiError } from './errors.ts';

/** The role of `spec.role` does not exist (or cannot be read). */
export class NodeRoleNotFoundError extends FlotillaError {
  readonly code = 'NodeRoleNotFound';
}

/** IAM refused to let Flotilla put the role of `spec.role` in an instance profile (iam:PassRole). */
export class NodeRoleNotAllowedError extends FlotillaError {
  readonly code = 'NodeRoleNotAllowed';
}

export interface InstanceProfileOptions {
  readonly iam: IAMClient;
  readonly clusterName: string;
  readonly region: string;
}

/**
 * The name of the instance profile Flotilla manages for an EC2NodeClass that sets `spec.role`:
 * `<cluster>_<hash of region and NodeClass name>`, stable across runs and at most 128 characters.
 */
export function managedInstanceProfileName(
  clusterName: string,
  region: string,
  nodeClassName: string,
): string {
  const digest = createHash('sha256').update(`${region}/${nodeClassName}`).digest('hex').slice(0, 20);
  return `${clusterName.slice(0, 100)}_${digest}`;
}

/**
 * Whether `profile` carries the ownership tags of this cluster, region and NodeClass: the tags
 * Flotilla puts on the profiles it makes, and Karpenter on its own.
 */
function ownedBy(profile: InstanceProfile, options: InstanceProfileOptions, nodeClassName: string): boolean {
  const tags = new Map((profile.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? ''] as const));
  return (
    tags.get(`kubernetes.io/cluster/${options.clusterName}`) === 'owned' &&
    tags.get(Tag.region) === options.region &&
    tags.get(Tag.nodeClass) === nodeClassName
  );
}

/**
 * The profile the class uses now (`status.instanceProfile`) when it is not the managed name but
 * carries the ownership tags of this cluster, region and class: one Karpenter made for the class
 * before Flotilla took the cluster over. Flotilla keeps using it, so the nodes Karpenter launched
 * and the new ones share one profile and nothing is left behind.
 */
async function adoptable(
  options: InstanceProfileOptions,
  nodeClassName: string,
  current: string | undefined,
): Promise<InstanceProfile | undefined> {
  const managed = managedInstanceProfileName(options.clusterName, options.region, nodeClassName);
  if (current === undefined || current === managed) return undefined;
  const profile = await getProfile(options.iam, current);
  return profile !== undefined && ownedBy(profile, options, nodeClassName) ? profile : undefined;
}

/**
 * Makes sure the managed instance profile of `nodeClassName` exists, carries the ownership tags
 * (cluster, region, NodeClass) that scope Flotilla's IAM permissions, and holds exactly `role`.
 * `current` is the profile the class uses now: one of another owner's making that carries those
 * tags (Karpenter's, after a takeover) is kept as the managed profile instead.
 * Idempotent: a second call with the same role changes nothing. Returns the profile name.
 */
export async function ensureInstanceProfile(
  options: InstanceProfileOptions,
  nodeClassName: string,
  role: string,
  current?: string,
): Promise<string> {
  const { iam } = options;
  const adopted = await adoptable(options, nodeClassName, current);
  const name =
    adopted?.InstanceProfileName ??
    managedInstanceProfileName(options.clusterName, options.region, nodeClassName);
  let profile = adopted ?? (await getProfile(iam, name));
  if (!profile) {
    const created = await call('iam:CreateInstanceProfile', () =>
      iam.send(
        new CreateInstanceProfileCommand({
          InstanceProfileName: name,
          Tags: [
            { Key: `kubernetes.io/cluster/${options.clusterName}`, Value: 'owned' },
            { Key: Tag.clusterName, Value: options.clusterName },
            { Key: Tag.region, Value: options.region },
            { Key: Tag.nodeClass, Value: nodeClassName },
          ],
        }),
      ),
    );
    profile = created.InstanceProfile;
  }
  const roles = (profile?.Roles ?? []).map((r) => r.RoleName ?? '');
  if (roles.length === 1 && roles[0] === role) return name;
  // An instance profile holds at most one role: swap it when spec.role changed.
  for (const other of roles.filter((r) => r !== role)) {
    await call('iam:RemoveRoleFromInstanceProfile', () =>
      iam.send(new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: name, RoleName: other })),
    );
  }
  try {
    await iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: role }));
  } catch (error) {
    if (error instanceof NoSuchEntityException) {
      throw new NodeRoleNotFoundError(
        `spec.role "${role}" does not exist in IAM; create the node role or name an existing one`,
        { cause: error },
      );
    }
    const code = awsErrorCode(error);
    if (code === 'AccessDenied' || code === 'AccessDeniedException') {
      // The stack lets Flotilla pass only its own node role to EC2 (as Karpenter's policy does).
      throw new NodeRoleNotAllowedError(
        `Flotilla may not pass spec.role "${role}" to EC2 (iam:PassRole was denied): name the node role of Flotilla's stack (its NodeRoleName output), or allow the provisioner's role iam:PassRole on "${role}"`,
        { cause: error },
      );
    }
    throw toCloudApiError('iam:AddRoleToInstanceProfile', error, '');
  }
  return name;
}

/**
 * Deletes the instance profile Flotilla manages for `nodeClassName` (first taking its role out, as
 * IAM requires): the one it adopted as `current`, else the managed name. A profile already gone
 * counts as deleted; one without this cluster's ownership tag is left alone.
 * @throws CloudApiError when IAM refuses or fails.
 */
export async function deleteInstanceProfile(
  options: InstanceProfileOptions,
  nodeClassName: string,
  current?: string,
): Promise<void> {
  const { iam } = options;
  const adopted = await adoptable(options, nodeClassName, current);
  const name =
    adopted?.InstanceProfileName ??
    managedInstanceProfileName(options.clusterName, options.region, nodeClassName);
  const profile = adopted ?? (await getProfile(iam, name));
  if (profile === undefined) return;
  const owned = (profile.Tags ?? []).some(
    (t) => t.Key === `kubernetes.io/cluster/${options.clusterName}` && t.Value === 'owned',
  );
  if (profile.Tags !== undefined && !owned) return;
  for (const role of profile.Roles ?? []) {
    await call('iam:RemoveRoleFromInstanceProfile', () =>
      iam.send(
        new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: name, RoleName: role.RoleName }),
      ),
    );
  }
  try {
    await iam.send(new DeleteInstanceProfileCommand({ InstanceProfileName: name }));
  } catch (error) {
    if (error instanceof NoSuchEntityException) return;
    throw toCloudApiError('iam:DeleteInstanceProfile', error, '');
  }
}

async function getProfile(iam: IAMClient, name: string): Promise<InstanceProfile | undefined> {
  try {
    const result = await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name }));
    return result.InstanceProfile;
  } catch (error) {
    if (error instanceof NoSuchEntityException) return undefined;
    throw toCloudApiError('iam:GetInstanceProfile', error, '');
  }
}
