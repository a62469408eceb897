// The user data that makes a node join the cluster, for each AMI family (the families' own
// renderings are in ./user-data/), and the check that an EC2NodeClass's user data renders.
import { ValidationError } from '../core/index.ts';
import type { AmiFamily } from '../ports/cloud.ts';
import { renderAl2, renderAl2023 } from './user-data/amazon-linux.ts';
import { renderBottlerocket } from './user-data/bottlerocket.ts';
import type { UserDataOptions } from './user-data/node-settings.ts';
import { renderWindows } from './user-data/windows.ts';

export { MIME_BOUNDARY } from './user-data/amazon-linux.ts';
export {
  type ClusterInfo,
  clusterIpFamily,
  type IpFamily,
  kubeletFlags,
  kubeletLabels,
  registrationTaints,
  type UserDataOptions,
} from './user-data/node-settings.ts';

/**
 * The user data (plain text, not base64) that makes the node join the cluster with Karpenter's
 * labels and taints: a nodeadm NodeConfig in a MIME multipart document for AL2023, an
 * `/etc/eks/bootstrap.sh` call in a MIME multipart document for AL2, TOML settings for
 * Bottlerocket, a `<powershell>` block calling `Start-EKSBootstrap.ps1` for Windows, and the
 * custom user data exactly as written for Custom. Custom user data goes first (MIME parts, the
 * PowerShell lines) or under Flotilla's keys (TOML), so Flotilla's settings win.
 * @throws ValidationError when the custom user data cannot be merged (bad TOML or MIME, a
 *   PowerShell block that closes early) or is empty for Custom.
 */
export function renderUserData(options: UserDataOptions): string {
  switch (options.family) {
    case 'AL2023':
      return renderAl2023(options);
    case 'AL2':
      return renderAl2(options);
    case 'Bottlerocket':
      return renderBottlerocket(options);
    case 'Windows2019':
    case 'Windows2022':
    case 'Windows2025':
      return renderWindows(options);
    case 'Custom':
      return renderCustom(options);
  }
}

/** Why an EC2NodeClass's user data cannot be rendered for its family, as a condition's reason and message. */
export interface UserDataProblem {
  readonly reason: 'UserDataInvalid';
  readonly message: string;
}

/**
 * Checks, before any launch, that the NodeClass's user data renders for its AMI family: custom user
 * data must merge with Flotilla's (TOML for Bottlerocket, MIME or a script for AL2 and AL2023,
 * PowerShell for Windows); Custom takes its user data as written, or none.
 * @returns undefined when it renders.
 */
export function userDataProblem(
  family: AmiFamily,
  nodeClassName: string,
  customUserData: string | undefined,
): UserDataProblem | undefined {
  try {
    renderUserData({
      family,
      cluster: { name: 'cluster', endpoint: 'https://cluster.invalid', caBundle: '' },
      nodeClassName,
      labels: {},
      taints: [],
      startupTaints: [],
      maxPods: 110,
      ...(customUserData === undefined ? {} : { customUserData }),
    });
    return undefined;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { reason: 'UserDataInvalid', message: error.message };
  }
}

// --------------------------------------------------------------------------------------------
// Custom (the NodeClass's user data as it is)

/**
 * Custom launches with `spec.userData` exactly as written; without any, with none, as Karpenter
 * does (an AMI that bootstraps itself), so the AMI must register the node on its own.
 */
function renderCustom(options: UserDataOptions): string {
  return options.customUserData ?? '';
}
